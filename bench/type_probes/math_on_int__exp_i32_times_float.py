"""Near miss of exp_i32: tl.exp(x * 1.0), where the multiplication promotes int32 to fp32.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=math-on-int; intent=compile; kernel=math_on_int_kernel; signature: x_ptr=*i32, y_ptr=*fp32, n=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def math_on_int_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(y_ptr + offs, tl.exp(x * 1.0), mask=mask)


def launch():
    x = torch.empty(8192, dtype=torch.int32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    math_on_int_kernel[(1,)](x, y, 64, BLOCK=128)
