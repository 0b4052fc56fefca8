"""Jagged-batch kernel that converts a loaded row offset with Python `int(...)` before using it in pointer arithmetic."""
# probe: class=python-cast; intent=fail; kernel=jagged_scale_kernel; signature: values_ptr=*fp16, offsets_ptr=*i64, scale_ptr=*fp16; constexprs: BLOCK=256

import torch
import triton
import triton.language as tl


@triton.jit
def jagged_scale_kernel(values_ptr, offsets_ptr, scale_ptr, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    start = int(tl.load(offsets_ptr + b))
    end = int(tl.load(offsets_ptr + b + 1))
    s = tl.load(scale_ptr + b)
    for pos in range(start, end, BLOCK):
        offs = pos + tl.arange(0, BLOCK)
        m = offs < end
        v = tl.load(values_ptr + offs, mask=m, other=0.0)
        tl.store(values_ptr + offs, v * s, mask=m)


def launch():
    values = torch.empty(1 << 16, dtype=torch.float16, device="cuda")
    offsets = torch.empty(33, dtype=torch.int64, device="cuda")
    scale = torch.empty(32, dtype=torch.float16, device="cuda")
    jagged_scale_kernel[(32,)](values, offsets, scale, BLOCK=256)
