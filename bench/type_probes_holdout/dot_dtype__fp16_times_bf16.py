"""LoRA-style down-projection: tl.dot of an fp16 activation tile and a bf16 adapter tile."""
# probe: class=dot-dtype; intent=fail; kernel=lora_down_kernel; signature: x_ptr=*fp16, a_ptr=*bf16, out_ptr=*fp32, M=i32, K=i32; constexprs: BLOCK_M=32, BLOCK_K=64, RANK=16

import torch
import triton
import triton.language as tl


@triton.jit
def lora_down_kernel(x_ptr, a_ptr, out_ptr, M, K,
                     BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, RANK: tl.constexpr):
    pid = tl.program_id(0)
    offs_m = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_r = tl.arange(0, RANK)
    row_mask = offs_m < M

    acc = tl.zeros((BLOCK_M, RANK), dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        offs_k = k_start + tl.arange(0, BLOCK_K)
        k_mask = offs_k < K
        x_tile = tl.load(x_ptr + offs_m[:, None] * K + offs_k[None, :],
                         mask=row_mask[:, None] & k_mask[None, :], other=0.0)
        a_tile = tl.load(a_ptr + offs_k[:, None] * RANK + offs_r[None, :],
                         mask=k_mask[:, None], other=0.0)
        acc += tl.dot(x_tile, a_tile)

    tl.store(out_ptr + offs_m[:, None] * RANK + offs_r[None, :], acc, mask=row_mask[:, None])


def launch():
    x = torch.empty((128, 256), dtype=torch.float16, device="cuda")
    a = torch.empty((256, 16), dtype=torch.bfloat16, device="cuda")
    out = torch.empty((128, 16), dtype=torch.float32, device="cuda")
    lora_down_kernel[(4,)](x, a, out, 128, 256, BLOCK_M=32, BLOCK_K=64, RANK=16)
