"""Spin-lock guarded reduction whose per-tile lock array is int32 and acquired with tl.atomic_cas."""
# probe: class=atomic-dtype; intent=compile; kernel=locked_accumulate_kernel; signature: x_ptr=*fp32, out_ptr=*fp32, locks_ptr=*i32, n_cols=i32; constexprs: BLOCK=256

import torch
import triton
import triton.language as tl


@triton.jit
def locked_accumulate_kernel(x_ptr, out_ptr, locks_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    group = row % 8
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    lock = locks_ptr + group
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    acc = tl.load(out_ptr + group * n_cols + cols, mask=mask, other=0.0)
    tl.store(out_ptr + group * n_cols + cols, acc + x, mask=mask)
    tl.atomic_xchg(lock, 0)


def launch():
    x = torch.empty((128, 256), dtype=torch.float32, device="cuda")
    out = torch.empty((8, 256), dtype=torch.float32, device="cuda")
    locks = torch.empty(8, dtype=torch.int32, device="cuda")
    locked_accumulate_kernel[(128,)](x, out, locks, 256, BLOCK=256)
