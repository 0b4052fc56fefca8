"""Near miss of plus_float_arg: x_ptr + s + offs where s is an int32 argument.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=pointer-plus-float; intent=compile; kernel=pointer_plus_float_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32, s=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def pointer_plus_float_kernel(x_ptr, y_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + s + offs, mask=mask, other=0)
    tl.store(y_ptr + offs, x, mask=mask)


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    pointer_plus_float_kernel[(1,)](x, y, 64, 64, BLOCK=128)
