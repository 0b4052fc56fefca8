"""Top-2 MoE expert-load histogram that calls .histogram() on the [BLOCK, TOP_K] id tile without flattening it."""
# probe: class=histogram; intent=fail; kernel=topk_load_kernel; signature: ids_ptr=*i32, counts_ptr=*i32, n_tokens=i32; constexprs: BLOCK=512, TOP_K=2, NUM_EXPERTS=16

import torch
import triton
import triton.language as tl


@triton.jit
def topk_load_kernel(ids_ptr, counts_ptr, n_tokens, BLOCK: tl.constexpr, TOP_K: tl.constexpr, NUM_EXPERTS: tl.constexpr):
    tok = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    k = tl.arange(0, TOP_K)
    ids = tl.load(ids_ptr + tok[:, None] * TOP_K + k[None, :], mask=tok[:, None] < n_tokens, other=0)
    hist = ids.histogram(NUM_EXPERTS)
    tl.atomic_add(counts_ptr + tl.arange(0, NUM_EXPERTS), hist)


def launch():
    ids = torch.empty((1 << 14, 2), dtype=torch.int32, device="cuda")
    counts = torch.empty(16, dtype=torch.int32, device="cuda")
    topk_load_kernel[(32,)](ids, counts, 1 << 14, BLOCK=512, TOP_K=2, NUM_EXPERTS=16)
