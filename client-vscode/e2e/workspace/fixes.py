"""Two quick fixes that must write code Triton compiles (issue 34): TS109 on a Python number,
and TS101 at a literal block size in the launch."""

import torch
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=float("-inf"))
    lowest = tl.float32(-float("inf"))
    tl.atomic_max(out_ptr, tl.maximum(tl.max(x, axis=0), lowest))


def row_max(x: torch.Tensor) -> torch.Tensor:
    out = torch.full((1,), float("-inf"), device=x.device)
    n = x.numel()
    row_max_kernel[(triton.cdiv(n, 1000),)](x, out, n, BLOCK=1000)
    return out
