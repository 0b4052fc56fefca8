"""`tritonsmith bench` end to end on the CPU: two KernelBench-format problems, every output."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.compiler
@pytest.mark.timeout(600)  # two searches and their confirmation under the interpreter: about 4 minutes
def test_a_small_bench_run_writes_every_output(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    problems = tmp_path / "problems"
    problems.mkdir()
    for name in ("kernelbench_relu.py", "kernelbench_fused.py"):
        shutil.copy2(ROOT / "examples" / name, problems / name)
    (problems / "notes.py").write_text("x = 1\n")  # not a problem: skipped
    out = tmp_path / "report"
    run = subprocess.run([sys.executable, "-m", "tritonsmith", "bench", str(problems), "--steps", "2",
                          "--device", "cpu", "--out", str(out)], capture_output=True, text=True, timeout=600,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "start verified on 2/2 (not counted as correct)" in run.stdout and "predicted H100 SXM" in run.stdout
    results = json.loads((out / "results.json").read_text())
    assert [p["name"] for p in results["problems"]] == ["kernelbench_fused", "kernelbench_relu"]
    assert all(p["start_ok"] and len(p["steps"]) == 2 for p in results["problems"])
    # Correct only with a new verified candidate; a speedup above the start only when confirmed.
    for p in results["problems"]:
        assert p["correct"] == (p["new_verified"] > 0)
        assert p["speedup"] is None if not p["correct"] else (p["claimed"] or p["speedup"] <= 1.0)
        if p["claimed"]:  # above the margin; a measured claim has its interval, a predicted one says it is a model's
            assert p["confirmation"]["low"] > 1 + p["confirmation"]["noiseFloor"]
            assert "95% CI" in p["result"] or "a model's estimate" in p["result"], p["result"]
    correct = sum(p["correct"] for p in results["problems"])
    assert f"accuracy {correct / 2:.0%} (new verified candidate)" in run.stdout
    assert results["metrics"]["tasks"] == 2 and results["protocol"]["name"] == "tritonsmith"
    markdown = (out / "report.md").read_text()
    assert "| accuracy (new verified candidate) |" in markdown and "kernelbench_relu" in markdown
    html = (out / "report.html").read_text()
    assert html.startswith("<!doctype html>") and "<table>" in html
    if (out / "speedup-vs-steps.png").exists():  # matplotlib installed
        assert html.count("data:image/png;base64,") == 2
        assert (out / "speedup-distribution.png").stat().st_size > 1000


def test_an_empty_folder_is_a_usage_error(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "tritonsmith", "bench", str(tmp_path), "--device", "cpu"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "no KernelBench-format problem" in run.stderr
