"""Vectorized elementwise kernel that hints the 1-D offsets with tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)."""
# probe: class=hint-arity; intent=compile; kernel=silu_mul_kernel; signature: gate_ptr=*bf16, up_ptr=*bf16, out_ptr=*bf16, n=i32; constexprs: BLOCK=1024

import torch
import triton
import triton.language as tl


@triton.jit
def silu_mul_kernel(gate_ptr, up_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    mask = offs < n
    g = tl.load(gate_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(up_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    out = g * tl.sigmoid(g) * u
    tl.store(out_ptr + offs, out.to(tl.bfloat16), mask=mask)


def launch():
    gate = torch.empty(1 << 20, dtype=torch.bfloat16, device="cuda")
    up = torch.empty(1 << 20, dtype=torch.bfloat16, device="cuda")
    out = torch.empty(1 << 20, dtype=torch.bfloat16, device="cuda")
    silu_mul_kernel[(1024,)](gate, up, out, 1 << 20, BLOCK=1024)
