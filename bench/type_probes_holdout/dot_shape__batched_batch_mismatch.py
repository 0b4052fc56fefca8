"""Batched 3-D tl.dot where the query tile carries BLOCK_B heads but the key tile is loaded for a single head."""
# probe: class=dot-shape; intent=fail; kernel=bmm_heads_kernel; signature: q_ptr=*fp16, k_ptr=*fp16, s_ptr=*fp32, seq_len=i32; constexprs: BLOCK_B=2, BLOCK_M=32, BLOCK_N=32, HEAD_DIM=64

import torch
import triton
import triton.language as tl


@triton.jit
def bmm_heads_kernel(q_ptr, k_ptr, s_ptr, seq_len,
                     BLOCK_B: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    pid_b = tl.program_id(0)
    offs_b = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)

    head_stride = seq_len * HEAD_DIM
    q_ptrs = (q_ptr + offs_b[:, None, None] * head_stride
              + offs_m[None, :, None] * HEAD_DIM + offs_d[None, None, :])
    q = tl.load(q_ptrs, mask=offs_m[None, :, None] < seq_len, other=0.0)

    # only the first head of the group: batch dim of 1
    k_ptrs = (k_ptr + pid_b * head_stride
              + offs_d[None, :, None] + offs_n[None, None, :] * HEAD_DIM)
    kt = tl.load(k_ptrs, mask=offs_n[None, None, :] < seq_len, other=0.0)

    scores = tl.dot(q, kt)
    s_ptrs = (s_ptr + offs_b[:, None, None] * BLOCK_M * BLOCK_N
              + offs_m[None, :, None] * BLOCK_N + offs_n[None, None, :])
    tl.store(s_ptrs, scores)


def launch():
    q = torch.empty((4, 32, 64), dtype=torch.float16, device="cuda")
    k = torch.empty((4, 32, 64), dtype=torch.float16, device="cuda")
    s = torch.empty((4, 32, 32), dtype=torch.float32, device="cuda")
    bmm_heads_kernel[(2,)](q, k, s, 32, BLOCK_B=2, BLOCK_M=32, BLOCK_N=32, HEAD_DIM=64)
