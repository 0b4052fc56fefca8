"""Scale, per-feature bias, exact GELU: one fused kernel, but 16 elements per program.

Starting point: the whole epilogue in one pass, launched with a block far too small for the
problem. A search can widen the block and tune the launch.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    """y = gelu(x * scale + bias), the exact (erf) GELU, bias per feature."""

    def __init__(self, features, scale):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x * self.scale + self.bias)


batch_size = 128
features = 4096
scale = 2.0


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, scale]


@triton.jit
def scale_bias_gelu_kernel(x_ptr, bias_ptr, out_ptr, n_elements, features, scale, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    b = tl.load(bias_ptr + offsets % features, mask=mask, other=0.0)
    y = x * scale + b
    y = 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))
    tl.store(out_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = x.numel()
        out = torch.empty_like(x)
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
        scale_bias_gelu_kernel[grid](x, self.bias, out, n, x.shape[-1], self.scale, BLOCK_SIZE=16)
        return out
