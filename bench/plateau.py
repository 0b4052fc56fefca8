"""Optimize sized to the user's time (issue 34): the default search, which stops at a plateau
(`--patience`, 15), against the whole budget of 100 steps (`--patience 0`, the behaviour before
the plateau stop), on one file, in the same run, alternating.

For each configuration and repeat, in a fresh git repository holding a copy of the file::

    tritonsmith optimize FILE --kernel K --device cpu --format json --out best.patch [--patience 0]

Recorded: wall seconds, candidates evaluated, how the search stopped, the confirmed result, and
whether the patch applies and equals the other configuration's. Figures are predicted sm_90
time (a model's estimate, profiled on the CPU), not GPU time.

Usage::

    .venv/bin/python bench/plateau.py --file examples/softmax.py --kernel softmax_kernel --repeat 2 \\
        --json docs/benchmarks/plateau-1.json
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_one(path: Path, kernel: str, patience: int | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="plateau-") as tmp:
        work = Path(tmp)
        shutil.copy(path, work / path.name)
        subprocess.run(["git", "init", "-q"], cwd=work, check=True)
        command = [sys.executable, "-m", "tritonsmith", "optimize", path.name, "--kernel", kernel, "--device", "cpu",
                   "--format", "json", "--out", "best.patch"]
        if patience is not None:
            command += ["--patience", str(patience)]
        began = time.monotonic()
        done = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=3600)
        seconds = time.monotonic() - began
        lines = done.stdout.splitlines()
        start = max((i for i, line in enumerate(lines) if line == "{"), default=None)
        result = json.loads("\n".join(lines[start:])) if start is not None else {}
        patch = (work / "best.patch").read_text() if (work / "best.patch").exists() else ""
        applies = bool(patch) and subprocess.run(["git", "apply", "best.patch"], cwd=work,
                                                 capture_output=True).returncode == 0
        return {"patience": "default (15)" if patience is None else patience, "exit": done.returncode,
                "seconds": round(seconds, 1), "candidates": result.get("candidates"),
                "stopped": (result.get("stopped") or ""), "result": result.get("result"),
                "speedup": result.get("speedup"), "patch_applies": applies,
                "patched": (work / path.name).read_text() if applies else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=ROOT / "examples" / "softmax.py")
    parser.add_argument("--kernel", default="softmax_kernel")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for repeat in range(args.repeat):
        for patience in (None, 0):  # alternating, so a slow stretch of the machine hits both
            row = run_one(args.file.resolve(), args.kernel, patience)
            row["repeat"] = repeat + 1
            rows.append(row)
            print(f"repeat {repeat + 1}, patience {row['patience']}: {row['seconds']} s, {row['candidates']} "
                  f"candidates, stopped {row['stopped']}, {row['result']}", flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    same = len({r["patched"] for r in rows}) == 1
    summary = {"command": "bench/plateau.py " + " ".join(sys.argv[1:]), "commit": commit,
               "python": platform.python_version(), "machine": platform.machine(),
               "file": str(args.file.resolve().relative_to(ROOT)) if args.file.resolve().is_relative_to(ROOT) else str(args.file),
               "measured_on": "predicted sm_90 time (profiled under the interpreter, CPU)",
               "same_patch_everywhere": same, "rows": [{k: v for k, v in r.items() if k != "patched"} for r in rows]}
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"the same patch in every run: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
