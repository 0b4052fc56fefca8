"""Absolute-max quantization scale that clears the sign bit with `x & 0x7FFFFFFF` directly on an fp32 block."""
# probe: class=bitwise-on-float; intent=fail; kernel=absmax_scale_kernel; signature: x_ptr=*fp32, scale_ptr=*fp32, n_cols=i32; constexprs: BLOCK=1024

import torch
import triton
import triton.language as tl


@triton.jit
def absmax_scale_kernel(x_ptr, scale_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    x_abs = x & 0x7FFFFFFF
    amax = tl.max(x_abs, axis=0)
    tl.store(scale_ptr + row, amax / 127.0)


def launch():
    x = torch.empty((256, 1024), dtype=torch.float32, device="cuda")
    scale = torch.empty(256, dtype=torch.float32, device="cuda")
    absmax_scale_kernel[(256,)](x, scale, 1024, BLOCK=1024)
