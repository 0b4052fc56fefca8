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
    then checked when it runs, against the harness's reference."""
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    source = (ROOT / "examples" / "softmax.py").read_text()
    (tmp_path / "pyproject.toml").write_text("")
    assert "BLOCK_SIZE=128)" in source
    path = tmp_path / "softmax.py"
    path.write_text(source.replace("BLOCK_SIZE=128)", "BLOCK_SIZE=triton.next_power_of_2(n_cols))"))
    code, out, err = run("verify", str(path), "--device", "cpu")
    assert code == 0, out + err
    assert "softmax_kernel: not compiled (constexpr values known only at run time)" in out
    assert "softmax: verified · interpreter" in out


def test_verify_device_gpu_without_a_gpu_is_a_usage_error(tmp_path):
    if Path("/dev/nvidiactl").exists():
        pytest.skip("this machine has a GPU")
    code, _, err = run("verify", example(tmp_path, "vector_add.py"), "--device", "gpu")
    assert code == 2 and "no GPU found" in err


def test_a_failed_verification_goes_into_the_failure_log_and_exits_1(tmp_path):
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    from tritonsmith.adapt import FailureLog

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
