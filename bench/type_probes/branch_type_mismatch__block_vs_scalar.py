"""v is a block in the then branch and the scalar 0.0 in the else branch.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=branch-type-mismatch; intent=fail; kernel=branch_type_mismatch_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32; constexprs: BLOCK=128
# ruff: noqa: SIM108

import torch
import triton
import triton.language as tl


@triton.jit
def branch_type_mismatch_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if n > 0:
        v = tl.load(x_ptr + offs)
    else:
        v = 0.0
    tl.store(y_ptr + offs, v)


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    branch_type_mismatch_kernel[(1,)](x, y, 64, BLOCK=128)
