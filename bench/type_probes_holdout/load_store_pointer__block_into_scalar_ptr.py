"""Per-row loss kernel that stores the unreduced [BLOCK] loss vector through the single pointer `loss_ptr + row`."""
# probe: class=load-store-pointer; intent=fail; kernel=mse_row_kernel; signature: pred_ptr=*fp32, target_ptr=*fp32, loss_ptr=*fp32, n_cols=i32; constexprs: BLOCK=512

import torch
import triton
import triton.language as tl


@triton.jit
def mse_row_kernel(pred_ptr, target_ptr, loss_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    pred = tl.load(pred_ptr + row * n_cols + cols, mask=mask, other=0.0)
    target = tl.load(target_ptr + row * n_cols + cols, mask=mask, other=0.0)
    diff = pred - target
    sq = diff * diff / n_cols
    tl.store(loss_ptr + row, sq)


def launch():
    pred = torch.empty((256, 512), dtype=torch.float32, device="cuda")
    target = torch.empty((256, 512), dtype=torch.float32, device="cuda")
    loss = torch.empty(256, dtype=torch.float32, device="cuda")
    mse_row_kernel[(256,)](pred, target, loss, 512, BLOCK=512)
