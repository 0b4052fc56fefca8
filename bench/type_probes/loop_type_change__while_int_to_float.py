"""i = 0; while i < n: i = i + 1.5 (int32 becomes fp32).

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=loop-type-change; intent=fail; kernel=loop_type_change_kernel; signature: y_ptr=*fp32, n=i32; constexprs: -

import torch
import triton
import triton.language as tl


@triton.jit
def loop_type_change_kernel(y_ptr, n):
    i = 0
    while i < n:
        i = i + 1.5
    tl.store(y_ptr, i)


def launch():
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    loop_type_change_kernel[(1,)](y, 64)
