"""Packing kernel that masks int64 words with a 68-bit literal 0xFFFFFFFFFFFFFFFFF."""
# probe: class=int-literal; intent=fail; kernel=pack_words_kernel; signature: src_ptr=*i64, dst_ptr=*i64, n=i32; constexprs: BLOCK=512

import torch
import triton
import triton.language as tl


@triton.jit
def pack_words_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    w = tl.load(src_ptr + offs, mask=mask, other=0)
    w = w & 0xFFFFFFFFFFFFFFFFF
    tl.store(dst_ptr + offs, w, mask=mask)


def launch():
    src = torch.empty(8192, dtype=torch.int64, device="cuda")
    dst = torch.empty(8192, dtype=torch.int64, device="cuda")
    pack_words_kernel[(16,)](src, dst, 8192, BLOCK=512)
