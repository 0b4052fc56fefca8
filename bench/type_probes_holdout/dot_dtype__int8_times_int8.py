"""W8A8 GEMM with int8 activations and int8 weights accumulated into an int32 tile."""
# probe: class=dot-dtype; intent=compile; kernel=w8a8_gemm_kernel; signature: a_ptr=*i8, b_ptr=*i8, c_ptr=*i32, M=i32, N=i32, K=i32; constexprs: BLOCK_M=32, BLOCK_N=32, BLOCK_K=64

import torch
import triton
import triton.language as tl


@triton.jit
def w8a8_gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_bn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_bn[None, :]

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N

    tl.store(c_ptr + offs_am[:, None] * N + offs_bn[None, :], acc)


def launch():
    a = torch.empty((64, 128), dtype=torch.int8, device="cuda")
    b = torch.empty((128, 64), dtype=torch.int8, device="cuda")
    c = torch.empty((64, 64), dtype=torch.int32, device="cuda")
    w8a8_gemm_kernel[(2, 2)](a, b, c, 64, 64, 128, BLOCK_M=32, BLOCK_N=32, BLOCK_K=64)
