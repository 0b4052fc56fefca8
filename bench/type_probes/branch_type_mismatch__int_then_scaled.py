"""v = 0 (int32), then in a run-time if v = n * 2.5 (fp32).

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=branch-type-mismatch; intent=fail; kernel=branch_type_mismatch_kernel; signature: y_ptr=*fp32, n=i32; constexprs: -
# ruff: noqa: SIM108

import torch
import triton
import triton.language as tl


@triton.jit
def branch_type_mismatch_kernel(y_ptr, n):
    v = 0
    if n > 0:
        v = n * 2.5
    tl.store(y_ptr, v)


def launch():
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    branch_type_mismatch_kernel[(1,)](y, 64)
