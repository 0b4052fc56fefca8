"""acc = tl.zeros(..., tl.float16) updated with tl.dot(a, b) (fp32) in a run-time loop.

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=loop-type-change; intent=fail; kernel=loop_type_change_kernel; signature: a_ptr=*fp16, b_ptr=*fp16, c_ptr=*fp32, n=i32; constexprs: BLOCK=32

import torch
import triton
import triton.language as tl


@triton.jit
def loop_type_change_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float16)
    for k in range(n):
        a = tl.load(a_ptr + k * BLOCK * BLOCK + r[:, None] * BLOCK + r[None, :])
        b = tl.load(b_ptr + k * BLOCK * BLOCK + r[:, None] * BLOCK + r[None, :])
        acc = tl.dot(a, b)
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], acc)


def launch():
    a = torch.empty(8192, dtype=torch.float16, device="cuda")
    b = torch.empty(8192, dtype=torch.float16, device="cuda")
    c = torch.empty(8192, dtype=torch.float32, device="cuda")
    loop_type_change_kernel[(1,)](a, b, c, 64, BLOCK=32)
