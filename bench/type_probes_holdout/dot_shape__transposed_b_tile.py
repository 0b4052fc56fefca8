"""Tiled matmul that loads B as [BLOCK_N, BLOCK_K] and feeds tl.trans(b) to tl.dot (shapes line up)."""
# probe: class=dot-shape; intent=compile; kernel=matmul_kernel; signature: a_ptr=*fp16, b_ptr=*fp16, c_ptr=*fp32, M=i32, N=i32, K=i32, stride_am=i32, stride_ak=i32, stride_bk=i32, stride_bn=i32, stride_cm=i32, stride_cn=i32; constexprs: BLOCK_M=64, BLOCK_N=64, BLOCK_K=32

import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)

    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_n[:, None] * stride_bn + offs_k[None, :] * stride_bk

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_remaining = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_remaining), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_n[:, None] < N) & (offs_k[None, :] < k_remaining), other=0.0)
        acc += tl.dot(a, tl.trans(b))
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc, mask=c_mask)


def launch():
    a = torch.empty((256, 256), dtype=torch.float16, device="cuda")
    b = torch.empty((256, 256), dtype=torch.float16, device="cuda")
    c = torch.empty((256, 256), dtype=torch.float32, device="cuda")
    grid = (triton.cdiv(256, 64) * triton.cdiv(256, 64),)
    matmul_kernel[grid](a, b, c, 256, 256, 256, 256, 1, 256, 1, 256, 1, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
