"""Bias-gradient kernel that transposes the 2-D partial-sum tile with tl.trans and reduces over axis 1."""
# probe: class=trans-rank; intent=compile; kernel=bias_grad_kernel; signature: dy_ptr=*fp32, db_ptr=*fp32, M=i32, N=i32; constexprs: BLOCK_M=32, BLOCK_N=64

import torch
import triton
import triton.language as tl


@triton.jit
def bias_grad_kernel(dy_ptr, db_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_n = tl.program_id(0)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    partial = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for m0 in range(0, M, BLOCK_M):
        rows = m0 + tl.arange(0, BLOCK_M)
        dy = tl.load(dy_ptr + rows[:, None] * N + cols[None, :],
                     mask=(rows[:, None] < M) & col_mask[None, :], other=0.0)
        partial += dy
    partial_t = tl.trans(partial)
    db = tl.sum(partial_t, axis=1)
    tl.store(db_ptr + cols, db, mask=col_mask)


def launch():
    dy = torch.empty((512, 256), dtype=torch.float32, device="cuda")
    db = torch.empty(256, dtype=torch.float32, device="cuda")
    bias_grad_kernel[(4,)](dy, db, 512, 256, BLOCK_M=32, BLOCK_N=64)
