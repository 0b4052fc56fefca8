"""Softmax over quantized int32 logits that dequantizes to fp32 before calling tl.exp."""
# probe: class=math-on-int; intent=compile; kernel=int_logit_softmax_kernel; signature: q_ptr=*i32, out_ptr=*fp32, n_cols=i32, scale=fp32; constexprs: BLOCK=256

import torch
import triton
import triton.language as tl


@triton.jit
def int_logit_softmax_kernel(q_ptr, out_ptr, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    q = tl.load(q_ptr + row * n_cols + cols, mask=mask, other=-(2**30))
    q = q - tl.max(q, axis=0)
    num = tl.exp(q.to(tl.float32) * scale)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + cols, num / den, mask=mask)


def launch():
    q = torch.empty((128, 256), dtype=torch.int32, device="cuda")
    out = torch.empty((128, 256), dtype=torch.float32, device="cuda")
    int_logit_softmax_kernel[(128,)](q, out, 256, 0.05, BLOCK=256)
