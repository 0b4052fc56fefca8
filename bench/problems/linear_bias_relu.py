"""A small linear layer with its bias and ReLU epilogue (KernelBench level-2 "Gemm + ReLU").

Starting point: a 16 x 16 x 16 tiled matmul writing x @ W^T to memory, then a second kernel
adding the bias and applying ReLU, where the epilogue could run on the accumulator.
`ModelNew` keeps an `nn.Linear` under the reference's attribute name (`linear.weight`,
`linear.bias`), so the verifier loads the reference's parameters into it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    """y = relu(x @ W^T + b)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


batch_size = 128
in_features = 1024
out_features = 512


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]


@triton.jit
def matmul_kernel(x_ptr, w_ptr, out_ptr, M, N, K, stride_xm, stride_xk, stride_wn, stride_wk,
                  stride_om, stride_on, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """out = x @ w^T for x (M, K) and w (N, K), as nn.Linear stores it."""
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, K, BLOCK_K):
        ks = start + offs_k
        x = tl.load(x_ptr + offs_m[:, None] * stride_xm + ks[None, :] * stride_xk,
                    mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
        w = tl.load(w_ptr + ks[:, None] * stride_wk + offs_n[None, :] * stride_wn,
                    mask=(ks[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        # fp32 in, fp32 out at 1e-4: "ieee" keeps a GPU from running the dot as TF32.
        acc += tl.dot(x, w, input_precision="ieee")
    out_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, acc, mask=out_mask)


@triton.jit
def bias_relu_kernel(y_ptr, b_ptr, out_ptr, n_elements, n_cols, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    b = tl.load(b_ptr + offsets % n_cols, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.maximum(y + b, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # holds the parameters only

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        w = self.linear.weight
        M, K = x.shape
        N = w.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))  # noqa: E731
        matmul_kernel[grid](x, w, y, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1),
                            y.stride(0), y.stride(1), BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
        out = torch.empty_like(y)
        n = y.numel()
        epilogue_grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
        bias_relu_kernel[epilogue_grid](y, self.linear.bias, out, n, N, BLOCK_SIZE=16)
        return out
