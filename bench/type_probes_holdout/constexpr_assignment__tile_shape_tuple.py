"""Transpose kernel that builds `TILE = (BLOCK_M, BLOCK_N)` without annotation and passes it as the tl.zeros shape."""
# probe: class=constexpr-assignment; intent=fail; kernel=transpose_kernel; signature: src_ptr=*fp32, dst_ptr=*fp32, M=i32, N=i32; constexprs: BLOCK_M=32, BLOCK_N=32

import torch
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(src_ptr, dst_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    TILE = (BLOCK_M, BLOCK_N)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.zeros(TILE, dtype=tl.float32)
    tile += tl.load(src_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    tl.store(dst_ptr + rn[None, :] * M + rm[:, None], tile, mask=mask)


def launch():
    src = torch.empty((256, 512), dtype=torch.float32, device="cuda")
    dst = torch.empty((512, 256), dtype=torch.float32, device="cuda")
    transpose_kernel[(8, 16)](src, dst, 256, 512, BLOCK_M=32, BLOCK_N=32)
