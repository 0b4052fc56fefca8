"""Near miss of flatten_half: (16, 32) reshaped to (BLOCK_M * BLOCK_N,).

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=reshape-numel; intent=compile; kernel=reshape_numel_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, n=i32; constexprs: BLOCK_M=16, BLOCK_N=32

import torch
import triton
import triton.language as tl


@triton.jit
def reshape_numel_kernel(x_ptr, y_ptr, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + rm[:, None] * BLOCK_N + rn[None, :])
    y = tl.reshape(x, (BLOCK_M * BLOCK_N,))
    tl.store(y_ptr + tl.arange(0, BLOCK_M * BLOCK_N), y)


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    reshape_numel_kernel[(1,)](x, y, 64, BLOCK_M=16, BLOCK_N=32)
