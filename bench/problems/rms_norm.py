"""RMS normalisation over the last dimension with a learned weight (as in LLaMA-style models).

Starting point: one program per row making two passes over it, 16 columns at a time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    """y = x / sqrt(mean(x^2, dim=-1) + eps) * weight."""

    def __init__(self, features, eps):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(features))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


batch_size = 128
features = 4096
eps = 1e-6


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, eps]


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, out_ptr, n_cols, row_stride, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = x_ptr + row * row_stride
    out_row = out_ptr + row * row_stride
    offsets = tl.arange(0, BLOCK_SIZE)
    squares = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        squares += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        tl.store(out_row + cols, x * rstd * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features, eps):
        super().__init__()
        # Initialised as the reference is: both are built under the same seed, nothing is copied.
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(features))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        rms_norm_kernel[(rows,)](x, self.weight, out, cols, x.stride(0), self.eps, BLOCK_SIZE=16)
        return out
