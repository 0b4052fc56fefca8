"""Near miss of matrix_plus_col_missing_none: the bias is expanded with bias[:, None].

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=broadcast-mismatch; intent=compile; kernel=broadcast_mismatch_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, z_ptr=*fp32; constexprs: BLOCK_M=64, BLOCK_N=32

import torch
import triton
import triton.language as tl


@triton.jit
def broadcast_mismatch_kernel(x_ptr, y_ptr, z_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + rm[:, None] * BLOCK_N + rn[None, :])
    bias = tl.load(y_ptr + rm)
    tl.store(z_ptr + rm[:, None] * BLOCK_N + rn[None, :], x + bias[:, None])


def launch():
    x = torch.empty(8192, dtype=torch.float32, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    z = torch.empty(8192, dtype=torch.float32, device="cuda")
    broadcast_mismatch_kernel[(1,)](x, y, z, BLOCK_M=64, BLOCK_N=32)
