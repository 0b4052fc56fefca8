"""What the predicted time costs next to the verification it follows, file by file, in one run.

For each file (copied with its `<name>_reference.py` sibling, when it has one, into a fresh
temporary workspace), three commands run, their order turning over with each repeat:

- `verify`: `python -m tritonsmith verify FILE --device cpu --no-timing --no-predict --format json`,
  the verification alone;
- `verify+predict`: `python -m tritonsmith predict FILE --verify --format json`, the same
  verification and then the prediction, in the same worker pools (as the editor and `verify`
  run them); the prediction's own cost is timed in that process (`elapsed_s` of the JSON) and,
  as before, this minus `verify`;
- `predict`: `python -m tritonsmith predict FILE --format json`, the prediction alone (its pools
  started for it).

`--target` goes to every command (the verification compiles for it too); `--package DIR` takes
the package from DIR (PYTHONPATH: a `git archive` of an earlier commit) to measure a tree before a
change. Recorded per run: wall
time, exit status, the verdict and the predicted time with its sizes and how it was profiled.
The report gives the medians per file and the prediction's share of the verification's time.

Usage::

    .venv/bin/python bench/predict_cost.py --repeat 2 --json docs/benchmarks/predict-cost-1.json \\
        examples/kernelbench_relu.py /tmp/kb/l1_023_Softmax.py ...
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "verify": ["verify", "{file}", "--device", "cpu", "--no-timing", "--no-predict", "--format", "json"],
    "verify+predict": ["predict", "{file}", "--verify", "--format", "json"],
    "predict": ["predict", "{file}", "--format", "json"],
}


def run_once(path: Path, kind: str, *, target: str | None, package: Path | None, timeout: float) -> dict[str, object]:
    """One command of `kind` on a copy of `path` (and its reference) in a fresh workspace."""
    with tempfile.TemporaryDirectory(prefix="predict-cost-") as folder:
        (Path(folder) / ".tritonsmith").mkdir()
        copy = Path(folder) / path.name
        shutil.copy(path, copy)
        reference = path.with_name(f"{path.stem}_reference.py")
        if reference.exists():
            shutil.copy(reference, Path(folder) / reference.name)
        argv = [a.replace("{file}", str(copy)) for a in COMMANDS[kind]]
        if target:  # the verification compiles for it too: its time is the target's
            argv += ["--target", target]
        env = dict(os.environ)
        if package is not None:
            env["PYTHONPATH"] = str(package)
        began = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-m", "tritonsmith", *argv], capture_output=True, text=True,
                                  env=env, cwd=folder, timeout=timeout, check=False)
            out, code = done.stdout, done.returncode
        except subprocess.TimeoutExpired:
            out, code = "", None
        wall = time.perf_counter() - began
    record: dict[str, object] = {"wall_s": round(wall, 3), "exit": code}
    try:
        report = json.loads(out)
    except json.JSONDecodeError:
        return record
    if kind == "verify":
        record["verdicts"] = [f"{v.get('stage')}" for v in report.get("verification", [])]
    else:
        record.update({"seconds": report.get("seconds"), "summary": report.get("summary"),
                       "profiled": report.get("profiled"), "verified": report.get("verified"),
                       "prediction_s": report.get("elapsed_s")})
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--target", help="the prediction's target (default: the settings', sm_90)")
    parser.add_argument("--package", type=Path, help="take the package from this folder (PYTHONPATH)")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--only", choices=list(COMMANDS), action="append",
                        help="run only these commands (`--only verify+predict`: one run a file, the verification's "
                             "time taken as that run's wall time less the prediction's)")
    args = parser.parse_args(argv)
    kinds = args.only or list(COMMANDS)
    runs: list[dict[str, object]] = []
    for repeat in range(args.repeat):
        for path in args.files:
            order = kinds if repeat % 2 == 0 else kinds[::-1]
            for kind in order:
                outcome = run_once(path.resolve(), kind, target=args.target, package=args.package,
                                   timeout=args.timeout)
                runs.append({"repeat": repeat + 1, "file": path.name, "kind": kind, **outcome})
                if args.json:  # after every run: an interrupted measurement keeps what it measured
                    Path(args.json).write_text(json.dumps({"partial": True, "runs": runs}, indent=1) + "\n")
                print(f"{repeat + 1} {path.name:40s} {kind:15s} {outcome['wall_s']:7.2f} s "
                      f"{outcome.get('summary') or outcome.get('verdicts') or ''}", flush=True)
    data = {"environment": {"python": platform.python_version(), "cpus": os.cpu_count(),
                            "load_average": os.getloadavg()[0],
                            "package": f"<{args.package.name}>" if args.package else "this checkout"},
            "commands": {k: " ".join(["python -m tritonsmith", *v]) for k, v in COMMANDS.items()},
            "target": args.target, "runs": runs, "rows": table(runs)}
    for row in data["rows"]:
        print(row)
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return 0


def table(runs: list[dict[str, object]]) -> list[str]:
    """Per file: the median wall time of each command, the prediction's own cost (timed in the
    `verify+predict` process, and as verify+predict minus verify) and its share of the
    verification's time, and what was predicted."""
    if not any(r.get("prediction_s") is not None for r in runs):
        return _difference_table(runs)
    rows = ["| file | verify (s) | verify + predict (s) | prediction, timed in process (s) | share of verify | "
            "difference (s) | predict alone (s) | predicted |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    for file in dict.fromkeys(str(r["file"]) for r in runs):
        median = _medians(runs, file)
        last = ([r for r in runs if r["file"] == file and r["kind"] == "predict"]
                or [r for r in runs if r["file"] == file])[-1]
        own = median["verify+predict"] - median["verify"]
        timed = [float(r["prediction_s"]) for r in runs  # type: ignore[arg-type]
                 if r["file"] == file and r["kind"] == "verify+predict" and r.get("prediction_s") is not None]
        inside = statistics.median(timed) if timed else float("nan")
        if math.isnan(median["verify"]):  # `--only verify+predict`: the rest of that run was the verification
            median["verify"] = median["verify+predict"] - inside
        rows.append(f"| {file} | {median['verify']:.1f} | {median['verify+predict']:.1f} | {inside:.2f} | "
                    f"{inside / median['verify']:.2f} | {own:.1f} | {median['predict']:.1f} | "
                    f"{last.get('summary') or 'none'} ({last.get('profiled') or '?'}) |")
    return rows


def _medians(runs: list[dict[str, object]], file: str) -> dict[str, float]:
    """Each command's median wall time on `file` (nan for a command not run)."""
    median: dict[str, float] = {}
    for kind in COMMANDS:
        walls = [float(r["wall_s"]) for r in runs if r["file"] == file and r["kind"] == kind]  # type: ignore[arg-type]
        median[kind] = statistics.median(walls) if walls else float("nan")
    return median


def _difference_table(runs: list[dict[str, object]]) -> list[str]:
    """`table` for runs made before the prediction timed itself (`predict-cost-1` to `-4`): its
    own cost only as verify+predict minus verify."""
    rows = ["| file | verify (s) | verify + predict (s) | prediction's own (s) | share of verify | "
            "predict alone (s) | predicted |", "|---|---:|---:|---:|---:|---:|---|"]
    for file in dict.fromkeys(str(r["file"]) for r in runs):
        median = _medians(runs, file)
        last = [r for r in runs if r["file"] == file and r["kind"] == "predict"][-1]
        own = median["verify+predict"] - median["verify"]
        rows.append(f"| {file} | {median['verify']:.1f} | {median['verify+predict']:.1f} | {own:.1f} | "
                    f"{own / median['verify']:.2f} | {median['predict']:.1f} | "
                    f"{last.get('summary') or 'none'} ({last.get('profiled') or '?'}) |")
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
