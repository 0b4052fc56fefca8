"""Row-wise softmax, written correctly: tritonsmith reports nothing here.

One program per row walks the row in blocks of BLOCK_SIZE columns, so any width works and the
tail block is masked. The first pass keeps a running maximum and the sum of exp(x - max),
rescaled whenever the maximum grows (an "online" softmax); the second writes
exp(x - max) / sum. Subtracting the maximum keeps exp from overflowing on large inputs.

`tritonsmith verify examples/softmax.py` compiles `softmax_kernel` and checks `softmax` against
`torch.softmax` with the harness at the bottom (on a CPU under Triton's interpreter, at smaller
sizes and at odd ones). examples/mistakes/softmax.py is the lint demo with mistakes.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, in_row_stride, out_row_stride,
                   BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)  # row * stride can exceed 32 bits
    in_row = in_ptr + row * in_row_stride
    out_row = out_ptr + row * out_row_stride
    offsets = tl.arange(0, BLOCK_SIZE)

    # Pass 1: the row's maximum and sum(exp(x - maximum)), in fp32. Masked lanes read -inf:
    # they never win the maximum and add exp(-inf) = 0 to the sum.
    row_max = tl.full((), float("-inf"), tl.float32)
    row_sum = tl.full((), 0.0, tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        x = tl.load(in_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(row_max, tl.max(x, axis=0))
        row_sum = row_sum * tl.exp(row_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        row_max = new_max

    # Pass 2: normalise and store in the output's dtype.
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        mask = cols < n_cols
        x = tl.load(in_row + cols, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - row_max) / row_sum
        tl.store(out_row + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """softmax(x, dim=-1) of a 2-D tensor."""
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(n_rows,)](out, x, n_cols, x.stride(0), out.stride(0), BLOCK_SIZE=128)
    return out


# Verification harness (docs/harness.md).
SOFTMAX_ROWS = 4096
SOFTMAX_COLS = 4801


def softmax_inputs():
    """One trial's arguments for softmax(), drawn fresh under each trial's seed."""
    return [torch.randn(SOFTMAX_ROWS, SOFTMAX_COLS, device="cuda")]


def softmax_reference(x):
    """What softmax(x) must return."""
    return torch.softmax(x, dim=-1)
