"""Divide by a constant, then LeakyReLU (KernelBench level-2 style, without the convolution).

Starting point: one kernel, 16 elements per program, the division done as a division.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    """y = leaky_relu(x / divisor, negative_slope)."""

    def __init__(self, divisor, negative_slope):
        super().__init__()
        self.divisor = divisor
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.leaky_relu(x / self.divisor, negative_slope=self.negative_slope)


batch_size = 128
features = 8192
divisor = 2.0
negative_slope = 0.01


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [divisor, negative_slope]


@triton.jit
def divide_leaky_relu_kernel(x_ptr, out_ptr, n_elements, divisor, slope, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = x / divisor
    tl.store(out_ptr + offsets, tl.where(y >= 0, y, y * slope), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, divisor, negative_slope):
        super().__init__()
        self.divisor = divisor
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = x.numel()
        out = torch.empty_like(x)
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
        divide_leaky_relu_kernel[grid](x, out, n, self.divisor, self.negative_slope, BLOCK_SIZE=16)
        return out
