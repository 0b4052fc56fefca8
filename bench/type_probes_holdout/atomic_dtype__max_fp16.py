"""Per-tensor amax for fp16 FP8-scaling that does tl.atomic_max into an fp16 buffer."""
# probe: class=atomic-dtype; intent=fail; kernel=amax_kernel; signature: x_ptr=*fp16, amax_ptr=*fp16, n=i32; constexprs: BLOCK=2048

import torch
import triton
import triton.language as tl


@triton.jit
def amax_kernel(x_ptr, amax_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    block_amax = tl.max(tl.abs(x), axis=0)
    tl.atomic_max(amax_ptr, block_amax)


def launch():
    x = torch.empty(1 << 20, dtype=torch.float16, device="cuda")
    amax = torch.empty(1, dtype=torch.float16, device="cuda")
    amax_kernel[(512,)](x, amax, 1 << 20, BLOCK=2048)
