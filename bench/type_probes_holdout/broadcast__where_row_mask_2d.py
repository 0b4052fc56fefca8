"""Masked fill of padded tokens: tl.where with the token mask expanded to [BLOCK_T, 1] against a [BLOCK_T, BLOCK_D] tile."""
# probe: class=broadcast; intent=compile; kernel=masked_fill_kernel; signature: x_ptr=*fp16, lens_ptr=*i32, out_ptr=*fp16, max_len=i32, dim=i32; constexprs: BLOCK_T=32, BLOCK_D=64

import torch
import triton
import triton.language as tl


@triton.jit
def masked_fill_kernel(x_ptr, lens_ptr, out_ptr, max_len, dim, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(0)
    tb = tl.program_id(1)
    seq_len = tl.load(lens_ptr + b)
    t = tb * BLOCK_T + tl.arange(0, BLOCK_T)
    d = tl.arange(0, BLOCK_D)
    offs = b * max_len * dim + t[:, None] * dim + d[None, :]
    io_mask = (t[:, None] < max_len) & (d[None, :] < dim)
    x = tl.load(x_ptr + offs, mask=io_mask, other=0.0)
    valid = t < seq_len
    y = tl.where(valid[:, None], x, 0.0)
    tl.store(out_ptr + offs, y, mask=io_mask)


def launch():
    x = torch.empty((8, 128, 64), dtype=torch.float16, device="cuda")
    lens = torch.empty(8, dtype=torch.int32, device="cuda")
    out = torch.empty((8, 128, 64), dtype=torch.float16, device="cuda")
    masked_fill_kernel[(8, 4)](x, lens, out, 128, 64, BLOCK_T=32, BLOCK_D=64)
