"""v = n (int32) in one branch and a value cast to int64 in the other.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=branch-type-mismatch; intent=fail; kernel=branch_type_mismatch_kernel; signature: y_ptr=*i64, n=i32; constexprs: -
# ruff: noqa: SIM108

import torch
import triton
import triton.language as tl


@triton.jit
def branch_type_mismatch_kernel(y_ptr, n):
    if n > 0:
        v = n
    else:
        v = tl.program_id(0).to(tl.int64)
    tl.store(y_ptr, v)


def launch():
    y = torch.empty(8192, dtype=torch.int64, device="cuda")
    branch_type_mismatch_kernel[(1,)](y, 64)
