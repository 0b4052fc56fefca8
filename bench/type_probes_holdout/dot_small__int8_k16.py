"""Int8 quantized GEMM with BLOCK_K=16: enough for fp16 but below the int8 tl.dot minimum."""
# probe: class=dot-small; intent=fail; kernel=int8_gemm_kernel; signature: a_ptr=*i8, b_ptr=*i8, c_ptr=*i32, M=i32, N=i32, K=i32; constexprs: BLOCK_M=64, BLOCK_N=64, BLOCK_K=16

import torch
import triton
import triton.language as tl


@triton.jit
def _load_tile(base, rows, cols, stride, n_rows, n_cols):
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    return tl.load(base + rows[:, None] * stride + cols[None, :], mask=mask, other=0)


@triton.jit
def int8_gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k in range(0, K, BLOCK_K):
        rk = k + tl.arange(0, BLOCK_K)
        a = _load_tile(a_ptr, rm, rk, K, M, K)
        b = _load_tile(b_ptr, rk, rn, N, K, N)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def launch():
    a = torch.empty((256, 512), dtype=torch.int8, device="cuda")
    b = torch.empty((512, 256), dtype=torch.int8, device="cuda")
    c = torch.empty((256, 256), dtype=torch.int32, device="cuda")
    int8_gemm_kernel[(4, 4)](a, b, c, 256, 256, 512, BLOCK_M=64, BLOCK_N=64, BLOCK_K=16)
