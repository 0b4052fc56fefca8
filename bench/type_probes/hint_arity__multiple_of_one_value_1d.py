"""Near miss: tl.multiple_of(offs, 16) on a 1-D block.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=hint-arity; intent=compile; kernel=hint_arity_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def hint_arity_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.multiple_of(tl.arange(0, BLOCK), 16)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(y_ptr + offs, x, mask=mask)


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    hint_arity_kernel[(1,)](x, y, 64, BLOCK=128)
