"""Near miss of inner_dims_differ: the same kernel with BLOCK_K == BLOCK_KB == 32, so the inner
dimensions agree.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=dot-shape-mismatch; intent=compile; kernel=dot_shape_mismatch_kernel; signature: a_ptr=*fp16, b_ptr=*fp16, c_ptr=*fp32; constexprs: BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, BLOCK_KB=32

import torch
import triton
import triton.language as tl


@triton.jit
def dot_shape_mismatch_kernel(a_ptr, b_ptr, c_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_KB: tl.constexpr):
    ra = tl.arange(0, BLOCK_M)
    ca = tl.arange(0, BLOCK_K)
    rb = tl.arange(0, BLOCK_KB)
    cb = tl.arange(0, BLOCK_N)
    a = tl.load(a_ptr + ra[:, None] * BLOCK_K + ca[None, :])
    b = tl.load(b_ptr + rb[:, None] * BLOCK_N + cb[None, :])
    c = tl.dot(a, b)
    rc = tl.arange(0, BLOCK_M)
    cc = tl.arange(0, BLOCK_N)
    tl.store(c_ptr + rc[:, None] * BLOCK_N + cc[None, :], c)


def launch():
    a = torch.empty(8192, dtype=torch.float16, device="cuda")
    b = torch.empty(8192, dtype=torch.float16, device="cuda")
    c = torch.empty(8192, dtype=torch.float32, device="cuda")
    dot_shape_mismatch_kernel[(1,)](a, b, c, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, BLOCK_KB=32)
