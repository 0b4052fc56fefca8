"""Small fp32 projection (xyz + w coordinates, K=4) done with tl.dot on fp32 tiles."""
# probe: class=dot-small; intent=fail; kernel=project_points_kernel; signature: pts_ptr=*fp32, mat_ptr=*fp32, out_ptr=*fp32, n_points=i32; constexprs: BLOCK=128, DIM_IN=4, DIM_OUT=16

import torch
import triton
import triton.language as tl


@triton.jit
def project_points_kernel(pts_ptr, mat_ptr, out_ptr, n_points,
                          BLOCK: tl.constexpr, DIM_IN: tl.constexpr, DIM_OUT: tl.constexpr):
    pid = tl.program_id(axis=0)
    rows = pid * BLOCK + tl.arange(0, BLOCK)
    cin = tl.arange(0, DIM_IN)
    cout = tl.arange(0, DIM_OUT)
    row_ok = rows < n_points
    pts = tl.load(pts_ptr + rows[:, None] * DIM_IN + cin[None, :], mask=row_ok[:, None], other=0.0)
    mat = tl.load(mat_ptr + cin[:, None] * DIM_OUT + cout[None, :])
    proj = tl.dot(pts, mat, input_precision="ieee")
    tl.store(out_ptr + rows[:, None] * DIM_OUT + cout[None, :], proj, mask=row_ok[:, None])


def launch():
    pts = torch.empty((4096, 4), dtype=torch.float32, device="cuda")
    mat = torch.empty((4, 16), dtype=torch.float32, device="cuda")
    out = torch.empty((4096, 16), dtype=torch.float32, device="cuda")
    project_points_kernel[(32,)](pts, mat, out, 4096, BLOCK=128, DIM_IN=4, DIM_OUT=16)
