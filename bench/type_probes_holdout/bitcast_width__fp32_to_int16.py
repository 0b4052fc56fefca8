"""Sign-bit extraction for a sign-SGD update that bitcasts fp32 gradients to int16 with .to(bitcast=True)."""
# probe: class=bitcast-width; intent=fail; kernel=sign_sgd_kernel; signature: p_ptr=*fp32, g_ptr=*fp32, n_elements=i32, lr=fp32; constexprs: BLOCK_SIZE=1024

import torch
import triton
import triton.language as tl


@triton.jit
def sign_sgd_kernel(p_ptr, g_ptr, n_elements, lr, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    p = tl.load(p_ptr + offsets, mask=mask)
    g = tl.load(g_ptr + offsets, mask=mask)
    bits = g.to(tl.int16, bitcast=True)
    negative = bits < 0
    step = tl.where(negative, -lr, lr)
    tl.store(p_ptr + offsets, p - step, mask=mask)


def launch():
    p = torch.empty(1 << 20, dtype=torch.float32, device="cuda")
    g = torch.empty(1 << 20, dtype=torch.float32, device="cuda")
    sign_sgd_kernel[(1024,)](p, g, 1 << 20, 1e-3, BLOCK_SIZE=1024)
