"""Global loss reduction that calls tl.atomic_add on `total`, an fp32 scalar argument, instead of a pointer."""
# probe: class=load-store-pointer; intent=fail; kernel=loss_reduce_kernel; signature: loss_ptr=*fp32, total=fp32, n=i32; constexprs: BLOCK=1024

import torch
import triton
import triton.language as tl


@triton.jit
def loss_reduce_kernel(loss_ptr, total, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    partial = tl.sum(tl.load(loss_ptr + offs, mask=offs < n, other=0.0), axis=0)
    tl.atomic_add(total, partial / n)


def launch():
    loss = torch.empty(1 << 16, dtype=torch.float32, device="cuda")
    loss_reduce_kernel[(64,)](loss, 0.0, 1 << 16, BLOCK=1024)
