"""Group-norm statistics: a [BLOCK_C] channel vector reshaped to (NUM_GROUPS, CH_PER_GROUP) with matching element count."""
# probe: class=reshape-numel; intent=compile; kernel=group_norm_stats_kernel; signature: x_ptr=*fp32, mean_ptr=*fp32, rstd_ptr=*fp32, n_channels=i32, eps=fp32; constexprs: BLOCK_C=64, NUM_GROUPS=8, CH_PER_GROUP=8

import torch
import triton
import triton.language as tl


@triton.jit
def group_norm_stats_kernel(x_ptr, mean_ptr, rstd_ptr, n_channels, eps,
                            BLOCK_C: tl.constexpr, NUM_GROUPS: tl.constexpr, CH_PER_GROUP: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    x = tl.load(x_ptr + row * n_channels + cols, mask=cols < n_channels, other=0.0)
    xg = tl.reshape(x, (NUM_GROUPS, CH_PER_GROUP))
    mean = tl.sum(xg, axis=1) / CH_PER_GROUP
    diff = xg - mean[:, None]
    var = tl.sum(diff * diff, axis=1) / CH_PER_GROUP
    rstd = 1.0 / tl.sqrt(var + eps)
    g = tl.arange(0, NUM_GROUPS)
    tl.store(mean_ptr + row * NUM_GROUPS + g, mean)
    tl.store(rstd_ptr + row * NUM_GROUPS + g, rstd)


def launch():
    x = torch.empty((32, 64), dtype=torch.float32, device="cuda")
    mean = torch.empty((32, 8), dtype=torch.float32, device="cuda")
    rstd = torch.empty((32, 8), dtype=torch.float32, device="cuda")
    group_norm_stats_kernel[(32,)](x, mean, rstd, 64, 1e-5, BLOCK_C=64, NUM_GROUPS=8, CH_PER_GROUP=8)
