"""Rotary embedding (NeoX layout) that computes `HALF = HEAD_DIM // 2` without a constexpr annotation and uses it as a tl.arange bound."""
# probe: class=constexpr-assignment; intent=fail; kernel=rope_neox_kernel; signature: q_ptr=*bf16, cos_ptr=*fp32, sin_ptr=*fp32, seq_len=i32; constexprs: HEAD_DIM=128

import torch
import triton
import triton.language as tl


@triton.jit
def rope_neox_kernel(q_ptr, cos_ptr, sin_ptr, seq_len, HEAD_DIM: tl.constexpr):
    tok = tl.program_id(0)
    HALF = HEAD_DIM // 2
    d = tl.arange(0, HALF)
    row = q_ptr + tok * HEAD_DIM
    x1 = tl.load(row + d).to(tl.float32)
    x2 = tl.load(row + HALF + d).to(tl.float32)
    c = tl.load(cos_ptr + tok * HALF + d)
    s = tl.load(sin_ptr + tok * HALF + d)
    tl.store(row + d, (x1 * c - x2 * s).to(tl.bfloat16))
    tl.store(row + HALF + d, (x2 * c + x1 * s).to(tl.bfloat16))


def launch():
    q = torch.empty((256, 128), dtype=torch.bfloat16, device="cuda")
    cos = torch.empty((256, 64), dtype=torch.float32, device="cuda")
    sin = torch.empty((256, 64), dtype=torch.float32, device="cuda")
    rope_neox_kernel[(256,)](q, cos, sin, 256, HEAD_DIM=128)
