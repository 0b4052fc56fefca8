"""A trivial kernel the candidate worker launches before it counts threads (worker side only:
imports triton at module level, and is imported lazily by `correctness`).

Creating a CUDA context and launching the first Triton kernel start threads of the driver's
own; counted after this warm-up, only the threads a candidate starts remain (exploit 8).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _touch(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)


def warm_up_cuda() -> None:
    """Create the CUDA context, run a torch op and launch one Triton kernel, then wait."""
    import torch

    x = torch.zeros(256, device="cuda")
    _touch[(1,)](x, x.numel(), BLOCK=256)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
