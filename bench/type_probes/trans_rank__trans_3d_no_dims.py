"""tl.trans of a 3-D block without dims.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=trans-rank; intent=fail; kernel=trans_rank_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32; constexprs: BLOCK=8

import torch
import triton
import triton.language as tl


@triton.jit
def trans_rank_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r[:, None, None] * BLOCK * BLOCK + r[None, :, None] * BLOCK + r[None, None, :])
    y = tl.trans(x)
    tl.store(y_ptr + r[:, None, None] * BLOCK * BLOCK + r[None, :, None] * BLOCK + r[None, None, :], y)


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    trans_rank_kernel[(1,)](x, y, 64, BLOCK=8)
