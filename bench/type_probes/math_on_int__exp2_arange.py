"""tl.exp2 applied directly to tl.arange (int32).

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=math-on-int; intent=fail; kernel=math_on_int_kernel; signature: y_ptr=*fp32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def math_on_int_kernel(y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.exp2(offs))


def launch():
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    math_on_int_kernel[(1,)](y, BLOCK=128)
