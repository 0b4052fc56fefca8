"""Scale, per-feature bias, ReLU (KernelBench level-2 style epilogue, without the GEMM).

Starting point: two kernels and a round trip through memory (an affine pass, then a ReLU pass),
16 elements per program. A search can fuse them and widen the blocks.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    """y = relu(x * scale + bias), bias per feature (the last dimension)."""

    def __init__(self, features, scale):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * self.scale + self.bias)


batch_size = 128
features = 4096
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, scale]


@triton.jit
def scale_bias_kernel(x_ptr, bias_ptr, out_ptr, n_elements, features, scale, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    b = tl.load(bias_ptr + offsets % features, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x * scale + b, mask=mask)


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = x.numel()
        tmp = torch.empty_like(x)
        out = torch.empty_like(x)
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
        scale_bias_kernel[grid](x, self.bias, tmp, n, x.shape[-1], self.scale, BLOCK_SIZE=16)
        relu_kernel[grid](tmp, out, n, BLOCK_SIZE=16)
        return out
