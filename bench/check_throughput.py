"""Check throughput of tritonsmith in lines per second, single core, with pyflakes, ruff and
tree-sitter (parse only) on the same generated files as references.

Measured over a corpus written by ``corpus.py`` (``--files`` files of ``--lines`` lines):

* ``tritonsmith in-process``: a fresh ``Workspace`` (so a fresh ``Matcher`` with an empty
  per-kernel cache) per repetition, then ``matcher.check_source(bytes)`` for every file, which
  parses, indexes (``index_module``) and runs every rule; file reading is included. A second
  pass times the three phases separately (parse / index_module / check_module).
* ``tritonsmith CLI``: ``python -m tritonsmith check --jobs 1 --format json DIR`` as a subprocess,
  including interpreter start, imports, rule loading and JSON output; and, on a machine with
  more than one core, the default (one forked checker per core; its CPU time is the sum). Python subprocesses run
  with their bytecode cached in a temporary ``PYTHONPYCACHEPREFIX`` (filled by one untimed run),
  as an installed package has it, even where ``PYTHONDONTWRITEBYTECODE`` is set.
* ``pyflakes in-process`` (``pyflakes.api.check``) and ``pyflakes CLI`` (``python -m pyflakes DIR``).
* ``ruff CLI`` (``ruff check --no-cache --select F DIR``), when ruff is installed.
* ``tree-sitter parse``: ``Parser.parse`` of every file, nothing else (the floor for tritonsmith).

Every tool measured runs on one core (but the default tritonsmith CLI row): Python is single-threaded here, and ruff is given
``RAYON_NUM_THREADS=1``; ``--pin CPU`` additionally pins the benchmark and its children to one CPU
(``os.sched_setaffinity``). Each measurement is repeated ``--repeat``
times; the table shows the best (min) wall time and its CPU time (user+sys; for subprocesses from
``getrusage(RUSAGE_CHILDREN)``). On a shared machine, lines per CPU-second is the steadier number.

Usage::

    .venv/bin/python bench/check_throughput.py --files 20 --lines 2500 --json bench/results/throughput.json
"""

from __future__ import annotations

import argparse
import io
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
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import write_corpus  # noqa: E402


@dataclass
class Row:
    tool: str
    files: int
    lines: int
    wall_s: float  # best of the repeats
    cpu_s: float  # CPU time of the best repeat
    wall_median_s: float
    note: str = ""

    @property
    def lines_per_s(self) -> float:
        return self.lines / self.wall_s if self.wall_s else float("nan")

    @property
    def lines_per_cpu_s(self) -> float:
        return self.lines / self.cpu_s if self.cpu_s else float("nan")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(fn: Callable[[], object], repeat: int, *, subprocess_cpu: bool = False) -> tuple[float, float, float]:
    """(best wall, CPU of that run, median wall) over `repeat` runs of `fn`."""
    runs = []
    for _ in range(repeat):
        cpu0 = _children_cpu() if subprocess_cpu else time.process_time()
        t0 = time.perf_counter()
        fn()
        wall = time.perf_counter() - t0
        cpu = (_children_cpu() if subprocess_cpu else time.process_time()) - cpu0
        runs.append((wall, cpu))
    best = min(runs)
    return best[0], best[1], statistics.median(r[0] for r in runs)


