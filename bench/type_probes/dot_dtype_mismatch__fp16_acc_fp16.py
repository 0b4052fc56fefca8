"""tl.dot(a, b, acc) with fp16 operands and an fp16 accumulator from tl.zeros(..., tl.float16).

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=dot-dtype-mismatch; intent=compile; kernel=dot_dtype_mismatch_kernel; signature: a_ptr=*fp16, b_ptr=*fp16, c_ptr=*fp32; constexprs: BLOCK_M=32, BLOCK_N=32, BLOCK_K=32

import torch
import triton
import triton.language as tl


@triton.jit
def dot_dtype_mismatch_kernel(a_ptr, b_ptr, c_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    ra = tl.arange(0, BLOCK_M)
    ca = tl.arange(0, BLOCK_K)
    rb = tl.arange(0, BLOCK_K)
    cb = tl.arange(0, BLOCK_N)
    a = tl.load(a_ptr + ra[:, None] * BLOCK_K + ca[None, :])
    b = tl.load(b_ptr + rb[:, None] * BLOCK_N + cb[None, :])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)
    c = tl.dot(a, b, acc).to(tl.float32)
    rc = tl.arange(0, BLOCK_M)
    cc = tl.arange(0, BLOCK_N)
    tl.store(c_ptr + rc[:, None] * BLOCK_N + cc[None, :], c)


def launch():
    a = torch.empty(8192, dtype=torch.float16, device="cuda")
    b = torch.empty(8192, dtype=torch.float16, device="cuda")
    c = torch.empty(8192, dtype=torch.float32, device="cuda")
    dot_dtype_mismatch_kernel[(1,)](a, b, c, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
