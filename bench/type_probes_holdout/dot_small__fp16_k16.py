"""Grouped conv-as-GEMM with 16 input channels per group: tl.dot on fp16 tiles with K=16."""
# probe: class=dot-small; intent=compile; kernel=grouped_conv1x1_kernel; signature: x_ptr=*fp16, w_ptr=*fp16, y_ptr=*fp16, n_pixels=i32, out_channels=i32; constexprs: BLOCK_P=64, BLOCK_OC=32, CH_PER_GROUP=16

import torch
import triton
import triton.language as tl


@triton.jit
def grouped_conv1x1_kernel(x_ptr, w_ptr, y_ptr, n_pixels, out_channels,
                           BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr, CH_PER_GROUP: tl.constexpr):
    pid_p = tl.program_id(0)
    group = tl.program_id(1)
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    offs_c = tl.arange(0, CH_PER_GROUP)
    offs_oc = tl.arange(0, BLOCK_OC)
    in_channels = tl.num_programs(1) * CH_PER_GROUP

    x = tl.load(x_ptr + offs_p[:, None] * in_channels + group * CH_PER_GROUP + offs_c[None, :],
                mask=offs_p[:, None] < n_pixels, other=0.0)
    w = tl.load(w_ptr + group * CH_PER_GROUP * BLOCK_OC + offs_c[:, None] * BLOCK_OC + offs_oc[None, :])
    y = tl.dot(x, w, out_dtype=tl.float16)
    tl.store(y_ptr + offs_p[:, None] * out_channels + group * BLOCK_OC + offs_oc[None, :], y,
             mask=offs_p[:, None] < n_pixels)


def launch():
    x = torch.empty((1024, 64), dtype=torch.float16, device="cuda")
    w = torch.empty((4, 16, 32), dtype=torch.float16, device="cuda")
    y = torch.empty((1024, 128), dtype=torch.float16, device="cuda")
    grouped_conv1x1_kernel[(16, 4)](x, w, y, 1024, 128, BLOCK_P=64, BLOCK_OC=32, CH_PER_GROUP=16)
