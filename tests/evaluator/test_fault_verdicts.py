"""Fault verdicts in seconds (issue 12, item 3): a hung candidate, one that ignores signals and
one that grows memory get a verdict that names the fault long before the 300 s job backstop;
`--timeout`, `--memory-mb` and `[tool.tritonsmith]` change the limits; cancelling (a newer save)
kills the running worker at once. KernelBench-format candidates under Triton's interpreter, so
no GPU is needed.
"""

from __future__ import annotations

import textwrap
import threading
import time
from pathlib import Path

import pytest

from tritonsmith.cli import main
from tritonsmith.evaluator import WorkerPool
from tritonsmith.evaluator.sandbox import HANG_FLOOR_S, default_memory_mb, hang_limit
from tritonsmith.evaluator.verify import detect_kernelbench, verify_spec

pytestmark = [pytest.mark.compiler]

PROBLEM = textwrap.dedent('''\
    import signal
    import time

    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl


    class Model(nn.Module):
        def forward(self, x):
            return torch.relu(x)


    batch_size = 16
    dim = 256


    def get_inputs():
        return [torch.randn(batch_size, dim)]


    def get_init_inputs():
        return []


    @triton.jit
    def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


    def relu(x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out


    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            INIT

        def forward(self, x):
            FORWARD
            return relu(x)
    ''')

FAULTS = {  # fault: (ModelNew.__init__'s body, the start of forward's), indented from column 0
    "endless-loop": ("pass", "while True:\n    pass"),
    "ignores-signals": (
        "pass",
        "for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):\n"
        "    signal.signal(number, signal.SIG_IGN)\n"
        "while True:\n"
        "    time.sleep(3600)  # in C, never back in the interpreter",
    ),
    "grows-in-forward": (
        "pass",
        "hoard = []\nwhile True:\n"
        "    hoard.append(torch.ones(16 * 1024 * 1024))  # 64 MiB at a time, written\n"
        "    time.sleep(0.02)",
    ),
    "grows-untouched-in-init": (
        "self.hoard = [torch.empty(16 * 1024 * 1024) for _ in range(1000)]  # 64 GB, never written",
        "pass",
    ),
    "fine": ("pass", "pass"),
}


def candidate(folder: Path, fault: str, limits: str = "") -> Path:
    """A KernelBench problem with its ModelNew misbehaving as `fault` says, in a workspace of
    its own (with `limits` as its [tool.tritonsmith] table)."""
    init, forward = FAULTS[fault]
    source = PROBLEM.replace("INIT", init.replace("\n", "\n    ")).replace(
        "FORWARD", forward.replace("\n", "\n        "))
    (folder / "pyproject.toml").write_text(f"[tool.tritonsmith]\n{limits}\n" if limits else "")
    path = folder / f"{fault.replace('-', '_')}.py"
    path.write_text(source)
    return path


@pytest.fixture(autouse=True)
def _interpreter() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    pytest.importorskip("numpy", reason="Triton's interpreter needs numpy")


def test_the_default_limits() -> None:
    assert hang_limit(None) == HANG_FLOOR_S == 30
    assert hang_limit(0.001) == 30 and hang_limit(4.0) == 80  # 20× a slow reference
    assert hang_limit(4.0, 5) == 5  # the user's limit wins
    assert 1024 <= default_memory_mb() <= 32768


@pytest.mark.slow
def test_an_endless_loop_is_a_hang_verdict_within_a_minute(
    tmp_path: Path, interpreter_pools: tuple[WorkerPool, WorkerPool]
) -> None:
    """With the default limits: the reference's forward pass takes milliseconds, so a forward
    pass may take 30 s; the verdict says so long before the 300 s backstop."""
    spec = detect_kernelbench(candidate(tmp_path, "endless-loop"))
    assert spec is not None
    started = time.monotonic()
    verdict = verify_spec(spec, mode="interpreter", pools=interpreter_pools)
    elapsed = time.monotonic() - started
    assert not verdict.ok and verdict.stage == "candidate", verdict.summary()
    assert "verify_candidate job timed out after 30 s (hang)" in verdict.message
    assert "--timeout SECONDS" in verdict.message
    assert elapsed < 60, elapsed
    limits = verdict.details["limits"]
    assert limits["hang_s"] == 30 and not limits["hang_set_by_user"]
    assert 0 < limits["reference_forward_s"] < 1.5  # measured in the reference worker


