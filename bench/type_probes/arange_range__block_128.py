"""Near miss of block_96: BLOCK=128.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=arange-range; intent=compile; kernel=arange_range_kernel; signature: y_ptr=*fp32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def arange_range_kernel(y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs - offs.min(0), offs.to(tl.float32))


def launch():
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    arange_range_kernel[(1,)](y, BLOCK=128)
