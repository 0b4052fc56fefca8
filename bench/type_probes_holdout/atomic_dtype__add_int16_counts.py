"""Token-frequency counter that bumps an int16 count buffer with tl.atomic_add."""
# probe: class=atomic-dtype; intent=fail; kernel=token_count_kernel; signature: ids_ptr=*i32, counts_ptr=*i16, n_tokens=i32; constexprs: BLOCK=1024

import torch
import triton
import triton.language as tl


@triton.jit
def token_count_kernel(ids_ptr, counts_ptr, n_tokens, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_tokens
    ids = tl.load(ids_ptr + offs, mask=mask, other=0)
    ones = tl.full((BLOCK,), 1, dtype=tl.int16)
    tl.atomic_add(counts_ptr + ids, ones, mask=mask)


def launch():
    ids = torch.empty(1 << 16, dtype=torch.int32, device="cuda")
    counts = torch.empty(32000, dtype=torch.int16, device="cuda")
    token_count_kernel[(64,)](ids, counts, 1 << 16, BLOCK=1024)
