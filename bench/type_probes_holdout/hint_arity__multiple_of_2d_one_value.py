"""GEMM pointer setup that hints a 2-D offset tile with tl.multiple_of(..., [16]) (one value for two dimensions)."""
# probe: class=hint-arity; intent=fail; kernel=aligned_gemm_kernel; signature: a_ptr=*fp16, b_ptr=*fp16, c_ptr=*fp32, M=i32, N=i32, K=i32; constexprs: BLOCK_M=64, BLOCK_N=64, BLOCK_K=32

import torch
import triton
import triton.language as tl


@triton.jit
def aligned_gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_offs = tl.multiple_of(rm[:, None] * K + rk[None, :], [16])
    b_offs = rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + a_offs + k)
        b = tl.load(b_ptr + b_offs + k * N)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def launch():
    a = torch.empty((256, 256), dtype=torch.float16, device="cuda")
    b = torch.empty((256, 256), dtype=torch.float16, device="cuda")
    c = torch.empty((256, 256), dtype=torch.float32, device="cuda")
    aligned_gemm_kernel[(4, 4)](a, b, c, 256, 256, 256, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
