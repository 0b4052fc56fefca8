"""Nearest-neighbour upsampling that computes source offsets as `dst * scale` (fp32) and adds them to a pointer."""
# probe: class=pointer-plus-float; intent=fail; kernel=upsample_nearest_kernel; signature: src_ptr=*fp16, dst_ptr=*fp16, in_w=i32, out_w=i32, scale=fp32; constexprs: BLOCK=256

import torch
import triton
import triton.language as tl


@triton.jit
def upsample_nearest_kernel(src_ptr, dst_ptr, in_w, out_w, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    ox = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = ox < out_w
    ix = tl.minimum(ox * scale, in_w - 1)
    v = tl.load(src_ptr + row * in_w + ix, mask=mask, other=0.0)
    tl.store(dst_ptr + row * out_w + ox, v, mask=mask)


def launch():
    src = torch.empty((64, 128), dtype=torch.float16, device="cuda")
    dst = torch.empty((64, 256), dtype=torch.float16, device="cuda")
    upsample_nearest_kernel[(64, 1)](src, dst, 128, 256, 0.5, BLOCK=256)
