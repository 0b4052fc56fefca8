"""Adam-style update that applies tl.sqrt directly to an fp16 second-moment block."""
# probe: class=math-on-int; intent=fail; kernel=adam_step_kernel; signature: p_ptr=*fp16, g_ptr=*fp16, m_ptr=*fp16, v_ptr=*fp16, n=i32, lr=fp32, beta1=fp32, beta2=fp32, eps=fp32; constexprs: BLOCK=1024

import torch
import triton
import triton.language as tl


@triton.jit
def adam_step_kernel(p_ptr, g_ptr, m_ptr, v_ptr, n, lr, beta1, beta2, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    m = tl.load(m_ptr + offs, mask=mask)
    v = tl.load(v_ptr + offs, mask=mask)
    m = (beta1 * m + (1.0 - beta1) * g).to(tl.float16)
    v = (beta2 * v + (1.0 - beta2) * g * g).to(tl.float16)
    denom = tl.sqrt(v) + eps
    p = p - lr * m / denom
    tl.store(p_ptr + offs, p.to(tl.float16), mask=mask)
    tl.store(m_ptr + offs, m, mask=mask)
    tl.store(v_ptr + offs, v, mask=mask)


def launch():
    p = torch.empty(1 << 20, dtype=torch.float16, device="cuda")
    g = torch.empty(1 << 20, dtype=torch.float16, device="cuda")
    m = torch.empty(1 << 20, dtype=torch.float16, device="cuda")
    v = torch.empty(1 << 20, dtype=torch.float16, device="cuda")
    adam_step_kernel[(1024,)](p, g, m, v, 1 << 20, 1e-3, 0.9, 0.999, 1e-8, BLOCK=1024)
