"""Near miss of float_vs_int: the branch is on a constexpr flag, so one return is compiled.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=helper-return-type; intent=compile; kernel=helper_return_type_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32; constexprs: BLOCK=128, FLAG=True

import torch
import triton
import triton.language as tl


@triton.jit
def _scale(n, FLAG: tl.constexpr):
    if FLAG:
        return 1.0
    else:
        return 1


@triton.jit
def helper_return_type_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, FLAG: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(y_ptr + offs, x * _scale(n, FLAG), mask=mask)


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    helper_return_type_kernel[(1,)](x, y, 64, BLOCK=128, FLAG=True)
