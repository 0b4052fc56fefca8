"""A KernelBench-format problem with a fused Triton solution (level 2 style: Gemm, GELU, scale).

`Model`, `get_inputs` and `get_init_inputs` are the reference, as in KernelBench; `ModelNew` is
the candidate. Both are built under the same seed, as KernelBench builds them, and it creates
its `nn.Linear` as the reference does, so it starts from the same weights (nothing is copied
between them); its forward is one kernel: x @ W^T + b, GELU and the scaling, with the
intermediate never leaving registers.

`tritonsmith verify examples/kernelbench_fused.py` compiles `linear_gelu_scale_kernel` and, with
no GPU, checks `ModelNew` against `Model` under Triton's interpreter at scaled-down sizes (and,
as the comment below allows, at odd sizes too).
"""

# tritonsmith: any-shape

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    """A linear layer, then the exact (erf) GELU, then a scaling."""

    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.nn.functional.gelu(x)
        return x * self.scaling_factor


batch_size = 128
in_features = 1024
out_features = 512
scaling_factor = 2.0


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scaling_factor]


@triton.jit
def linear_gelu_scale_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, stride_xm, stride_xk,
                             stride_wn, stride_wk, stride_om, stride_on, scale,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """out = gelu(x @ w^T + b) * scale for x (M, K), w (N, K) as nn.Linear stores it, b (N,)."""
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn  # w^T, a K x N view
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        x = tl.load(x_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        w = tl.load(w_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        # fp32 in, fp32 out at 1e-4: "ieee" keeps a GPU from running the dot as TF32.
        acc += tl.dot(x, w, input_precision="ieee")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    acc += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)[None, :]
    # The exact GELU, as torch.nn.functional.gelu computes it by default.
    y = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476)) * scale
    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    out_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=out_mask)


def linear_gelu_scale(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                      scale: float) -> torch.Tensor:
    """gelu(x @ weight^T + bias) * scale, as nn.Linear and F.gelu compute it."""
    M, K = x.shape
    N = weight.shape[0]
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))  # noqa: E731
    linear_gelu_scale_kernel[grid](
        x, weight, bias, out, M, N, K, x.stride(0), x.stride(1), weight.stride(0), weight.stride(1),
        out.stride(0), out.stride(1), scale, BLOCK_M=32, BLOCK_N=64, BLOCK_K=32,
    )
    return out


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # holds the parameters only
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear_gelu_scale(x, self.linear.weight, self.linear.bias, self.scaling_factor)
