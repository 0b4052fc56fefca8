"""Near miss: tl.max_contiguous(offs, [1, 32]) on a 2-D block.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=hint-arity; intent=compile; kernel=hint_arity_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32; constexprs: BLOCK=32

import torch
import triton
import triton.language as tl


@triton.jit
def hint_arity_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    offs = tl.max_contiguous(r[:, None] * BLOCK + r[None, :], [1, 32])
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x)


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    hint_arity_kernel[(1,)](x, y, 64, BLOCK=32)
