"""Maximum over the last dimension (KernelBench level-1 "max reduction over a dimension").

Starting point: one program per row walking the row 16 columns at a time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    """y = x.max(dim=-1).values."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x, dim=-1).values


batch_size = 128
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


@triton.jit
def row_max_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    offsets = tl.arange(0, BLOCK_SIZE)
    acc = tl.full([BLOCK_SIZE], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        x = tl.load(x_ptr + row * row_stride + cols, mask=cols < n_cols, other=float("-inf"))
        acc = tl.maximum(acc, x)
    tl.store(out_ptr + row, tl.max(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty((rows,), device=x.device, dtype=x.dtype)
        row_max_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK_SIZE=16)
        return out
