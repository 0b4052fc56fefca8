"""Label-smoothed cross entropy where `eps` is `label_smoothing / V` on one branch and the int literal 0 on the other."""
# probe: class=branch-type; intent=fail; kernel=smoothed_ce_kernel; signature: logits_ptr=*fp32, target_ptr=*i64, loss_ptr=*fp32, V=i32, label_smoothing=fp32; constexprs: BLOCK_V=4096

import torch
import triton
import triton.language as tl


@triton.jit
def smoothed_ce_kernel(logits_ptr, target_ptr, loss_ptr, V, label_smoothing, BLOCK_V: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_V)
    mask = cols < V
    logits = tl.load(logits_ptr + row * V + cols, mask=mask, other=float("-inf"))
    target = tl.load(target_ptr + row)
    m = tl.max(logits, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(logits - m), axis=0))
    if label_smoothing > 0:
        eps = label_smoothing / V
    else:
        eps = 0
    x_t = tl.load(logits_ptr + row * V + target)
    smooth = -eps * tl.sum(tl.where(mask, logits, 0.0), axis=0)
    loss = (lse - x_t) * (1.0 - label_smoothing) + smooth + eps * V * lse
    tl.store(loss_ptr + row, loss)


def launch():
    logits = torch.empty((16, 4096), dtype=torch.float32, device="cuda")
    target = torch.empty(16, dtype=torch.int64, device="cuda")
    loss = torch.empty(16, dtype=torch.float32, device="cuda")
    smoothed_ce_kernel[(16,)](logits, target, loss, 4096, 0.1, BLOCK_V=4096)
