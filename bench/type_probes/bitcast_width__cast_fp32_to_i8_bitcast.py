"""tl.cast(x, tl.int8, bitcast=True) on an fp32 block.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=bitcast-width; intent=fail; kernel=bitcast_width_kernel; signature: x_ptr=*fp32, y_ptr=*i8, n=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def bitcast_width_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    y = tl.cast(x, tl.int8, bitcast=True)
    tl.store(y_ptr + offs, y, mask=mask)


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.int8, device="cuda")
    bitcast_width_kernel[(1,)](x, y, 64, BLOCK=128)
