"""GEMM with an fp16 accumulator tile that is updated with `acc += tl.dot(a, b)` (fp32 result) inside the K loop."""
# probe: class=loop-carried-type; intent=fail; kernel=gemm_fp16_acc_kernel; signature: a_ptr=*fp16, b_ptr=*fp16, c_ptr=*fp16, M=i32, N=i32, K=i32; constexprs: BLOCK_M=64, BLOCK_N=64, BLOCK_K=32

import torch
import triton
import triton.language as tl


@triton.jit
def gemm_fp16_acc_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rk[None, :] + k) < K, other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k) < K, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch():
    a = torch.empty((512, 512), dtype=torch.float16, device="cuda")
    b = torch.empty((512, 512), dtype=torch.float16, device="cuda")
    c = torch.empty((512, 512), dtype=torch.float16, device="cuda")
    gemm_fp16_acc_kernel[(8, 8)](a, b, c, 512, 512, 512, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
