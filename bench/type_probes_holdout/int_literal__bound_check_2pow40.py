"""Gather kernel that guards int32 indices with a `idx < 2**40` sanity bound."""
# probe: class=int-literal; intent=fail; kernel=gather_rows_kernel; signature: src_ptr=*fp32, idx_ptr=*i32, dst_ptr=*fp32, n_idx=i32, dim=i32; constexprs: BLOCK_I=32, BLOCK_D=64

import torch
import triton
import triton.language as tl


@triton.jit
def gather_rows_kernel(src_ptr, idx_ptr, dst_ptr, n_idx, dim, BLOCK_I: tl.constexpr, BLOCK_D: tl.constexpr):
    i = tl.program_id(0) * BLOCK_I + tl.arange(0, BLOCK_I)
    d = tl.arange(0, BLOCK_D)
    idx = tl.load(idx_ptr + i, mask=i < n_idx, other=0)
    ok = (i < n_idx) & (idx >= 0) & (idx < 2**40)
    rows = tl.load(src_ptr + idx[:, None] * dim + d[None, :], mask=ok[:, None] & (d[None, :] < dim), other=0.0)
    tl.store(dst_ptr + i[:, None] * dim + d[None, :], rows, mask=(i[:, None] < n_idx) & (d[None, :] < dim))


def launch():
    src = torch.empty((4096, 64), dtype=torch.float32, device="cuda")
    idx = torch.empty(1024, dtype=torch.int32, device="cuda")
    dst = torch.empty((1024, 64), dtype=torch.float32, device="cuda")
    gather_rows_kernel[(32,)](src, idx, dst, 1024, 64, BLOCK_I=32, BLOCK_D=64)
