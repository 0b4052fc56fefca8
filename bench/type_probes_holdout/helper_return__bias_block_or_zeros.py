"""Helper `_load_bias` returns the loaded [BLOCK_N] bias block on one run-time path and a [BLOCK_N] zeros block on the other."""
# probe: class=helper-return; intent=compile; kernel=linear_epilogue_kernel; signature: acc_ptr=*fp32, bias_ptr=*fp32, out_ptr=*fp16, N=i32, has_bias=i32; constexprs: BLOCK_N=256

import torch
import triton
import triton.language as tl


@triton.jit
def _load_bias(bias_ptr, cols, mask, has_bias, BLOCK_N: tl.constexpr):
    if has_bias:
        return tl.load(bias_ptr + cols, mask=mask, other=0.0)
    else:
        return tl.zeros((BLOCK_N,), dtype=tl.float32)


@triton.jit
def linear_epilogue_kernel(acc_ptr, bias_ptr, out_ptr, N, has_bias, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    acc = tl.load(acc_ptr + row * N + cols, mask=mask, other=0.0)
    acc = acc + _load_bias(bias_ptr, cols, mask, has_bias, BLOCK_N)
    tl.store(out_ptr + row * N + cols, acc.to(tl.float16), mask=mask)


def launch():
    acc = torch.empty((64, 256), dtype=torch.float32, device="cuda")
    bias = torch.empty(256, dtype=torch.float32, device="cuda")
    out = torch.empty((64, 256), dtype=torch.float16, device="cuda")
    linear_epilogue_kernel[(64,)](acc, bias, out, 256, 1, BLOCK_N=256)
