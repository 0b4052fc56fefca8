"""Near miss: bitcast fp32 to uint32.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=bitcast-width; intent=compile; kernel=bitcast_width_kernel; signature: x_ptr=*fp32, y_ptr=*i32, n=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def bitcast_width_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    y = x.to(tl.uint32, bitcast=True)
    tl.store(y_ptr + offs, y, mask=mask)


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.int32, device="cuda")
    bitcast_width_kernel[(1,)](x, y, 64, BLOCK=128)
