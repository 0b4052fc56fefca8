"""j = 0 (int32), then j += step where step is an int64 argument, inside a run-time loop.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=loop-type-change; intent=fail; kernel=loop_type_change_kernel; signature: y_ptr=*i64, n=i32, step=i64; constexprs: -

import torch
import triton
import triton.language as tl


@triton.jit
def loop_type_change_kernel(y_ptr, n, step):
    j = 0
    for _ in range(n):
        j += step
    tl.store(y_ptr, j)


def launch():
    y = torch.empty(8192, dtype=torch.int64, device="cuda")
    loop_type_change_kernel[(1,)](y, 64, 1099511627776)
