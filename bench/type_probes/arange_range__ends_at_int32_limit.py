"""Near miss of past_int32: tl.arange(2**31 - 128, 2**31).

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=arange-range; intent=compile; kernel=arange_range_kernel; signature: y_ptr=*fp32; constexprs: -

import torch
import triton
import triton.language as tl


@triton.jit
def arange_range_kernel(y_ptr):
    offs = tl.arange(2**31 - 128, 2**31)
    tl.store(y_ptr + offs - offs.min(0), offs.to(tl.float32))


def launch():
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    arange_range_kernel[(1,)](y)
