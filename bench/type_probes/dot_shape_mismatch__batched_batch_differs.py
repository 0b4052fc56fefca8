"""3-D (batched) tl.dot where a has batch 2 and b has batch 4.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=dot-shape-mismatch; intent=fail; kernel=dot_shape_mismatch_kernel; signature: a_ptr=*fp16, b_ptr=*fp16, c_ptr=*fp32; constexprs: BLOCK=16

import torch
import triton
import triton.language as tl


@triton.jit
def dot_shape_mismatch_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r2 = tl.arange(0, 2)
    r4 = tl.arange(0, 4)
    rm = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r2[:, None, None] * BLOCK * BLOCK + rm[None, :, None] * BLOCK + rm[None, None, :])
    b = tl.load(b_ptr + r4[:, None, None] * BLOCK * BLOCK + rm[None, :, None] * BLOCK + rm[None, None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + r2[:, None, None] * BLOCK * BLOCK + rm[None, :, None] * BLOCK + rm[None, None, :], c)


def launch():
    a = torch.empty(8192, dtype=torch.float16, device="cuda")
    b = torch.empty(8192, dtype=torch.float16, device="cuda")
    c = torch.empty(8192, dtype=torch.float32, device="cuda")
    dot_shape_mismatch_kernel[(1,)](a, b, c, BLOCK=16)
