"""An autotuned fp32 matmul, written correctly: tritonsmith reports nothing here.

Each program computes one BLOCK_M x BLOCK_N tile of C = A @ B, walking K in steps of BLOCK_K.
Every load is masked, so M, N and K need not be multiples of the block sizes: rows and columns
past the edge load 0 (adding nothing to the dot product) and are not stored. The autotuner
picks one of three Configs per (M, N, K); each fits the shared memory of an A100 (sm_80) and
an H100 (sm_90) at its num_stages.

`tritonsmith verify examples/matmul.py` compiles `matmul_kernel` for each Config and checks
`matmul` against `a @ b` with the harness at the bottom.
"""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 16}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32}, num_warps=8, num_stages=3),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        # On NVIDIA GPUs an fp32 tl.dot runs as TF32 by default (10-bit mantissa), which misses
        # the fp32 tolerance of 1e-4 (docs/harness.md, "Tolerances"); "ieee" keeps full fp32.
        # The interpreter always computes in fp32, so only a GPU would show the difference.
        acc += tl.dot(a, b, input_precision="ieee")
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for 2-D fp32 tensors of any (compatible) shapes and strides."""
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, f"inner dimensions differ: {K} and {K2}"
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))  # noqa: E731
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1))
    return c


# Verification harness (docs/harness.md).
MATMUL_M = 1024
MATMUL_N = 768
MATMUL_K = 512


def matmul_inputs():
    """One trial's arguments for matmul(), drawn fresh under each trial's seed."""
    a = torch.randn(MATMUL_M, MATMUL_K, device="cuda")
    b = torch.randn(MATMUL_K, MATMUL_N, device="cuda")
    return [a, b]


def matmul_reference(a, b):
    """What matmul(a, b) must return."""
    return a @ b
