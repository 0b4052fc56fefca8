"""LayerNorm forward over the last dimension, with weight and bias, written correctly:
tritonsmith reports nothing here.

One program per row walks the row in blocks of BLOCK_SIZE columns (any width; the tail block
is masked) in three passes: the mean, the variance as the mean of (x - mean)^2 (more accurate
than E[x^2] - E[x]^2), then y = (x - mean) * rstd * weight + bias. Statistics accumulate in
fp32 whatever the input dtype; y is stored in the output's dtype.

`tritonsmith verify examples/layer_norm.py` compiles `layer_norm_kernel` and checks
`layer_norm` against `torch.nn.functional.layer_norm` with the harness at the bottom.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, weight_ptr, bias_ptr, y_ptr, n_cols, x_row_stride, y_row_stride,
                      eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)  # row * stride can exceed 32 bits
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    offsets = tl.arange(0, BLOCK_SIZE)

    # Pass 1: the mean. Masked lanes load 0 and add nothing.
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols

    # Pass 2: the variance. Masked lanes would add mean^2: zero them explicitly.
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        diff = tl.where(mask, x - mean, 0.0)
        acc += diff * diff
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)

    # Pass 3: normalise, scale and shift.
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(bias_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
               eps: float = 1e-5) -> torch.Tensor:
    """layer_norm(x, (x.shape[-1],), weight, bias, eps) for a tensor of any rank."""
    n_cols = x.shape[-1]
    x2d = x.reshape(-1, n_cols)  # a view when x is contiguous; the kernel takes a row stride
    y = torch.empty_like(x2d)
    layer_norm_kernel[(x2d.shape[0],)](x2d, weight, bias, y, n_cols, x2d.stride(0), y.stride(0),
                                       eps, BLOCK_SIZE=128)
    return y.reshape(x.shape)


# Verification harness (docs/harness.md).
LN_ROWS = 1152
LN_COLS = 1536


def layer_norm_inputs():
    """One trial's arguments for layer_norm(), drawn fresh under each trial's seed."""
    x = torch.randn(LN_ROWS, LN_COLS, device="cuda") * 2.0 + 0.5
    weight = torch.randn(LN_COLS, device="cuda")
    bias = torch.randn(LN_COLS, device="cuda")
    return [x, weight, bias]


def layer_norm_reference(x, weight, bias):
    """What layer_norm(x, weight, bias) must return."""
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps=1e-5)
