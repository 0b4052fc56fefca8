"""Chunked squared-norm reduction whose running total starts as the int literal 0 and accumulates fp32 chunk sums."""
# probe: class=loop-carried-type; intent=fail; kernel=row_sq_norm_kernel; signature: x_ptr=*fp32, out_ptr=*fp32, n_cols=i32; constexprs: BLOCK=1024

import torch
import triton
import triton.language as tl


@triton.jit
def row_sq_norm_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = x_ptr + row * n_cols
    total = 0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=0.0)
        total += tl.sum(x * x, axis=0)
    tl.store(out_ptr + row, tl.sqrt(total))


def launch():
    x = torch.empty((64, 8192), dtype=torch.float32, device="cuda")
    out = torch.empty(64, dtype=torch.float32, device="cuda")
    row_sq_norm_kernel[(64,)](x, out, 8192, BLOCK=1024)
