"""Near miss of then_only: v is assigned in both branches.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=defined-in-one-branch; intent=compile; kernel=defined_in_one_branch_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32; constexprs: BLOCK=128
# ruff: noqa: SIM108

import torch
import triton
import triton.language as tl


@triton.jit
def defined_in_one_branch_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    if n > 16:
        v = x * 2.0
    else:
        v = x
    tl.store(y_ptr + offs, v, mask=mask)


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    defined_in_one_branch_kernel[(1,)](x, y, 64, BLOCK=128)
