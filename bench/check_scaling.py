"""Whether `check` costs time in proportion to a file's size: one generated file (`corpus.py`) of
each size, checked in process by a fresh matcher (nothing cached), CPU time per line.

A check that walks every kernel of the module once per kernel is quadratic: its lines per
CPU-second fall as the file grows. A linear one keeps them level (the figure wanders with the
machine's load, so the ratio between sizes in one run is the number to read).

    .venv/bin/python bench/check_scaling.py --sizes 2000,8000,20000,55000 --json docs/benchmarks/check-scaling-N.json

`PYTHONPATH=<another checkout>` measures that checkout's code with this script.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import generate  # noqa: E402


def _commit(folder: Path) -> str:
    """The commit of the checkout measured (not its path, which is this machine's)."""
    import subprocess

    try:
        head = subprocess.run(["git", "-C", str(folder), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(folder), "status", "--porcelain", "--", "."], capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + (" with uncommitted changes" if dirty else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="2000,8000,20000,55000", help="file sizes in lines, comma-separated")
    parser.add_argument("--repeat", type=int, default=2, help="checks per size (the fastest is kept)")
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args()

    import tritonsmith
    from tritonsmith._runtime import tune_gc
    from tritonsmith.settings import Settings
    from tritonsmith.workspace import Workspace

    tune_gc()  # as the command line does
    rows = []
    for lines in (int(s) for s in args.sizes.split(",")):
        source = generate(lines, seed=0).encode()
        runs = []
        for _ in range(args.repeat):
            workspace = Workspace(None, Settings())  # a fresh matcher: an empty per-kernel cache
            started = time.process_time()
            findings = workspace.matcher.check_source(source)
            runs.append(time.process_time() - started)
        best = min(runs)
        kernels = source.count(b"@triton.jit")
        rows.append({"lines": lines, "kernels": kernels, "findings": len(findings), "cpu_s": runs,
                     "lines_per_cpu_s": round(lines / best)})
        print(f"{lines:>7,} lines {kernels:>5} kernels: {best:7.2f} CPU-s, {lines / best:8,.0f} lines/CPU-s",
              flush=True)
    first = rows[0]["lines_per_cpu_s"]
    for row in rows:
        row["vs_smallest"] = round(row["lines_per_cpu_s"] / first, 3)
    result = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "tritonsmith": _commit(Path(tritonsmith.__file__).parent),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_after": os.getloadavg()},
        "rows": rows,
    }
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
