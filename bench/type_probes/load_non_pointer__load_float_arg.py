"""tl.load(s) where s is an fp32 scalar argument.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=load-non-pointer; intent=fail; kernel=load_non_pointer_kernel; signature: y_ptr=*fp32, s=fp32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def load_non_pointer_kernel(y_ptr, s, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(s) + offs)


def launch():
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    load_non_pointer_kernel[(1,)](y, 0.5, BLOCK=128)
