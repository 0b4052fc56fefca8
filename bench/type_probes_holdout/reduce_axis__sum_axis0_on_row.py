"""RMSNorm forward that loads one row as a 1-D block and reduces it with tl.sum(..., axis=0)."""
# probe: class=reduce-axis; intent=compile; kernel=rms_norm_fwd_kernel; signature: x_ptr=*bf16, w_ptr=*bf16, y_ptr=*bf16, rstd_ptr=*fp32, n_cols=i32, eps=fp32; constexprs: BLOCK_SIZE=1024

import torch
import triton
import triton.language as tl


@triton.jit
def rms_norm_fwd_kernel(x_ptr, w_ptr, y_ptr, rstd_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    x = tl.load(x_ptr + row_idx * n_cols + col_offsets, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + col_offsets, mask=mask, other=0.0)
    mean_square = tl.sum(x * x, axis=0) / n_cols
    rstd = tl.rsqrt(mean_square + eps)
    tl.store(rstd_ptr + row_idx, rstd)
    y = (x * rstd).to(tl.bfloat16) * w
    tl.store(y_ptr + row_idx * n_cols + col_offsets, y, mask=mask)


def launch():
    x = torch.empty((64, 1024), dtype=torch.bfloat16, device="cuda")
    w = torch.empty(1024, dtype=torch.bfloat16, device="cuda")
    y = torch.empty((64, 1024), dtype=torch.bfloat16, device="cuda")
    rstd = torch.empty(64, dtype=torch.float32, device="cuda")
    rms_norm_fwd_kernel[(64,)](x, w, y, rstd, 1024, 1e-6, BLOCK_SIZE=1024)
