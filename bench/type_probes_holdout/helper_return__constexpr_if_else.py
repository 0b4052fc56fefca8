"""Helper with `if UPCAST: return fp32 tuple` / `else: return fp16 tuple` on a constexpr flag, so only one return is generated."""
# probe: class=helper-return; intent=compile; kernel=masked_mean_kernel; signature: x_ptr=*fp16, out_ptr=*fp32, n_cols=i32; constexprs: BLOCK=512, UPCAST=1

import torch
import triton
import triton.language as tl


@triton.jit
def _load_row(x_ptr, row, n_cols, UPCAST: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    count = tl.sum(mask.to(tl.int32), axis=0)
    if UPCAST:
        return x.to(tl.float32), count
    else:
        return x, count


@triton.jit
def masked_mean_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr, UPCAST: tl.constexpr):
    row = tl.program_id(0)
    vals, count = _load_row(x_ptr, row, n_cols, UPCAST, BLOCK)
    mean = tl.sum(vals.to(tl.float32), axis=0) / count
    tl.store(out_ptr + row, mean)


def launch():
    x = torch.empty((128, 512), dtype=torch.float16, device="cuda")
    out = torch.empty(128, dtype=torch.float32, device="cuda")
    masked_mean_kernel[(128,)](x, out, 512, BLOCK=512, UPCAST=1)
