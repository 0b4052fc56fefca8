"""Jobs and results survive the wire, and failures map to the errors users see."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tritonsmith.errors import WorkerCrashed, WorkerOutOfMemory, WorkerTimeout
from tritonsmith.evaluator import FAILURES, Job, Result
from tritonsmith.evaluator.sandbox import worker_environment


def test_job_and_result_round_trip() -> None:
    job = Job("run_python", {"path": "/tmp/k.py", "args": [1, 2.5]}, timeout_s=3, memory_mb=300)
    assert Job.from_json(job.to_json()) == job
    result = Result(ok=False, kind="compile", error="worker killed by SIGSEGV", failure="crashed")
    assert Result.from_json(result.to_json()) == result
    with pytest.raises(ValueError, match="unknown failure"):
        Result.from_json('{"ok": false, "kind": "x", "failure": "melted"}')


@pytest.mark.parametrize(
    ("failure", "error_type"),
    [
        ("crashed", WorkerCrashed),
        ("exited", WorkerCrashed),
        ("output-flood", WorkerCrashed),
        ("timeout", WorkerTimeout),
        ("out-of-memory", WorkerOutOfMemory),
        ("cancelled", None),
        (None, None),
    ],
)
def test_failures_map_to_user_errors(failure: str | None, error_type: type | None) -> None:
    assert failure is None or failure in FAILURES
    result = Result.from_dict({"ok": False, "kind": "compile", "error": "x", "failure": failure})
    error = result.to_error()
    if error_type is None:
        assert error is None
    else:
        assert error is not None and isinstance(error, error_type)
        assert "x" in error.user_message


def test_worker_environment_drops_secrets() -> None:
    base = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "OPENAI_BASE_URL": "https://example.invalid",
        "HF_HOME": "/hf",
        "AWS_REGION": "eu",
        "my_api_key": "k",
        "SESSION_TOKEN": "t",
        "DB_PASSWORD": "p",
        "GOOGLE_APPLICATION_CREDENTIALS": "c",
        "HTTP_AUTHORIZATION": "a",
        "CLIENT_SECRET": "s",
    }
    env = worker_environment(base, triton_cache_dir="/tmp/cache")
    assert {k: env[k] for k in ("PATH", "HOME")} == {"PATH": "/usr/bin", "HOME": "/home/u"}
    assert env["TRITON_CACHE_DIR"] == "/tmp/cache"
    assert not set(base) - {"PATH", "HOME"} & set(env)


def test_server_side_modules_do_not_import_torch_or_triton() -> None:
    code = (
        "import sys, tritonsmith.evaluator, tritonsmith.evaluator.pool\n"
        "import tritonsmith.evaluator.sandbox, tritonsmith.evaluator.protocol\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('torch', 'triton')]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
