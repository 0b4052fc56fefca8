"""Near miss of cas_i8: tl.atomic_cas on int32 memory.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=atomic-dtype; intent=compile; kernel=atomic_dtype_kernel; signature: y_ptr=*i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def atomic_dtype_kernel(y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_cas(y_ptr + offs, tl.zeros((BLOCK,), tl.int32), tl.full((BLOCK,), 1, tl.int32))


def launch():
    y = torch.empty(8192, dtype=torch.int32, device="cuda")
    atomic_dtype_kernel[(1,)](y, BLOCK=128)
