"""Softmax backward that calls .permute(1, 0) on the 1-D row of probabilities."""
# probe: class=trans-rank; intent=fail; kernel=softmax_bwd_kernel; signature: p_ptr=*fp32, dp_ptr=*fp32, ds_ptr=*fp32, n_cols=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_bwd_kernel(p_ptr, dp_ptr, ds_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    p = tl.load(p_ptr + row * n_cols + offs, mask=mask, other=0.0)
    dp = tl.load(dp_ptr + row * n_cols + offs, mask=mask, other=0.0)
    p_col = p.permute(1, 0)
    dot_pd = tl.sum(p_col * dp, axis=0)
    ds = p * (dp - dot_pd)
    tl.store(ds_ptr + row * n_cols + offs, ds, mask=mask)


def launch():
    p = torch.empty((64, 128), dtype=torch.float32, device="cuda")
    dp = torch.empty((64, 128), dtype=torch.float32, device="cuda")
    ds = torch.empty((64, 128), dtype=torch.float32, device="cuda")
    softmax_bwd_kernel[(64,)](p, dp, ds, 128, BLOCK=128)
