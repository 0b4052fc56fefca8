"""tl.load(n) where n is an int32 argument.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=load-non-pointer; intent=fail; kernel=load_non_pointer_kernel; signature: y_ptr=*i32, n=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def load_non_pointer_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(n)
    tl.store(y_ptr + offs, v + offs)


def launch():
    y = torch.empty(8192, dtype=torch.int32, device="cuda")
    load_non_pointer_kernel[(1,)](y, 64, BLOCK=128)
