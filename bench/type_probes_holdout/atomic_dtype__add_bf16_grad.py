"""Embedding backward that scatters bf16 gradient rows into the weight gradient with tl.atomic_add."""
# probe: class=atomic-dtype; intent=compile; kernel=embedding_bwd_kernel; signature: idx_ptr=*i64, dy_ptr=*bf16, dw_ptr=*bf16, dim=i32; constexprs: BLOCK_D=128

import torch
import triton
import triton.language as tl


@triton.jit
def embedding_bwd_kernel(idx_ptr, dy_ptr, dw_ptr, dim, BLOCK_D: tl.constexpr):
    tok = tl.program_id(0)
    d = tl.arange(0, BLOCK_D)
    mask = d < dim
    row = tl.load(idx_ptr + tok)
    g = tl.load(dy_ptr + tok * dim + d, mask=mask, other=0.0)
    tl.atomic_add(dw_ptr + row * dim + d, g, mask=mask)


def launch():
    idx = torch.empty(512, dtype=torch.int64, device="cuda")
    dy = torch.empty((512, 128), dtype=torch.bfloat16, device="cuda")
    dw = torch.empty((32000, 128), dtype=torch.bfloat16, device="cuda")
    embedding_bwd_kernel[(512,)](idx, dy, dw, 128, BLOCK_D=128)
