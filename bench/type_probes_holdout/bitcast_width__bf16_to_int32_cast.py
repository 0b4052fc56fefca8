"""bf16 -> fp32 upcast via bit manipulation that uses tl.cast(x, tl.int32, bitcast=True) on a bf16 block."""
# probe: class=bitcast-width; intent=fail; kernel=bf16_upcast_kernel; signature: src_ptr=*bf16, dst_ptr=*fp32, n=i32; constexprs: BLOCK=256

import torch
import triton
import triton.language as tl


@triton.jit
def bf16_upcast_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(src_ptr + offs, mask=m, other=0.0)
    raw = tl.cast(x, tl.int32, bitcast=True)
    widened = raw << 16
    y = tl.cast(widened, tl.float32, bitcast=True)
    tl.store(dst_ptr + offs, y, mask=m)


def launch():
    src = torch.empty(8192, dtype=torch.bfloat16, device="cuda")
    dst = torch.empty(8192, dtype=torch.float32, device="cuda")
    bf16_upcast_kernel[(32,)](src, dst, 8192, BLOCK=256)
