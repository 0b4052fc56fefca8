"""Near miss of permute_10_1d: tl.permute(x, (0,)) of a 1-D block.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=trans-rank; intent=compile; kernel=trans_rank_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def trans_rank_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(y_ptr + offs, tl.permute(x, (0,)))


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    trans_rank_kernel[(1,)](x, y, 64, BLOCK=128)
