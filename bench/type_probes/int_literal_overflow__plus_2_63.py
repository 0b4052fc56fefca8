"""x + 2**63 (fits uint64, not int64).

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=int-literal-overflow; intent=compile; kernel=int_literal_overflow_kernel; signature: x_ptr=*i32, y_ptr=*i64, n=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def int_literal_overflow_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(y_ptr + offs, x + 2**63, mask=mask)


def launch():
    x = torch.empty(8192, dtype=torch.int32, device="cuda")
    y = torch.empty(8192, dtype=torch.int64, device="cuda")
    int_literal_overflow_kernel[(1,)](x, y, 64, BLOCK=128)
