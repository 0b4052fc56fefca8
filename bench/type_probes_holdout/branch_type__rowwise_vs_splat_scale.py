"""Dequantization whose scale is a [BLOCK_M] row vector on both run-time branches (scalar splatted with tl.full)."""
# probe: class=branch-type; intent=compile; kernel=dequant_kernel; signature: q_ptr=*i8, scale_ptr=*fp32, out_ptr=*fp16, M=i32, N=i32, per_row=i32; constexprs: BLOCK_M=32, BLOCK_N=128

import torch
import triton
import triton.language as tl


@triton.jit
def dequant_kernel(q_ptr, scale_ptr, out_ptr, M, N, per_row, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    q = tl.load(q_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0)
    if per_row:
        s = tl.load(scale_ptr + rows, mask=rows < M, other=1.0)
    else:
        s = tl.full((BLOCK_M,), tl.load(scale_ptr), tl.float32)
    out = q.to(tl.float32) * s[:, None]
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], out.to(tl.float16), mask=mask)


def launch():
    q = torch.empty((256, 512), dtype=torch.int8, device="cuda")
    scale = torch.empty(256, dtype=torch.float32, device="cuda")
    out = torch.empty((256, 512), dtype=torch.float16, device="cuda")
    dequant_kernel[(8, 4)](q, scale, out, 256, 512, 1, BLOCK_M=32, BLOCK_N=128)
