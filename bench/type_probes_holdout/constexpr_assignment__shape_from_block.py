"""Top-k style helper that reads `n = scores.shape[0]` into an unannotated local and allocates tl.full((n,), ...) with it."""
# probe: class=constexpr-assignment; intent=fail; kernel=threshold_kernel; signature: s_ptr=*fp32, out_ptr=*fp32, n_cols=i32, thresh=fp32; constexprs: BLOCK=256

import torch
import triton
import triton.language as tl


@triton.jit
def _apply_threshold(scores, thresh):
    n = scores.shape[0]
    floor = tl.full((n,), float("-inf"), dtype=scores.dtype)
    return tl.where(scores >= thresh, scores, floor)


@triton.jit
def threshold_kernel(s_ptr, out_ptr, n_cols, thresh, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    scores = tl.load(s_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    tl.store(out_ptr + row * n_cols + cols, _apply_threshold(scores, thresh), mask=mask)


def launch():
    s = torch.empty((64, 256), dtype=torch.float32, device="cuda")
    out = torch.empty((64, 256), dtype=torch.float32, device="cuda")
    threshold_kernel[(64,)](s, out, 256, 0.5, BLOCK=256)
