"""Near miss of int_vs_float: the condition is a constexpr (BLOCK > 64), so only one branch is
compiled.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=branch-type-mismatch; intent=compile; kernel=branch_type_mismatch_kernel; signature: y_ptr=*fp32; constexprs: BLOCK=128
# ruff: noqa: SIM108

import torch
import triton
import triton.language as tl


@triton.jit
def branch_type_mismatch_kernel(y_ptr, BLOCK: tl.constexpr):
    if BLOCK > 64:
        v = 1
    else:
        v = 1.0
    tl.store(y_ptr, v)


def launch():
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    branch_type_mismatch_kernel[(1,)](y, BLOCK=128)
