"""Near miss of shr_fp32: `x >> 1` where x is an int32 block.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=bitwise-on-float; intent=compile; kernel=bitwise_on_float_kernel; signature: x_ptr=*i32, y_ptr=*i32, n=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def bitwise_on_float_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(y_ptr + offs, x >> 1, mask=mask)


def launch():
    x = torch.empty(8192, dtype=torch.int32, device="cuda")
    y = torch.empty(8192, dtype=torch.int32, device="cuda")
    bitwise_on_float_kernel[(1,)](x, y, 64, BLOCK=128)
