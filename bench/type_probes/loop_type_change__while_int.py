"""Near miss of while_int_to_float: i = i + 2.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=loop-type-change; intent=compile; kernel=loop_type_change_kernel; signature: y_ptr=*i32, n=i32; constexprs: -

import torch
import triton
import triton.language as tl


@triton.jit
def loop_type_change_kernel(y_ptr, n):
    i = 0
    while i < n:
        i = i + 2
    tl.store(y_ptr, i)


def launch():
    y = torch.empty(8192, dtype=torch.int32, device="cuda")
    loop_type_change_kernel[(1,)](y, 64)