def run_cli(command: list[str], ok_codes: tuple[int, ...] = (0, 1), *, pycache: str | None = None) -> None:
    env = dict(os.environ, RAYON_NUM_THREADS="1")  # ruff: one worker thread
    if pycache is not None:
        # Python programs run with their bytecode cached, as after `pip install` (which compiles
        # it); with PYTHONDONTWRITEBYTECODE set, an editable checkout would otherwise compile
        # every module of tritonsmith from source on each run, while pyflakes, installed in the
        # venv, reads its cached bytecode. The cache goes to a temporary folder, not the repo.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
    proc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    if proc.returncode not in ok_codes:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description="check throughput in lines per second")
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--lines", type=int, default=2500, help="lines per file")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pin", type=int, default=None, metavar="CPU",
                        help="pin the benchmark and its children to this CPU (default: not pinned; every tool "
                             "measured is single-threaded anyway, and ruff gets RAYON_NUM_THREADS=1)")
    parser.add_argument("--dir", help="use (and keep) this corpus folder instead of a temporary one")
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args()

    cpu = args.pin
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})

    tmp = None
    if args.dir:
        folder = Path(args.dir)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="ts-throughput-")
        folder = Path(tmp.name) / "corpus"
    paths = write_corpus(folder, args.files, args.lines)
    total_lines = sum(p.read_bytes().count(b"\n") for p in paths)
    sources = [p.read_bytes() for p in paths]
    rows: list[Row] = []
    python = sys.executable

    pycache = tempfile.mkdtemp(prefix="ts-throughput-pycache-")

    def add(tool: str, fn: Callable[[], object], *, sub: bool = False, note: str = "") -> None:
        print(f"# {tool} ...", file=sys.stderr, flush=True)
        if sub:
            fn()  # untimed: fills the bytecode cache
        wall, cpu_s, median = measure(fn, args.repeat, subprocess_cpu=sub)
        rows.append(Row(tool, len(paths), total_lines, wall, cpu_s, median, note))
        print(f"#   {total_lines / wall:,.0f} lines/s (wall), {total_lines / cpu_s:,.0f} lines/CPU-s", file=sys.stderr)

    # -- tritonsmith in-process ---------------------------------------------------------------
    from tree_sitter import Parser

    from tritonsmith.analysis import Document, index_module
    from tritonsmith.settings import Settings
    from tritonsmith.workspace import Workspace

    findings_count = [0]

    def tritonsmith_in_process() -> None:
        # With the GC tuning that the `tritonsmith` program and server apply at start
        # (tritonsmith/_runtime.py), restored afterwards so the references run with defaults.
        import gc

        from tritonsmith._runtime import tune_gc

        threshold = gc.get_threshold()
        tune_gc()
        try:
            workspace = Workspace(None, Settings())  # fresh matcher: empty per-kernel cache
            count = 0
            for path in paths:
                count += len(workspace.matcher.check_source(path.read_bytes()))
            findings_count[0] = count
        finally:
            gc.set_threshold(*threshold)

    add("tritonsmith in-process (check_source)", tritonsmith_in_process)

    phases = {"parse": 0.0, "index_module": 0.0, "check_module": 0.0}

    def tritonsmith_phases() -> None:
        workspace = Workspace(None, Settings())
        for source in sources:
            t0 = time.process_time()
            document = Document(source)
            t1 = time.process_time()
            index = index_module(document.root)
            t2 = time.process_time()
            workspace.matcher.check_module(document.source, index)
            t3 = time.process_time()
            phases["parse"] += t1 - t0
            phases["index_module"] += t2 - t1
            phases["check_module"] += t3 - t2

    tritonsmith_phases()

    # -- tritonsmith CLI ----------------------------------------------------------------------
    add(
        "tritonsmith CLI (check --jobs 1 --format json DIR)",
        lambda: run_cli([python, "-m", "tritonsmith", "check", "--jobs", "1", "--format", "json", str(folder)],
                        pycache=pycache),
        sub=True,
        note="one process; includes process start; bytecode cached",
    )
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if cores > 1:
        add(
            f"tritonsmith CLI (check --format json DIR: {cores} processes)",
            lambda: run_cli([python, "-m", "tritonsmith", "check", "--format", "json", str(folder)], pycache=pycache),
            sub=True,
            note=f"the default: one checker per core ({cores}); lines/s is wall time, not per core",
        )

    # -- references ---------------------------------------------------------------------------
    from tritonsmith.analysis.document import PY_LANGUAGE

    def tree_sitter_parse() -> None:
        parser = Parser(PY_LANGUAGE)
        for source in sources:
            parser.parse(source)

    add("tree-sitter parse only (in-process)", tree_sitter_parse)

    try:
        from pyflakes import api as pyflakes_api
        from pyflakes import reporter as pyflakes_reporter

        def pyflakes_in_process() -> None:
            report = pyflakes_reporter.Reporter(io.StringIO(), io.StringIO())
            for path in paths:
                pyflakes_api.check(path.read_text(), str(path), report)

        add("pyflakes in-process (api.check)", pyflakes_in_process)
        add(
            "pyflakes CLI (python -m pyflakes DIR)",
            lambda: run_cli([python, "-m", "pyflakes", str(folder)], pycache=pycache),
            sub=True,
            note="includes process start; bytecode cached",
        )
    except ImportError:
        print("# pyflakes is not installed; skipped", file=sys.stderr)

    ruff = shutil.which("ruff") or (str(Path(python).parent / "ruff") if (Path(python).parent / "ruff").exists() else None)
    if ruff:
        add(
            "ruff CLI (check --no-cache --select F DIR)",
            lambda: run_cli([ruff, "check", "--no-cache", "--select", "F", "--quiet", str(folder)]),
            sub=True,
            note="RAYON_NUM_THREADS=1",
        )

    # -- report -------------------------------------------------------------------------------
    lines = [
        f"Corpus: {len(paths)} files x {args.lines:,} lines = {total_lines:,} lines "
        f"({findings_count[0]} tritonsmith findings); "
        f"{f'pinned to CPU {cpu}' if cpu is not None else 'not pinned'}; best of {args.repeat}.",
        "",
        "| tool | wall s (best) | wall s (median) | CPU s | lines/s (wall) | lines/CPU-s | note |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.tool} | {row.wall_s:.3f} | {row.wall_median_s:.3f} | {row.cpu_s:.3f} | "
            f"{row.lines_per_s:,.0f} | {row.lines_per_cpu_s:,.0f} | {row.note} |"
        )
    phase_total = sum(phases.values())
    lines += [
        "",
        "tritonsmith in-process, CPU time by phase (one cold pass):",
        "",
        "| phase | CPU s | share | lines/CPU-s if alone |",
        "|---|---:|---:|---:|",
    ]
    for name, seconds in phases.items():
        lines.append(
            f"| {name} | {seconds:.3f} | {seconds / phase_total:.0%} | {total_lines / seconds if seconds else float('nan'):,.0f} |"
        )
    load = os.getloadavg()
    lines.append(
        f"\nmachine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load average after the run {load[0]:.2f}"
    )
    print("\n".join(lines))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({
            "files": len(paths),
            "lines_per_file": args.lines,
            "total_lines": total_lines,
            "findings": findings_count[0],
            "cpu": cpu,
            "repeat": args.repeat,
            "rows": [dict(asdict(r), lines_per_s=r.lines_per_s, lines_per_cpu_s=r.lines_per_cpu_s) for r in rows],
            "tritonsmith_phases_cpu_s": phases,
            "loadavg": load,
        }, indent=1))
    shutil.rmtree(pycache, ignore_errors=True)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
