"""Stateless dropout hash that widens offsets to int64 before multiplying by the Knuth constant 2654435761."""
# probe: class=int-literal; intent=compile; kernel=hash_dropout_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32, seed=i32, p=fp32; constexprs: BLOCK=1024

import torch
import triton
import triton.language as tl


@triton.jit
def hash_dropout_kernel(x_ptr, y_ptr, n, seed, p, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    h = (offs + seed).to(tl.int64) * 2654435761
    h = h ^ (h >> 16)
    u = (h & 0xFFFFFF).to(tl.float32) / 16777216.0
    y = tl.where(u >= p, x / (1.0 - p), 0.0)
    tl.store(y_ptr + offs, y, mask=mask)


def launch():
    x = torch.empty(1 << 20, dtype=torch.float32, device="cuda")
    y = torch.empty(1 << 20, dtype=torch.float32, device="cuda")
    hash_dropout_kernel[(1024,)](x, y, 1 << 20, 1234, 0.1, BLOCK=1024)
