"""Fast inverse square root initial guess computed as `0x5F3759DF - (x >> 1)` on the fp32 block instead of its bits."""
# probe: class=bitwise-on-float; intent=fail; kernel=fast_rsqrt_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32; constexprs: BLOCK=512

import torch
import triton
import triton.language as tl


@triton.jit
def fast_rsqrt_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    guess_bits = 0x5F3759DF - (x >> 1)
    y = guess_bits.to(tl.float32, bitcast=True)
    y = y * (1.5 - 0.5 * x * y * y)
    tl.store(y_ptr + offs, y, mask=m)


def launch():
    x = torch.empty(4096, dtype=torch.float32, device="cuda")
    y = torch.empty(4096, dtype=torch.float32, device="cuda")
    fast_rsqrt_kernel[(8,)](x, y, 4096, BLOCK=512)
