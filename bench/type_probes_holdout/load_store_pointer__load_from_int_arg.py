"""Varlen attention prologue that calls tl.load on `cu_seqlens`, which is passed as an i32 scalar instead of a pointer."""
# probe: class=load-store-pointer; intent=fail; kernel=varlen_copy_kernel; signature: q_ptr=*fp16, out_ptr=*fp16, cu_seqlens=i32, head_dim=i32; constexprs: BLOCK_T=64, BLOCK_D=64

import torch
import triton
import triton.language as tl


@triton.jit
def varlen_copy_kernel(q_ptr, out_ptr, cu_seqlens, head_dim, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    seq = tl.program_id(0)
    start = tl.load(cu_seqlens + seq)
    end = tl.load(cu_seqlens + seq + 1)
    t = start + tl.arange(0, BLOCK_T)
    d = tl.arange(0, BLOCK_D)
    mask = (t[:, None] < end) & (d[None, :] < head_dim)
    q = tl.load(q_ptr + t[:, None] * head_dim + d[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + t[:, None] * head_dim + d[None, :], q, mask=mask)


def launch():
    q = torch.empty((512, 64), dtype=torch.float16, device="cuda")
    out = torch.empty((512, 64), dtype=torch.float16, device="cuda")
    varlen_copy_kernel[(8,)](q, out, 64, 64, BLOCK_T=64, BLOCK_D=64)
