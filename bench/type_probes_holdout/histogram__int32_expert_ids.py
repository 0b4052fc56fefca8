"""Expert-load histogram for MoE routing that calls tl.histogram on the int32 expert ids."""
# probe: class=histogram; intent=compile; kernel=expert_load_kernel; signature: ids_ptr=*i32, counts_ptr=*i32, n_tokens=i32; constexprs: BLOCK=1024, NUM_EXPERTS=8

import torch
import triton
import triton.language as tl


@triton.jit
def expert_load_kernel(ids_ptr, counts_ptr, n_tokens, BLOCK: tl.constexpr, NUM_EXPERTS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_tokens
    ids = tl.load(ids_ptr + offs, mask=mask, other=0)
    hist = tl.histogram(ids, NUM_EXPERTS, mask=mask)
    tl.atomic_add(counts_ptr + tl.arange(0, NUM_EXPERTS), hist)


def launch():
    ids = torch.empty(1 << 16, dtype=torch.int32, device="cuda")
    counts = torch.empty(8, dtype=torch.int32, device="cuda")
    expert_load_kernel[(64,)](ids, counts, 1 << 16, BLOCK=1024, NUM_EXPERTS=8)
