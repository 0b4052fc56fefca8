"""Row-block softmax over a [BLOCK_M, BLOCK_N] tile whose row max is taken with x.max(axis=-1)."""
# probe: class=reduce-axis; intent=compile; kernel=block_softmax_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, M=i32, N=i32; constexprs: BLOCK_M=8, BLOCK_N=256

import torch
import triton
import triton.language as tl


@triton.jit
def block_softmax_kernel(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=-float("inf"))
    row_max = x.max(axis=-1)
    num = tl.exp(x - row_max[:, None])
    den = num.sum(axis=-1)
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], num / den[:, None], mask=mask)


def launch():
    x = torch.empty((64, 256), dtype=torch.float32, device="cuda")
    y = torch.empty((64, 256), dtype=torch.float32, device="cuda")
    block_softmax_kernel[(8,)](x, y, 64, 256, BLOCK_M=8, BLOCK_N=256)
