"""Softmax over the last dimension (KernelBench level-1 "Softmax").

Starting point: one program per row making three passes over it, 16 columns at a time (the
maximum, the sum of exponentials, then the output), where one pass over a row held in
registers would do.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    """y = softmax(x, dim=-1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


batch_size = 128
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = x_ptr + row * row_stride
    out_row = out_ptr + row * row_stride
    offsets = tl.arange(0, BLOCK_SIZE)
    row_max = tl.full([BLOCK_SIZE], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf"))
        row_max = tl.maximum(row_max, x)
    m = tl.max(row_max, axis=0)
    total = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf"))
        total += tl.exp(x - m)
    s = tl.sum(total, axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf"))
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK_SIZE=16)
        return out
