"""Token-position kernel computing an inclusive prefix sum of a 1-D attention mask with tl.cumsum(..., axis=1)."""
# probe: class=reduce-axis; intent=fail; kernel=position_ids_kernel; signature: mask_ptr=*i32, pos_ptr=*i64, seq_len=i32; constexprs: BLOCK=512

import torch
import triton
import triton.language as tl


@triton.jit
def position_ids_kernel(mask_ptr, pos_ptr, seq_len, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    in_bounds = offs < seq_len
    m = tl.load(mask_ptr + b * seq_len + offs, mask=in_bounds, other=0)
    pos = tl.cumsum(m, axis=1) - 1
    pos = tl.where(m > 0, pos, 1)
    tl.store(pos_ptr + b * seq_len + offs, pos.to(tl.int64), mask=in_bounds)


def launch():
    mask = torch.empty((4, 512), dtype=torch.int32, device="cuda")
    pos = torch.empty((4, 512), dtype=torch.int64, device="cuda")
    position_ids_kernel[(4,)](mask, pos, 512, BLOCK=512)
