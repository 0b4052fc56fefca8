"""Layer normalisation over the last dimension, with a learned weight and bias (KernelBench
level-1 "LayerNorm", over one dimension).

Starting point: one program per row making three passes over it, 16 columns at a time (the
mean, the variance, then the output). `ModelNew` builds its `nn.LayerNorm` and initialises it
as the reference does: both are built under the same seed and nothing is copied between them
(as KernelBench judges solutions).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    """y = layer_norm(x) over the last dimension (eps 1e-5, elementwise affine)."""

    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)
        with torch.no_grad():  # not the identity, so the affine part is checked
            self.ln.weight.normal_(1.0, 0.1)
            self.ln.bias.normal_(0.0, 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 128
features = 4096


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, row_stride, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = x_ptr + row * row_stride
    out_row = out_ptr + row * row_stride
    offsets = tl.arange(0, BLOCK_SIZE)
    total = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        total += tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
    mean = tl.sum(total, axis=0) / n_cols
    squares = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        d = tl.where(mask, x - mean, 0.0)
        squares += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0)
        tl.store(out_row + cols, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)  # holds the parameters only
        with torch.no_grad():  # the reference's initialisation, draw for draw
            self.ln.weight.normal_(1.0, 0.1)
            self.ln.bias.normal_(0.0, 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        layer_norm_kernel[(rows,)](x, self.ln.weight, self.ln.bias, out, cols, x.stride(0), self.ln.eps,
                                   BLOCK_SIZE=16)
        return out
