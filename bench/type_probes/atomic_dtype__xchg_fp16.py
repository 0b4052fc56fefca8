"""tl.atomic_xchg on fp16 memory with an fp16 value block.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=atomic-dtype; intent=compile; kernel=atomic_dtype_kernel; signature: v_ptr=*fp16, y_ptr=*fp16, n=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def atomic_dtype_kernel(v_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(v_ptr + offs, mask=mask, other=0)
    tl.atomic_xchg(y_ptr + offs, v, mask=mask)


def launch():
    v = torch.empty(8192, dtype=torch.float16, device="cuda")
    y = torch.empty(8192, dtype=torch.float16, device="cuda")
    atomic_dtype_kernel[(1,)](v, y, 64, BLOCK=128)
