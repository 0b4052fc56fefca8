"""Activation helper `_negative_slope` returns the float literal 0.01 for leaky-ReLU and the int literal 0 for ReLU."""
# probe: class=helper-return; intent=fail; kernel=act_fwd_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32, act_kind=i32; constexprs: BLOCK=1024

import torch
import triton
import triton.language as tl


@triton.jit
def _negative_slope(act_kind):
    if act_kind == 1:
        return 0.01
    return 0


@triton.jit
def act_fwd_kernel(x_ptr, y_ptr, n, act_kind, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    slope = _negative_slope(act_kind)
    y = tl.where(x > 0, x, x * slope)
    tl.store(y_ptr + offs, y, mask=mask)


def launch():
    x = torch.empty(1 << 16, dtype=torch.float32, device="cuda")
    y = torch.empty(1 << 16, dtype=torch.float32, device="cuda")
    act_fwd_kernel[(64,)](x, y, 1 << 16, 1, BLOCK=1024)
