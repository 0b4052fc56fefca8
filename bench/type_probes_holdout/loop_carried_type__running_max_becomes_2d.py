"""Online-softmax row max in a while loop that forgets to reduce: m_i = tl.maximum(m_i, qk) turns [BLOCK_M] into a tile."""
# probe: class=loop-carried-type; intent=fail; kernel=online_lse_kernel; signature: s_ptr=*fp32, lse_ptr=*fp32, M=i32, N=i32; constexprs: BLOCK_M=64, BLOCK_N=64

import torch
import triton
import triton.language as tl


@triton.jit
def online_lse_kernel(s_ptr, lse_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    start = 0
    while start < N:
        cols = start + tl.arange(0, BLOCK_N)
        qk = tl.load(s_ptr + rows[:, None] * N + cols[None, :],
                     mask=row_ok[:, None] & (cols[None, :] < N), other=float("-inf"))
        m_new = tl.maximum(m_i, qk)
        l_i = l_i * tl.exp(m_i - m_new) + tl.sum(tl.exp(qk - m_new[:, None]), axis=1)
        m_i = m_new
        start += BLOCK_N
    tl.store(lse_ptr + rows, m_i + tl.log(l_i), mask=row_ok)


def launch():
    s = torch.empty((256, 1024), dtype=torch.float32, device="cuda")
    lse = torch.empty(256, dtype=torch.float32, device="cuda")
    online_lse_kernel[(4,)](s, lse, 256, 1024, BLOCK_M=64, BLOCK_N=64)
