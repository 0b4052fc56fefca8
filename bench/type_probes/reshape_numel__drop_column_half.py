"""tl.reshape of a (32, 32) block to (32, 16).

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=reshape-numel; intent=fail; kernel=reshape_numel_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32; constexprs: BLOCK=32

import torch
import triton
import triton.language as tl


@triton.jit
def reshape_numel_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r[:, None] * BLOCK + r[None, :])
    y = tl.reshape(x, (BLOCK, BLOCK // 2))
    tl.store(y_ptr + r[:, None] * BLOCK + tl.arange(0, BLOCK // 2)[None, :], y)


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    reshape_numel_kernel[(1,)](x, y, 64, BLOCK=32)
