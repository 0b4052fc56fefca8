"""Dropout backward where the saved keep-mask is stored as fp16 and inverted with `~keep`."""
# probe: class=bitwise-on-float; intent=fail; kernel=dropout_bwd_kernel; signature: dy_ptr=*fp16, keep_ptr=*fp16, dx_ptr=*fp16, dropped_ptr=*fp16, n=i32, scale=fp32; constexprs: BLOCK=1024

import torch
import triton
import triton.language as tl


@triton.jit
def dropout_bwd_kernel(dy_ptr, keep_ptr, dx_ptr, dropped_ptr, n, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    dy = tl.load(dy_ptr + offs, mask=m, other=0.0)
    keep = tl.load(keep_ptr + offs, mask=m, other=0.0)
    dx = dy * keep * scale
    dropped = ~keep
    tl.store(dx_ptr + offs, dx.to(tl.float16), mask=m)
    tl.store(dropped_ptr + offs, dropped, mask=m)


def launch():
    dy = torch.empty(1 << 16, dtype=torch.float16, device="cuda")
    keep = torch.empty(1 << 16, dtype=torch.float16, device="cuda")
    dx = torch.empty(1 << 16, dtype=torch.float16, device="cuda")
    dropped = torch.empty(1 << 16, dtype=torch.float16, device="cuda")
    dropout_bwd_kernel[(64,)](dy, keep, dx, dropped, 1 << 16, 1.1111, BLOCK=1024)
