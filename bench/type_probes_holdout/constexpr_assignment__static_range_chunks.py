"""Chunked RMSNorm that computes `NUM_CHUNKS = N_COLS // CHUNK` unannotated and unrolls over it with tl.static_range."""
# probe: class=constexpr-assignment; intent=fail; kernel=chunked_rmsnorm_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, eps=fp32; constexprs: N_COLS=4096, CHUNK=1024

import torch
import triton
import triton.language as tl


@triton.jit
def chunked_rmsnorm_kernel(x_ptr, y_ptr, eps, N_COLS: tl.constexpr, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * N_COLS
    NUM_CHUNKS = N_COLS // CHUNK
    sq = tl.zeros((CHUNK,), dtype=tl.float32)
    for c in tl.static_range(NUM_CHUNKS):
        offs = c * CHUNK + tl.arange(0, CHUNK)
        x = tl.load(x_ptr + base + offs)
        sq += x * x
    rstd = tl.rsqrt(tl.sum(sq, axis=0) / N_COLS + eps)
    for c in tl.static_range(NUM_CHUNKS):
        offs = c * CHUNK + tl.arange(0, CHUNK)
        tl.store(y_ptr + base + offs, tl.load(x_ptr + base + offs) * rstd)


def launch():
    x = torch.empty((32, 4096), dtype=torch.float32, device="cuda")
    y = torch.empty((32, 4096), dtype=torch.float32, device="cuda")
    chunked_rmsnorm_kernel[(32,)](x, y, 1e-6, N_COLS=4096, CHUNK=1024)
