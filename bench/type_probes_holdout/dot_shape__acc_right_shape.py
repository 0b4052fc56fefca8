"""Linear layer forward with a [BLOCK_M, BLOCK_N] accumulator passed as tl.dot's acc argument."""
# probe: class=dot-shape; intent=compile; kernel=linear_fwd_kernel; signature: x_ptr=*bf16, w_ptr=*bf16, y_ptr=*fp32, M=i32, N=i32, K=i32; constexprs: BLOCK_M=64, BLOCK_N=32, BLOCK_K=32

import torch
import triton
import triton.language as tl


@triton.jit
def linear_fwd_kernel(x_ptr, w_ptr, y_ptr, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)

    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x = tl.load(x_ptr + rm[:, None] * K + (k0 + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        w = tl.load(w_ptr + (k0 + rk)[:, None] * N + rn[None, :],
                    mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        accumulator = tl.dot(x, w, accumulator)

    tl.store(y_ptr + rm[:, None] * N + rn[None, :], accumulator, mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch():
    x = torch.empty((128, 64), dtype=torch.bfloat16, device="cuda")
    w = torch.empty((64, 96), dtype=torch.bfloat16, device="cuda")
    y = torch.empty((128, 96), dtype=torch.float32, device="cuda")
    linear_fwd_kernel[(2, 3)](x, w, y, 128, 96, 64, BLOCK_M=64, BLOCK_N=32, BLOCK_K=32)
