"""Fused add + LayerNorm where `h` is only assigned when a run-time residual flag is set, then used unconditionally."""
# probe: class=defined-in-one-branch; intent=fail; kernel=add_layernorm_kernel; signature: x_ptr=*fp32, res_ptr=*fp32, w_ptr=*fp32, y_ptr=*fp32, n_cols=i32, has_residual=i32, eps=fp32; constexprs: BLOCK=1024

import torch
import triton
import triton.language as tl


@triton.jit
def add_layernorm_kernel(x_ptr, res_ptr, w_ptr, y_ptr, n_cols, has_residual, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    if has_residual:
        r = tl.load(res_ptr + row * n_cols + cols, mask=mask, other=0.0)
        h = x + r
    mean = tl.sum(h, axis=0) / n_cols
    d = tl.where(mask, h - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, d * rstd * w, mask=mask)


def launch():
    x = torch.empty((64, 1024), dtype=torch.float32, device="cuda")
    res = torch.empty((64, 1024), dtype=torch.float32, device="cuda")
    w = torch.empty(1024, dtype=torch.float32, device="cuda")
    y = torch.empty((64, 1024), dtype=torch.float32, device="cuda")
    add_layernorm_kernel[(64,)](x, res, w, y, 1024, 1, 1e-5, BLOCK=1024)
