"""Near miss: tl.store(y_ptr + offs, 1.0), a scalar through a block of pointers.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=store-block-scalar-ptr; intent=compile; kernel=store_block_scalar_ptr_kernel; signature: y_ptr=*fp32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def store_block_scalar_ptr_kernel(y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, 1.0)


def launch():
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    store_block_scalar_ptr_kernel[(1,)](y, BLOCK=128)
