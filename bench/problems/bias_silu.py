"""Per-feature bias, then SiLU (x * sigmoid(x)).

Starting point: two passes (bias add, then SiLU through a temporary), 16 elements per program.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    """y = silu(x + bias), bias per feature."""

    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(x + self.bias)


batch_size = 256
features = 2048


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]


@triton.jit
def bias_add_kernel(x_ptr, bias_ptr, out_ptr, n_elements, features, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    b = tl.load(bias_ptr + offsets % features, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x + b, mask=mask)


@triton.jit
def silu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x * tl.sigmoid(x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = x.numel()
        tmp = torch.empty_like(x)
        out = torch.empty_like(x)
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
        bias_add_kernel[grid](x, self.bias, tmp, n, x.shape[-1], BLOCK_SIZE=16)
        silu_kernel[grid](tmp, out, n, BLOCK_SIZE=16)
        return out
