"""tl.dot of a 2-D (BLOCK, BLOCK) block with a 1-D (BLOCK,) block.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=dot-rank; intent=fail; kernel=dot_rank_kernel; signature: a_ptr=*fp16, b_ptr=*fp16, c_ptr=*fp32; constexprs: BLOCK=32

import torch
import triton
import triton.language as tl


@triton.jit
def dot_rank_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    b = tl.load(b_ptr + offs)
    c = tl.dot(a, b)
    tl.store(c_ptr + offs, c)


def launch():
    a = torch.empty(8192, dtype=torch.float16, device="cuda")
    b = torch.empty(8192, dtype=torch.float16, device="cuda")
    c = torch.empty(8192, dtype=torch.float32, device="cuda")
    dot_rank_kernel[(1,)](a, b, c, BLOCK=32)
