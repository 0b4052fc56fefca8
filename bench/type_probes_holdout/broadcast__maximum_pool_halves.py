"""1-D max-pool with stride 2: tl.maximum of the even lanes [BLOCK] against the odd lanes loaded with only BLOCK // 2 offsets."""
# probe: class=broadcast; intent=fail; kernel=maxpool1d_kernel; signature: x_ptr=*fp32, y_ptr=*fp32, L_out=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def maxpool1d_kernel(x_ptr, y_ptr, L_out, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    blk = tl.program_id(1)
    o = blk * BLOCK + tl.arange(0, BLOCK)
    o_half = blk * BLOCK + tl.arange(0, BLOCK // 2)
    L_in = 2 * L_out
    base = x_ptr + row * L_in
    even = tl.load(base + 2 * o, mask=o < L_out, other=float("-inf"))
    odd = tl.load(base + 2 * o_half + 1, mask=o_half < L_out, other=float("-inf"))
    pooled = tl.maximum(even, odd)
    tl.store(y_ptr + row * L_out + o, pooled, mask=o < L_out)


def launch():
    x = torch.empty((16, 1024), dtype=torch.float32, device="cuda")
    y = torch.empty((16, 512), dtype=torch.float32, device="cuda")
    maxpool1d_kernel[(16, 4)](x, y, 512, BLOCK=128)
