"""tl.dot of two 1-D fp32 blocks.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=dot-rank; intent=fail; kernel=dot_rank_kernel; signature: a_ptr=*fp32, b_ptr=*fp32, c_ptr=*fp32; constexprs: BLOCK=32

import torch
import triton
import triton.language as tl


@triton.jit
def dot_rank_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(c_ptr, tl.sum(tl.dot(a, b)))


def launch():
    a = torch.empty(8192, dtype=torch.float32, device="cuda")
    b = torch.empty(8192, dtype=torch.float32, device="cuda")
    c = torch.empty(8192, dtype=torch.float32, device="cuda")
    dot_rank_kernel[(1,)](a, b, c, BLOCK=32)
