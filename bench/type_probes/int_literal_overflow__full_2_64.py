"""tl.full((BLOCK,), 2**64, tl.int64).

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=int-literal-overflow; intent=fail; kernel=int_literal_overflow_kernel; signature: y_ptr=*i64; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def int_literal_overflow_kernel(y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.full((BLOCK,), 2**64, tl.int64))


def launch():
    y = torch.empty(8192, dtype=torch.int64, device="cuda")
    int_literal_overflow_kernel[(1,)](y, BLOCK=128)
