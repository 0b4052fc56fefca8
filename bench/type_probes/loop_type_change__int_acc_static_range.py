"""Near miss of int_acc_float_load: the loop is tl.static_range(4), unrolled at compile time.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=loop-type-change; intent=compile; kernel=loop_type_change_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32; constexprs: -

import torch
import triton
import triton.language as tl


@triton.jit
def loop_type_change_kernel(x_ptr, y_ptr, n):
    acc = 0
    for i in tl.static_range(4):
        acc += tl.load(x_ptr + i)
    tl.store(y_ptr, acc)


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    loop_type_change_kernel[(1,)](x, y, 64)
