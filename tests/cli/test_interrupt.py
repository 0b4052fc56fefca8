"""Ctrl-C and SIGTERM during `tritonsmith verify` or `optimize`: the command stops at once (within
two seconds) and leaves nothing in the temporary folder (its worker pools close and remove their
folders, the runs folder keeps no verification's work), at every stage: while the pools start,
while the trials run, while the prediction profiles the kernel, in a search."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


STAGES = {  # name -> (command, the work folder that shows the stage has begun, then wait)
    "pools starting": (["verify", "layer_norm.py", "--device", "cpu"], "tritonsmith-verify-*", 0.0),
    "trials": (["verify", "layer_norm.py", "--device", "cpu"], "tritonsmith-verify-*", 2.0),
    "prediction": (["verify", "layer_norm.py", "--device", "cpu"], "tritonsmith-profile-*", 0.0),
    "search": (["optimize", "layer_norm.py", "--kernel", "layer_norm_kernel", "--steps", "6", "--device", "cpu"],
               "tritonsmith-verify-*", 3.0),
}


@pytest.mark.compiler
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("stage", list(STAGES))
def test_an_interrupted_command_stops_at_once_and_leaves_nothing(tmp_path: Path, sig: signal.Signals,
                                                                  stage: str) -> None:
    command, folder, after_s = STAGES[stage]
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    work = tmp_path / "work"
    (work / ".tritonsmith").mkdir(parents=True)
    (work / "layer_norm.py").write_text((ROOT / "examples" / "layer_norm.py").read_text())
    process = subprocess.Popen(
        [sys.executable, "-m", "tritonsmith", *command], cwd=work,
        env={**os.environ, "TMPDIR": str(temporary)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # a background job ignores SIGINT
    deadline = time.monotonic() + 60
    runs = lambda: list(temporary.glob(f"tritonsmith-runs-*/{folder}"))  # noqa: E731
    while not runs() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)  # until a verification has its work folder: the workers are running
    assert runs(), f"{stage} did not begin within 60 s"
    time.sleep(after_s)
    assert process.poll() is None, f"{command[0]} ended before it could be interrupted"
    sent = time.monotonic()
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=30)
    assert time.monotonic() - sent < 2.0
    # A search stops cleanly (its journal keeps it, resumable) and says so; `verify` unwinds.
    said = "stopped: cancelled" if command[0] == "optimize" else "tritonsmith: interrupted"
    assert process.returncode == 130 and said in stderr, stderr[-2000:]
    left = [p.name for p in temporary.iterdir() if not p.name.startswith("tritonsmith-runs-")] + \
        [p.name for p in temporary.glob("tritonsmith-runs-*/*")]
    assert left == [], (left, sorted(str(p.relative_to(temporary)) for p in temporary.rglob("*"))[:20])
