"""Rewrites only a GPU can value (issue 15): GROUP_M swizzling and TF32 inputs for `tl.dot`
kernels, persistent programs for elementwise ones; each with its preconditions, offered only
when a GPU times the candidates, and each compiling for sm_90 and verifying on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest
from rewritten import compile_reports, verify_on_cpu

from tritonsmith.search.proposers.matmul import dot_tf32, group_m
from tritonsmith.search.proposers.offline import GPU_ONLY, transformations

PROBLEMS = Path(__file__).resolve().parents[2] / "bench" / "problems"
LINEAR = (PROBLEMS / "linear_bias_relu.py").read_text()

SWIZZLE = '''    """out = x @ w^T for x (M, K) and w (N, K), as nn.Linear stores it."""
    # GROUP_M rows of tiles at a time: programs running together share A and B panels in L2.
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
'''


def test_group_m_swizzles_the_tiles_over_a_one_dimensional_grid():
    out = group_m(LINEAR, "matmul_kernel")
    assert out is not None
    assert SWIZZLE in out
    assert "BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):" in out
    # The launcher's grid lambda, used by this kernel only, becomes the product of its two sizes.
    assert 'grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731' in out
    assert "BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=8)" in out


def test_a_grid_lambda_another_kernel_also_launches_with_is_left_as_it_is():
    source = LINEAR.replace("bias_relu_kernel[epilogue_grid]", "bias_relu_kernel[grid]")
    out = group_m(source, "matmul_kernel")
    assert out is not None
    assert 'grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))' in out
    assert 'matmul_kernel[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)](' in out


@pytest.mark.parametrize("change, why", [
    (('acc += tl.dot(x, w, input_precision="ieee")', "acc += tl.sum(x[:, :, None] * w[None, :, :], axis=1)"), "no tl.dot"),
    (("    pid_n = tl.program_id(axis=1)\n", "    pid_n = tl.program_id(axis=1)\n    pid = 0\n"), "a name the rewrite needs is taken"),
    (("    pid_n = tl.program_id(axis=1)\n", "    pid_n = tl.program_id(axis=1) + tl.program_id(axis=0) * 0\n"),
     "the program ids are read elsewhere"),
    (('grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))',
      'grid = lambda meta: (triton.cdiv(M, 16), triton.cdiv(N, meta["BLOCK_N"]))'), "the grid is not the tiles' cdiv"),
    (("@triton.jit\ndef matmul_kernel", "@triton.autotune(configs=[triton.Config({})], key=[])\n@triton.jit\ndef matmul_kernel"),
     "an autotuned kernel"),
])
def test_no_group_m_where_a_precondition_fails(change: tuple[str, str], why: str):
    old, new = change
    assert LINEAR.count(old) == 1, why
    assert group_m(LINEAR.replace(old, new), "matmul_kernel") is None, why


def test_dot_tf32_asks_for_tf32_where_the_kernel_asked_for_ieee():
    out = dot_tf32(LINEAR, "matmul_kernel")
    assert out is not None and 'acc += tl.dot(x, w, input_precision="tf32")' in out
    legacy = LINEAR.replace('input_precision="ieee"', "allow_tf32=False")
    assert 'tl.dot(x, w, allow_tf32=True)' in (dot_tf32(legacy, "matmul_kernel") or "")
    assert dot_tf32(LINEAR.replace(', input_precision="ieee"', ""), "matmul_kernel") is None


def test_gpu_only_rewrites_are_not_offered_when_the_interpreter_times_candidates():
    assert transformations("gpu").keys() >= GPU_ONLY
    assert not GPU_ONLY & transformations("interpreter").keys()


@pytest.mark.compiler
@pytest.mark.timeout(600)
def test_the_swizzled_matmul_compiles_for_sm90_and_verifies_on_the_cpu(tmp_path: Path):

    out = group_m(LINEAR, "matmul_kernel")
    assert out is not None
    reports = compile_reports(out, "linear_bias_relu.py")
    assert reports and all(r.ok for r in reports), [(r.kernel, r.error) for r in reports]
    verify_on_cpu(out, tmp_path / "linear_bias_relu.py")


GLU = (PROBLEMS / "glu.py").read_text()


def test_persistent_programs_loop_over_the_tiles_with_a_grid_of_a_few_programs_per_sm():
    from tritonsmith.search.proposers.persistent import persistent_programs

    out = persistent_programs(GLU, "glu_kernel")
    assert out is not None
    assert ("    num_tiles = tl.cdiv(n_elements, BLOCK_SIZE)\n"
            "    for pid in range(tl.program_id(axis=0), num_tiles, tl.num_programs(axis=0)):\n"
            "        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n") in out
    assert ('grid = lambda meta: (min(triton.cdiv(n, meta["BLOCK_SIZE"]), '
            "4 * torch.cuda.get_device_properties(x.device).multi_processor_count),)") in out
    # Reading the program id beyond the offsets (a per-program value) would change with the loop.
    assert persistent_programs(GLU.replace("    col = offsets % half\n", "    col = offsets % half + pid * 0\n"),
                               "glu_kernel") is None
    assert persistent_programs((PROBLEMS / "softmax.py").read_text(), "softmax_kernel") is None  # a row kernel


@pytest.mark.compiler
@pytest.mark.timeout(600)
def test_the_persistent_kernel_compiles_for_sm90_and_verifies_on_the_cpu(tmp_path: Path):
    from tritonsmith.search.proposers.persistent import persistent_programs

    out = persistent_programs(GLU, "glu_kernel")
    assert out is not None
    reports = compile_reports(out, "glu.py")
    assert reports and all(r.ok for r in reports), [(r.kernel, r.error) for r in reports]
    verify_on_cpu(out, tmp_path / "glu.py")
