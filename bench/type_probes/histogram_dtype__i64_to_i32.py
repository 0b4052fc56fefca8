"""Near miss of i64: tl.histogram(x.to(tl.int32), 16) on an int64 block.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=histogram-dtype; intent=compile; kernel=histogram_dtype_kernel; signature: x_ptr=*i64, y_ptr=*i32, n=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def histogram_dtype_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(y_ptr + tl.arange(0, 16), tl.histogram(x.to(tl.int32), 16))


def launch():
    x = torch.empty(8192, dtype=torch.int64, device="cuda")
    y = torch.empty(8192, dtype=torch.int32, device="cuda")
    histogram_dtype_kernel[(1,)](x, y, 64, BLOCK=128)
