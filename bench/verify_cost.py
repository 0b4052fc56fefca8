"""What `tritonsmith verify --device cpu` costs, before and after a change, in the same run.

For each file, `python -m tritonsmith verify FILE --device cpu --no-timing --no-predict --format
json` runs once per side per repeat, the two sides alternating (before, after; then after,
before), each side's package taken from its own folder through PYTHONPATH (a `git archive` of a
commit, or a copy of the working tree), in a fresh temporary workspace holding a copy of the file.
Recorded per run: wall time and the verdict (`ok`, `stage`); `cpu_s` is only the command's own
process (its workers are not waited for by it: not a figure to report). The report gives each
file's median wall time on each side and the ratio after / before, and the totals; a verdict that
differs between the sides is listed.

Usage::

    git archive BEFORE_COMMIT tritonsmith | tar -x -C /tmp/before
    cp -r tritonsmith /tmp/after
    .venv/bin/python bench/verify_cost.py --before /tmp/before --after /tmp/after --repeat 2 \\
        --json docs/benchmarks/verify-cost-1.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILES = [
    *(ROOT / "examples" / name for name in ("kernelbench_relu.py", "kernelbench_fused.py", "softmax.py",
                                             "layer_norm.py", "vector_add.py", "matmul.py")),
    *sorted((ROOT / "tests" / "evaluator" / "fixtures" / "adversary").glob("ok*.py")),
]


def run_once(path: Path, source: Path, timeout: float) -> dict[str, object]:
    """One `verify` of a copy of `path` with the package in `source`."""
    with tempfile.TemporaryDirectory(prefix="verify-cost-") as folder:
        (Path(folder) / ".tritonsmith").mkdir()
        copy = Path(folder) / path.name
        shutil.copy(path, copy)
        env = {**os.environ, "PYTHONPATH": str(source)}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "tritonsmith", "verify", str(copy), "--device", "cpu",
                               "--no-timing", "--no-predict", "--format", "json"],
                              capture_output=True, text=True, env=env, cwd=folder, timeout=timeout, check=False)
        wall = time.perf_counter() - began
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    verdicts: list[dict[str, object]] = []
    try:
        report = json.loads(done.stdout)
        verdicts = [{"ok": v.get("ok"), "stage": v.get("stage")} for v in report.get("verification", [])]
    except (json.JSONDecodeError, AttributeError):
        pass
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "exit": done.returncode, "verdicts": verdicts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, metavar="DIR", help="folder holding the package before the change")
    parser.add_argument("--after", required=True, metavar="DIR", help="folder holding the package after the change")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args(argv)
    files = args.files or DEFAULT_FILES
    sides = {"before": Path(args.before).resolve(), "after": Path(args.after).resolve()}
    runs: list[dict[str, object]] = []
    for repeat in range(args.repeat):
        for path in files:
            order = ("before", "after") if repeat % 2 == 0 else ("after", "before")
            for side in order:
                outcome = run_once(path, sides[side], args.timeout)
                runs.append({"repeat": repeat + 1, "file": str(path.relative_to(ROOT)), "side": side, **outcome})
                print(f"{repeat + 1} {path.name:40s} {side:6s} {outcome['wall_s']:7.2f} s wall "
                      f"{outcome['cpu_s']:7.2f} s cpu {outcome['verdicts']}", flush=True)
    data = {"environment": {"python": platform.python_version(), "cpus": os.cpu_count(),
                            "load_average": os.getloadavg()[0]},
            "command": "python -m tritonsmith verify FILE --device cpu --no-timing --no-predict --format json",
            "runs": runs, "rows": table(runs)}
    for row in data["rows"]:
        print(row)
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return 0


def table(runs: list[dict[str, object]]) -> list[str]:
    """The report's rows: per file the median wall and CPU time of each side, the ratio, and a
    flag where the verdicts differ; then the totals of the medians."""
    rows = ["| file | before (s) | after (s) | after / before | verdicts |", "|---|---:|---:|---:|---|"]
    totals = {"before": 0.0, "after": 0.0}
    for file in dict.fromkeys(str(r["file"]) for r in runs):
        median: dict[str, float] = {}
        verdicts: dict[str, str] = {}
        for side in ("before", "after"):
            mine = [r for r in runs if r["file"] == file and r["side"] == side]
            median[side] = statistics.median(float(r["wall_s"]) for r in mine)  # type: ignore[arg-type]
            verdicts[side] = ", ".join(f"{v['stage']}" for v in mine[-1]["verdicts"])  # type: ignore[attr-defined]
        same = "same" if verdicts["before"] == verdicts["after"] else f"{verdicts['before']} → {verdicts['after']}"
        if same == "same":  # a changed verdict is other work, not the same work's cost
            for side in totals:
                totals[side] += median[side]
        rows.append(f"| {Path(file).name} | {median['before']:.2f} | {median['after']:.2f} | "
                    f"{median['after'] / median['before']:.2f} | {same} |")
    rows.append(f"| **total, same verdicts** | {totals['before']:.1f} | {totals['after']:.1f} | "
                f"{totals['after'] / totals['before']:.2f} | |")
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
