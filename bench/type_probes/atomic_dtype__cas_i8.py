"""tl.atomic_cas on int8 memory.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=atomic-dtype; intent=fail; kernel=atomic_dtype_kernel; signature: y_ptr=*i8; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def atomic_dtype_kernel(y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_cas(y_ptr + offs, tl.zeros((BLOCK,), tl.int8), tl.full((BLOCK,), 1, tl.int8))


def launch():
    y = torch.empty(8192, dtype=torch.int8, device="cuda")
    atomic_dtype_kernel[(1,)](y, BLOCK=128)
