"""Cross-entropy loss store that reuses the [BLOCK_V] column mask as the mask of a scalar tl.store."""
# probe: class=load-store-pointer; intent=fail; kernel=ce_loss_kernel; signature: logits_ptr=*fp32, target_ptr=*i32, loss_ptr=*fp32, V=i32; constexprs: BLOCK_V=1024

import torch
import triton
import triton.language as tl


@triton.jit
def ce_loss_kernel(logits_ptr, target_ptr, loss_ptr, V, BLOCK_V: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_V)
    col_mask = cols < V
    logits = tl.load(logits_ptr + row * V + cols, mask=col_mask, other=float("-inf"))
    target = tl.load(target_ptr + row)
    m = tl.max(logits, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(logits - m), axis=0))
    x_t = tl.sum(tl.where(cols == target, logits, 0.0), axis=0)
    tl.store(loss_ptr + row, lse - x_t, mask=col_mask)


def launch():
    logits = torch.empty((64, 1024), dtype=torch.float32, device="cuda")
    target = torch.empty(64, dtype=torch.int32, device="cuda")
    loss = torch.empty(64, dtype=torch.float32, device="cuda")
    ce_loss_kernel[(64,)](logits, target, loss, 1024, BLOCK_V=1024)
