"""Fused bias + GELU epilogue where the per-column bias is expanded as bias[:, None] against a [BLOCK_M, BLOCK_N] tile."""
# probe: class=broadcast; intent=fail; kernel=bias_gelu_kernel; signature: x_ptr=*fp32, bias_ptr=*fp32, y_ptr=*fp32, M=i32, N=i32; constexprs: BLOCK_M=16, BLOCK_N=64

import torch
import triton
import triton.language as tl


@triton.jit
def _gelu_tanh(x):
    k0 = 0.7978845608028654
    inner = k0 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + (2.0 * tl.sigmoid(2.0 * inner) - 1.0))


@triton.jit
def bias_gelu_kernel(x_ptr, bias_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0)
    h = x + bias[:, None]
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], _gelu_tanh(h), mask=mask)


def launch():
    x = torch.empty((64, 256), dtype=torch.float32, device="cuda")
    bias = torch.empty(256, dtype=torch.float32, device="cuda")
    y = torch.empty((64, 256), dtype=torch.float32, device="cuda")
    bias_gelu_kernel[(4, 4)](x, bias, y, 64, 256, BLOCK_M=16, BLOCK_N=64)
