"""Near miss of load_loaded_values: tl.load(x_ptr + idx) with idx a loaded int32 block.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=load-non-pointer; intent=compile; kernel=load_non_pointer_kernel; signature: x_ptr=*fp32, i_ptr=*i32, y_ptr=*fp32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def load_non_pointer_kernel(x_ptr, i_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    idx = tl.load(i_ptr + offs)
    tl.store(y_ptr + offs, tl.load(x_ptr + idx))


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    i = torch.empty(8192, dtype=torch.int32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    load_non_pointer_kernel[(1,)](x, i, y, BLOCK=128)
