"""tl.where with a (BLOCK_M, BLOCK_N) condition and a (BLOCK_N, BLOCK_M) value, 64 and 32.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=where-shape; intent=fail; kernel=where_shape_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32; constexprs: BLOCK_M=64, BLOCK_N=32

import torch
import triton
import triton.language as tl


@triton.jit
def where_shape_kernel(x_ptr, y_ptr, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + rn[:, None] * BLOCK_M + rm[None, :])
    cond = (rm[:, None] < n) & (rn[None, :] < n)
    tl.store(y_ptr + rm[:, None] * BLOCK_N + rn[None, :], tl.where(cond, x, 0.0))


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    where_shape_kernel[(1,)](x, y, 64, BLOCK_M=64, BLOCK_N=32)