def test_a_signal_ignoring_hang_with_the_timeout_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--timeout 3`: a candidate that ignores SIGTERM/SIGINT/SIGHUP and sleeps in C is killed
    (SIGKILL to its process group) 3 s into its forward pass."""
    path = candidate(tmp_path, "ignores-signals", limits="verify-timeout = 60")
    started = time.monotonic()
    assert main(["verify", str(path), "--device", "cpu", "--timeout", "3"]) == 1
    elapsed = time.monotonic() - started
    out = capsys.readouterr().out
    assert "FAILED · interpreter · candidate: verify_candidate job timed out after 3 s (hang)" in out
    assert elapsed < 40, elapsed  # compile, two worker starts, the reference, then 3 s


def test_memory_growth_gives_a_memory_limit_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`memory-limit-mb` in [tool.tritonsmith]: a forward pass that grows 64 MiB at a time is
    stopped by the resident-size watchdog as soon as it crosses the limit."""
    path = candidate(tmp_path, "grows-in-forward", limits="memory-limit-mb = 1536\nverify-timeout = 50")
    started = time.monotonic()
    assert main(["verify", str(path), "--device", "cpu"]) == 1
    elapsed = time.monotonic() - started
    out = capsys.readouterr().out
    assert "FAILED · interpreter · candidate: memory limit: worker used " in out, out
    assert "over the 1536 MB limit" in out and "--memory-mb MB" in out
    assert elapsed < 40, elapsed


def test_untouched_memory_meets_the_address_space_cap(
    tmp_path: Path, interpreter_pools: tuple[WorkerPool, WorkerPool]
) -> None:
    """64 GB allocated and never written (so never resident) in `__init__`: under the
    interpreter the worker's address space is capped, the allocation fails at once, and the
    verdict names the memory limit (not a hang, not "the candidate raised")."""
    spec = detect_kernelbench(candidate(tmp_path, "grows-untouched-in-init"))
    assert spec is not None
    verdict = verify_spec(spec, mode="interpreter", pools=interpreter_pools, memory_mb=1536)
    assert not verdict.ok and verdict.stage == "candidate", verdict.summary()
    # The allocation fails inside the job ("could not allocate memory within its 1536 MB
    # limit") or, when the failure takes the worker down first on a loaded machine, the pool
    # sees its death at the cap ("reached its address-space cap (... for a 1536 MB limit)"):
    # both name the memory limit, which is what this checks.
    assert verdict.message.startswith("memory limit: verify_candidate job "), verdict.message
    assert "1536 MB limit" in verdict.message and "timed out" not in verdict.message


def test_flags_override_the_pyproject_limits(tmp_path: Path) -> None:
    from tritonsmith.cli import build_parser
    from tritonsmith.cli.common import command_settings

    (tmp_path / "pyproject.toml").write_text(
        "[tool.tritonsmith]\nverify-timeout = 60\nmemory-limit-mb = 30000\n")
    parser = build_parser()
    warnings: list[str] = []
    flagged = command_settings(parser.parse_args(["verify", "k.py", "--timeout", "3", "--memory-mb", "1200"]),
                               tmp_path, warnings)
    assert (flagged.verify_timeout, flagged.memory_limit_mb) == (3, 1200)
    plain = command_settings(parser.parse_args(["verify", "k.py"]), tmp_path, warnings)
    assert (plain.verify_timeout, plain.memory_limit_mb) == (60, 30000)
    assert warnings == []
    bad: list[str] = []
    command_settings(parser.parse_args(["verify", "k.py", "--timeout", "0"]), tmp_path, bad)
    assert bad == ["setting 'verifyTimeout' must be a positive whole number, got 0"]


def test_cancelling_kills_the_hung_worker_at_once(
    tmp_path: Path, interpreter_pools: tuple[WorkerPool, WorkerPool]
) -> None:
    """What a newer save does to the running verification (server/jobs.py): set the old job's
    cancel event. The hung candidate's worker dies within a poll, and the pools serve the
    next verification."""
    spec = detect_kernelbench(candidate(tmp_path, "endless-loop"))
    assert spec is not None
    cancel = threading.Event()
    verdicts = []
    runner = threading.Thread(target=lambda: verdicts.append(
        verify_spec(spec, mode="interpreter", pools=interpreter_pools, cancel=cancel, hang_s=120)))
    runner.start()
    _, candidates = interpreter_pools
    deadline = time.monotonic() + 60
    while not candidates.worker_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    busy = candidates.worker_pids()
    assert busy
    time.sleep(1.0)  # well inside the endless loop (or its import): either way it must die now
    cancelled_at = time.monotonic()
    cancel.set()
    runner.join(10)
    assert not runner.is_alive() and time.monotonic() - cancelled_at < 2
    assert "cancelled" in verdicts[0].message
    assert not set(busy) & set(candidates.worker_pids())
    assert all(not Path(f"/proc/{pid}").exists() for pid in busy)
    fine = detect_kernelbench(candidate(tmp_path, "fine"))
    assert fine is not None
    after = verify_spec(fine, mode="interpreter", pools=interpreter_pools)
    assert after.ok, after.summary()
    assert after.details["limits"]["hang_s"] == 30
