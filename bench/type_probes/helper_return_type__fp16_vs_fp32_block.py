"""A helper returns its fp32 block or the block cast to fp16 depending on a run-time condition.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=helper-return-type; intent=fail; kernel=helper_return_type_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def _maybe_half(x, n):
    if n > 0:
        return x.to(tl.float16)
    else:
        return x


@triton.jit
def helper_return_type_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(y_ptr + offs, _maybe_half(x, n), mask=mask)


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    helper_return_type_kernel[(1,)](x, y, 64, BLOCK=128)
