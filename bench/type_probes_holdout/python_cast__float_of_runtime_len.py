"""Mean-pooling kernel that computes the reciprocal length with Python `float(seq_len)` on a run-time i32 argument."""
# probe: class=python-cast; intent=fail; kernel=mean_pool_kernel; signature: x_ptr=*fp32, out_ptr=*fp32, seq_len=i32, dim=i32; constexprs: BLOCK_T=64, BLOCK_D=128

import torch
import triton
import triton.language as tl


@triton.jit
def mean_pool_kernel(x_ptr, out_ptr, seq_len, dim, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(0)
    d = tl.arange(0, BLOCK_D)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for t0 in range(0, seq_len, BLOCK_T):
        t = t0 + tl.arange(0, BLOCK_T)
        x = tl.load(x_ptr + b * seq_len * dim + t[:, None] * dim + d[None, :],
                    mask=(t[:, None] < seq_len) & (d[None, :] < dim), other=0.0)
        acc += tl.sum(x, axis=0)
    inv_len = 1.0 / float(seq_len)
    tl.store(out_ptr + b * dim + d, acc * inv_len, mask=d < dim)


def launch():
    x = torch.empty((8, 512, 128), dtype=torch.float32, device="cuda")
    out = torch.empty((8, 128), dtype=torch.float32, device="cuda")
    mean_pool_kernel[(8,)](x, out, 512, 128, BLOCK_T=64, BLOCK_D=128)
