"""A KernelBench-format problem and its Triton solution (level 1, ReLU).

`Model`, `get_inputs` and `get_init_inputs` are the reference, as in KernelBench; `ModelNew` is
the candidate. `tritonsmith verify examples/kernelbench_relu.py` compiles `relu_kernel` and, with
no GPU, checks `ModelNew` against `Model` under Triton's interpreter at scaled-down sizes.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    """Simple model that performs a ReLU activation."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4096
dim = 393216


def get_inputs():
    x = torch.randn(batch_size, dim)  # randn, not rand: ReLU of rand is the identity
    return [x]


def get_init_inputs():
    return []


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


def relu(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n_elements = x.numel()
    grid = (triton.cdiv(n_elements, 1024),)
    relu_kernel[grid](x, out, n_elements, BLOCK_SIZE=1024)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu(x)
