"""A pruned `triton.autotune` space in place of a launch's fixed blocks (issue 15): which
blocks it may tune, what it keys on, and the tiles a matmul gets."""

from __future__ import annotations

from pathlib import Path

import pytest
from rewritten import compile_reports, verify_on_cpu

from tritonsmith.search.proposers.autotune import insert_autotune

PROBLEMS = Path(__file__).resolve().parents[2] / "bench" / "problems"
BIAS_SILU = (PROBLEMS / "bias_silu.py").read_text()
LINEAR = (PROBLEMS / "linear_bias_relu.py").read_text()

ELEMENTWISE_SPACE = '''@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 16}),
        triton.Config({"BLOCK_SIZE": 32}, num_warps=1),
        triton.Config({"BLOCK_SIZE": 64}, num_warps=1),
        triton.Config({"BLOCK_SIZE": 256}, num_warps=1),
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),
    ],
    key=["n_elements", "features"],
)
@triton.jit
def bias_add_kernel('''


def test_the_launchs_blocks_become_a_space_that_starts_with_them_and_keys_on_sizes_not_tensors():
    out = insert_autotune(BIAS_SILU, "bias_add_kernel")
    assert out is not None
    assert ELEMENTWISE_SPACE in out
    assert "bias_add_kernel[grid](x, self.bias, tmp, n, x.shape[-1])\n" in out
    assert "silu_kernel[grid](tmp, out, n, BLOCK_SIZE=16)" in out  # the other kernel is not touched


def test_a_matmul_gets_the_tutorials_tiles_and_keeps_the_block_its_grid_does_not_read():
    out = insert_autotune(LINEAR, "matmul_kernel")
    assert out is not None
    assert 'triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=3),' in out
    assert out.index('triton.Config({"BLOCK_M": 16, "BLOCK_N": 16}),') < out.index('"BLOCK_M": 64, "BLOCK_N": 64')
    assert 'key=["M", "N", "K", "stride_xm"' in out and '"x_ptr"' not in out
    assert "y.stride(0), y.stride(1), BLOCK_K=16)" in out  # BLOCK_K: not in the grid, stays fixed


@pytest.mark.parametrize("source, kernel, why", [
    ((PROBLEMS / "softmax.py").read_text(), "softmax_kernel", "the grid does not follow the block"),
    (BIAS_SILU.replace("bias_add_kernel[grid](x, self.bias, tmp, n, x.shape[-1], BLOCK_SIZE=16)",
                       "bias_add_kernel[grid](x, self.bias, tmp, n, x.shape[-1], BLOCK_SIZE=16)\n"
                       "        bias_add_kernel[grid](x, self.bias, tmp, n, x.shape[-1], BLOCK_SIZE=32)"),
     "bias_add_kernel", "two launches with different blocks"),
    (BIAS_SILU.replace("BLOCK_SIZE=16)\n        silu", "BLOCK_SIZE=2 * 8)\n        silu"), "bias_add_kernel",
     "a block that is not a literal"),
    (BIAS_SILU.replace("@triton.jit\ndef bias_add_kernel",
                       "@triton.autotune(configs=[triton.Config({'BLOCK_SIZE': 16})], key=[])\n@triton.jit\ndef bias_add_kernel"),
     "bias_add_kernel", "already autotuned"),
])
def test_no_autotune_where_a_precondition_fails(source: str, kernel: str, why: str):
    assert insert_autotune(source, kernel) is None, why


@pytest.mark.compiler
@pytest.mark.timeout(900)
def test_every_config_of_the_matmul_space_compiles_for_sm90_and_the_first_verifies_on_the_cpu(tmp_path: Path):

    out = insert_autotune(LINEAR, "matmul_kernel")
    assert out is not None
    reports = compile_reports(out, "linear_bias_relu.py", kernels=["matmul_kernel"])
    [report] = reports
    assert report.ok, report.error
    assert len([r for r in report.results if r.get("ok")]) == 7, report.results
    verify_on_cpu(out, tmp_path / "linear_bias_relu.py")
