"""`tritonsmith verify`: compile every kernel for the targets in sandboxed workers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.compiler
ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "tritonsmith", *args], capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def example(tmp_path: Path, name: str) -> str:
    """A copy of an example in a workspace of its own: verify writes .tritonsmith/state.db there."""
    (tmp_path / "pyproject.toml").write_text("")
    copy = tmp_path / Path(name).name
    copy.write_text((ROOT / "examples" / name).read_text())
    return str(copy)


def test_verify_reports_resources_per_config_and_target(tmp_path):
    pytest.importorskip("triton")
    code, out, err = run("verify", example(tmp_path, "vector_add.py"), "--target", "sm_80,sm_90")
    assert code == 0, out + err
    assert "add_kernel: compiled" in out
    assert "sm_80 · launch at line" in out and "sm_90 · launch at line" in out
    assert "regs" in out and "KB smem" in out


def test_verify_fails_with_the_compiler_error_at_the_config(tmp_path):
    pytest.importorskip("triton")
    code, out, _ = run("verify", example(tmp_path, "mistakes/autotuned_matmul.py"), "--format", "json")
    assert code == 1
    (report,) = json.loads(out)
    assert report["kernel"] == "matmul_kernel" and not report["ok"]
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert errors and errors[0]["code"] == "TS901" and errors[0]["line"] == 12


def test_verify_usage_errors():
    code, _, err = run("verify", "does-not-exist.py")
    assert code == 2 and "cannot read" in err


def test_a_constexpr_known_only_at_run_time_is_not_a_failure_and_correctness_still_runs(tmp_path):
    """`BLOCK_SIZE=triton.next_power_of_2(n_cols)` cannot be compiled ahead of time; the kernel is
    checked when it runs, against the harness's reference, and then compiled with the value it
    was launched with there."""
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    source = (ROOT / "examples" / "softmax.py").read_text()
    (tmp_path / "pyproject.toml").write_text("")
    assert "BLOCK_SIZE=128)" in source
    path = tmp_path / "softmax.py"
    path.write_text(source.replace("BLOCK_SIZE=128)", "BLOCK_SIZE=triton.next_power_of_2(n_cols))"))
    code, out, err = run("verify", str(path), "--device", "cpu")
    assert code == 0, out + err
    assert "softmax: verified · interpreter" in out
    assert "softmax_kernel: compiled" in out
    assert "as launched in the check run)" in out  # the Config line names the value's origin
    # Without a GPU the summary ends with the predicted time, at the real sizes (4096 × 4801 here).
    assert "· predicted H100 SXM time " in out and "at sizes as written" in out


def test_verify_device_gpu_without_a_gpu_is_a_usage_error(tmp_path):
    if Path("/dev/nvidiactl").exists():
        pytest.skip("this machine has a GPU")
    code, _, err = run("verify", example(tmp_path, "vector_add.py"), "--device", "gpu")
    assert code == 2 and "no GPU found" in err


def test_a_failed_verification_goes_into_the_failure_log_and_exits_1(tmp_path):
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    from tritonsmith.state import FailureLog

    (tmp_path / "pyproject.toml").write_text("")
    broken = tmp_path / "wrong_result.py"
    broken.write_text((ROOT / "tests" / "evaluator" / "fixtures" / "broken" / "wrong_result.py").read_text())
    code, out, err = run("verify", str(broken), "--device", "cpu")
    assert code == 1, out + err
    log = FailureLog(tmp_path)
    try:
        stages = [row["stage"] for row in log.failures()]
    finally:
        log.close()
    assert "verify:compare" in stages


def test_a_malformed_tolerance_is_a_usage_error(tmp_path):
    code, _, err = run("verify", example(tmp_path, "vector_add.py"), "--tolerance", "float32:1e-3")
    assert code == 2 and "expected DTYPE=NUMBER" in err


ROWSCALE = '''import torch
import triton
import triton.language as tl

ROWS = 6
COLS = 5


@triton.jit
def rowscale_kernel(x_ptr, y_ptr, B, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    block_mask = offs < N
    mask = block_mask & (row < B)
    v = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * N + offs, v * 2, mask=mask)


def rowscale(x):
    y = torch.empty_like(x)
    B, N = x.shape
    rowscale_kernel[(B,)](x, y, B, N, BLOCK=8)
    return y


def rowscale_inputs():
    return [torch.randn(ROWS, COLS, device="cuda")]


def rowscale_reference(x):
    return x * 2
'''


def test_a_mask_the_interpreter_types_int32_verifies_as_on_the_gpu(tmp_path):
    """`block_mask & (row < B)` is `i1` when compiled; Triton's interpreter types it int32 and its
    loads refuse it ("mask has unsupported dtype"). The evaluator hands masks to the
    interpreter as booleans, so the kernel is checked as the GPU would run it."""
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "rowscale.py"
    path.write_text(ROWSCALE)
    code, out, err = run("verify", str(path), "--device", "cpu")
    assert code == 0, out + err
    assert "rowscale: verified · interpreter" in out


INLINE_ASM = ROWSCALE.replace(
    "    tl.store(y_ptr + row * N + offs, v * 2, mask=mask)",
    "    w = tl.inline_asm_elementwise(\"mov.b32 $0, $1;\", \"=r,r\", [v], dtype=tl.float32, is_pure=True, pack=1)\n"
    "    tl.store(y_ptr + row * N + offs, w * 2, mask=mask)")


def test_a_failure_inside_tritons_interpreter_of_a_kernel_that_compiles_is_an_interpreter_limitation(tmp_path):
    """`tl.inline_asm_elementwise` compiles for sm_90 but the interpreter cannot run it."""
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "rowscale.py"
    path.write_text(INLINE_ASM)
    code, out, err = run("verify", str(path), "--device", "cpu")
    assert code == 1, out + err
    assert "rowscale_kernel: compiled\n" in out  # B and N typed by the launch the check recorded
    assert "rowscale: NOT VERIFIED · interpreter · interpreter: interpreter limitation: NotImplementedError: " \
           "inline_asm not supported in interpreter mode (in rowscale_kernel" in out
    assert "rowscale_kernel compiles for sm_90" in out
    assert "tritonsmith-verify-" not in out


SPILLING = '''import torch
import triton
import triton.language as tl

NORM_N = 3000


@triton.autotune(configs=[triton.Config({"BLOCK": 4096}, num_warps=1, maxnreg=32)], key=["n"])
@triton.jit
def rms_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    scale = tl.rsqrt(tl.sum(x * x, axis=0) / n + 1e-6)
    tl.store(out_ptr + offs, x * scale, mask=offs < n)


def rms(x):
    out = torch.empty_like(x)
    rms_kernel[(1,)](x, out, x.numel())
    return out


def rms_inputs():
    return [torch.randn(NORM_N, device="cuda")]


def rms_reference(x):
    return x * torch.rsqrt((x * x).sum() / x.numel() + 1e-6)
'''


def test_a_register_spill_warning_does_not_stop_the_check_against_the_reference(tmp_path):
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "rms.py"
    path.write_text(SPILLING)
    code, out, err = run("verify", str(path), "--device", "cpu")
    assert code == 0, out + err
    assert "rms_kernel: compiled" in out and "register-spills [warning]" in out
    assert "rms: verified · interpreter" in out


INT_DOT_HARNESS = '''import torch
import triton
import triton.language as tl


@triton.jit
def idot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    idx = offs[:, None] * BLOCK + offs[None, :]
    tl.store(c_ptr + idx, tl.dot(tl.load(a_ptr + idx), tl.load(b_ptr + idx)))


def idot(a, b):
    c = torch.empty((16, 16), dtype=torch.int32, device=a.device)
    idot_kernel[(1,)](a, b, c, BLOCK=16)
    return c


def idot_inputs():
    return [torch.randint(0, 9, (16, 16), dtype=torch.int32, device="cuda"),
            torch.randint(0, 9, (16, 16), dtype=torch.int32, device="cuda")]


def idot_reference(a, b):
    return a @ b
'''


def test_a_kernel_that_truly_does_not_compile_says_why_correctness_was_not_checked(tmp_path):
    """int32 inputs (from the harness) make `tl.dot` fail for sm_90, as it would on the GPU; the
    JSON's `verification` says why it is not checked instead of being empty."""
    pytest.importorskip("triton")
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "idot.py"
    path.write_text(INT_DOT_HARNESS)
    code, out, err = run("verify", str(path), "--format", "json")
    assert code == 1, out + err
    report = json.loads(out)
    [kernel] = report["kernels"]
    assert kernel["status"] == "FAILED" and kernel["assumed"] == []
    assert kernel["results"][0]["signature"]["a_ptr"] == "*i32"
    [verdict] = report["verification"]
    assert verdict["stage"] == "compile" and not verdict["ok"]
    assert "correctness not checked: idot_kernel does not compile for sm_90" in verdict["message"]
    assert "int32" in verdict["message"]


def test_assumed_argument_types_are_named_in_text_and_json(tmp_path):
    pytest.importorskip("triton")
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "scale.py"
    path.write_text('''import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def scale(x):
    scale_kernel[(triton.cdiv(x.numel(), 128),)](x, x.numel(), BLOCK=128)
''')
    code, out, err = run("verify", str(path))
    assert code == 0, out + err
    assert "scale_kernel: compiled, assuming x_ptr: *fp32, n: i32" in out
    code, out, err = run("verify", str(path), "--format", "json")
    (kernel,) = json.loads(out)
    assert kernel["assumed"] == ["x_ptr: *fp32", "n: i32"]
    assert kernel["results"][0]["typed_from"] == {"x_ptr": "assumed", "n": "assumed"}
