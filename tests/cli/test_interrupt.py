"""Ctrl-C and SIGTERM during `tritonsmith verify`: the command stops at once and leaves nothing in
the temporary folder (its worker pools close and remove their folders, the runs folder keeps no
verification's work)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.compiler
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("after_s", [0.0, 2.0])  # while the pools start; while the trials run
def test_an_interrupted_verify_stops_at_once_and_leaves_nothing(tmp_path: Path, sig: signal.Signals,
                                                                 after_s: float) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    work = tmp_path / "work"
    (work / ".tritonsmith").mkdir(parents=True)
    (work / "layer_norm.py").write_text((ROOT / "examples" / "layer_norm.py").read_text())
    process = subprocess.Popen(
        [sys.executable, "-m", "tritonsmith", "verify", "layer_norm.py", "--device", "cpu"], cwd=work,
        env={**os.environ, "TMPDIR": str(temporary)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # a background job ignores SIGINT
    deadline = time.monotonic() + 60
    runs = lambda: [p for p in temporary.glob("tritonsmith-runs-*/*")]  # noqa: E731
    while not runs() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)  # until a verification has its work folder: the workers are running
    time.sleep(after_s)
    assert process.poll() is None, "verify ended before it could be interrupted"
    sent = time.monotonic()
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=30)
    assert time.monotonic() - sent < 2.0
    assert process.returncode == 130 and "tritonsmith: interrupted" in stderr, stderr[-2000:]
    left = [p.name for p in temporary.iterdir() if not p.name.startswith("tritonsmith-runs-")] + \
        [p.name for p in temporary.glob("tritonsmith-runs-*/*")]
    assert left == [], (left, sorted(str(p.relative_to(temporary)) for p in temporary.rglob("*"))[:20])
