"""Chunked cumulative-sum kernel that stores the loop-carried `running` total (defined before the loop) after the loop."""
# probe: class=defined-in-one-branch; intent=compile; kernel=chunk_cumsum_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, total_ptr=*fp32, n_cols=i32; constexprs: BLOCK=256

import torch
import triton
import triton.language as tl


@triton.jit
def chunk_cumsum_kernel(x_ptr, y_ptr, total_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    running = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
        y = tl.cumsum(x, axis=0) + running
        tl.store(y_ptr + row * n_cols + cols, y, mask=mask)
        carry = tl.sum(x, axis=0)
        running += carry
    tl.store(total_ptr + row, running)


def launch():
    x = torch.empty((32, 4096), dtype=torch.float32, device="cuda")
    y = torch.empty((32, 4096), dtype=torch.float32, device="cuda")
    total = torch.empty(32, dtype=torch.float32, device="cuda")
    chunk_cumsum_kernel[(32,)](x, y, total, 4096, BLOCK=256)
