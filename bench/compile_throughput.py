"""Compile throughput (kernel-configs per minute) with one worker and with two, cold cache.

The corpus: for each example of ``examples/`` with a kernel to compile, one module holding
``--copies`` renamed copies of the example (every module-level function and class gets the
suffix ``_<copy>``, so each kernel has its own source and so its own Triton cache key; module
constants are shared). Every copy's kernels are launched with constexprs known statically, so
every config compiles (``bench/corpus.py``'s kernels mostly take their block sizes and
heuristics at run time and are skipped). ``compile_file`` runs one job per kernel, as many at
once as the pool has workers, so a module with several kernels keeps two workers busy.

For each pool size and repetition: a fresh ``WorkerPool(size=N)`` (fresh scratch root, so an
empty Triton cache and workers that start and import Triton inside the timed region, as on the
first save), then ``compile_file`` over every module in turn for ``--targets``. Throughput =
entries of ``report.results`` (one per target x config) / wall time; each entry's own compile
time (the worker's ``seconds``) gives the per-kernel-config latency.

Usage::

    .venv/bin/python bench/compile_throughput.py --copies 4 --targets sm_80,sm_90 --repeat 3
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import re
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tritonsmith.evaluator.pool import WorkerPool
from tritonsmith.evaluator.reports import compile_file

REPO = Path(__file__).resolve().parent.parent


def renamed_copies(source: str, copies: int) -> str:
    """`copies` copies of `source` in one module, module-level functions and classes renamed."""
    names = [node.name for node in ast.parse(source).body
             if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b") if names else None
    parts = []
    for copy in range(copies):
        parts.append(pattern.sub(lambda m, c=copy: f"{m.group(1)}_{c}", source) if pattern else source)
    return "\n\n".join(parts)


@dataclass
class Run:
    workers: int
    wall_s: float
    entries: int
    compiled: int  # entries whose compile succeeded
    kernels: int
    skipped: int  # configs whose constexprs are known only at run time
    entry_s: list[float] = field(default_factory=list)  # each entry's compile time in its worker

    @property
    def per_minute(self) -> float:
        return self.entries / self.wall_s * 60


def build_corpus(folder: Path, copies: int) -> list[Path]:
    paths = []
    for example in sorted((REPO / "examples").glob("*.py")):
        path = folder / f"{example.stem}_x{copies}.py"
        path.write_text(renamed_copies(example.read_text(encoding="utf-8"), copies), encoding="utf-8")
        paths.append(path)
    return paths


def run_once(paths: list[Path], workers: int, targets: list[str]) -> Run:
    started = time.perf_counter()
    with WorkerPool(size=workers) as pool:
        reports = [r for path in paths
                   for r in compile_file(pool, path.read_text(encoding="utf-8"), path=str(path), targets=targets)]
    wall = time.perf_counter() - started
    entries = [e for r in reports for e in r.results]
    return Run(
        workers=workers, wall_s=wall, entries=len(entries), compiled=sum(bool(e.get("ok")) for e in entries),
        kernels=len(reports), skipped=sum(len(r.skipped) for r in reports),
        entry_s=[float(e.get("seconds") or 0.0) for e in entries],
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def main() -> None:
    parser = argparse.ArgumentParser(description="compile throughput, one worker vs two, cold Triton cache")
    parser.add_argument("--copies", type=int, default=4, help="renamed copies of each example per module")
    parser.add_argument("--targets", default="sm_80,sm_90")
    parser.add_argument("--workers", default="1,2", help="pool sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="runs per pool size (alternating sizes); best is shown")
    parser.add_argument("--json", metavar="OUT", help="also write every run as JSON")
    args = parser.parse_args()
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    sizes = [int(n) for n in args.workers.split(",")]
    load_before = os.getloadavg()
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="ts-compile-bench-") as tmp:
        paths = build_corpus(Path(tmp), args.copies)
        for _ in range(args.repeat):
            for size in sizes:
                run = run_once(paths, size, targets)
                print(f"# {size} worker(s): {run.entries} entries in {run.wall_s:.1f} s = {run.per_minute:.0f}/min",
                      flush=True)
                runs.append(run)
    load = os.getloadavg()
    print("\n| workers | kernels | kernel-configs | compiled | best wall s | median wall s | configs/min (best) "
          "| wall s per config | config compile s: median | p95 | speed-up |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    base = None
    for size in sizes:
        mine = [r for r in runs if r.workers == size]
        best = min(mine, key=lambda r: r.wall_s)
        base = base or best.wall_s
        each = [s for r in mine for s in r.entry_s]
        print(f"| {size} | {best.kernels} | {best.entries} | {best.compiled} | {best.wall_s:.1f} | "
              f"{statistics.median(r.wall_s for r in mine):.1f} | {best.per_minute:.0f} | "
              f"{best.wall_s / best.entries:.2f} | {statistics.median(each):.2f} | {percentile(each, 0.95):.2f} | "
              f"{base / best.wall_s:.2f}x |")
    from importlib.metadata import version

    print(f"\nmachine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"triton {version('triton')}, torch {version('torch')}; targets {', '.join(targets)}; "
          f"load average {load_before[0]:.2f} before, {load[0]:.2f} after")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"runs": [asdict(r) for r in runs], "targets": targets, "copies": args.copies,
             "loadavg": [load_before, load], "cpus": os.cpu_count()}, indent=1))


if __name__ == "__main__":
    main()
