"""Near miss of fp16_acc_fp32_load: an fp32 accumulator takes fp16 blocks (the sum stays fp32).

The label (compiles or fails, and where) comes from compiling this file: see
docs/benchmarks/type-probes/labels.json.
"""
# probe: class=loop-type-change; intent=compile; kernel=loop_type_change_kernel; signature: x_ptr=*fp16, y_ptr=*fp32, n=i32; constexprs: BLOCK=128

import torch
import triton
import triton.language as tl


@triton.jit
def loop_type_change_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(n):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.store(y_ptr + offs, acc)


def launch():
    x = torch.empty(8192, dtype=torch.float16, device="cuda")
    y = torch.empty(8192, dtype=torch.float32, device="cuda")
    loop_type_change_kernel[(1,)](x, y, 64, BLOCK=128)
