"""Wall time of `tritonsmith check` on one large generated file (`corpus.py`), with the file's
kernels in one process (`--jobs 1`) and split between forked processes (the default: one per
core; `rules/forked.py`), alternating so both see the same load.

    .venv/bin/python bench/check_one_file.py --lines 55000 --repeat 3 --json docs/benchmarks/check-55k-forked-N.json

Python's bytecode is cached between the runs as an installed package has it (`--bytecode none`:
compiled on every run, as on a machine that sets PYTHONDONTWRITEBYTECODE).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_scaling import _commit  # noqa: E402
from corpus import generate  # noqa: E402


def _timed(path: Path, env: dict[str, str], *jobs: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tritonsmith", "check", str(path), "--exit-zero", *jobs],
                          capture_output=True, text=True, check=True, env=env)
    return time.perf_counter() - started, done.stdout


def _environment(bytecode: str, folder: Path) -> dict[str, str]:
    """The checks' environment. `cached`: Python's bytecode is written on the warm-up run to a
    folder of this run's own and read after, as an installed package has it (pip compiles it at
    install); this machine sets PYTHONDONTWRITEBYTECODE, which would otherwise make every run
    compile every module (about 0.2 s). `none`: compiled on every run, as that setting has it."""
    env = dict(os.environ)
    env.pop("PYTHONPYCACHEPREFIX", None)
    if bytecode == "cached":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(folder / "bytecode")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _relative(path: str) -> str:
    """`path` from the checkout's root when it lies in it: the record names no machine's folders."""
    root = Path(__file__).resolve().parents[1]
    try:
        return str(Path(path).resolve().relative_to(root))
    except ValueError:
        return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=55000)
    parser.add_argument("--repeat", type=int, default=3, help="checks of each kind, alternating")
    parser.add_argument("--bytecode", choices=("cached", "none"), default="cached",
                        help="cached: as an installed package (the default); none: every module compiled each run")
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args()

    import tritonsmith

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kernels.py"
        path.write_text(generate(args.lines, seed=0))
        env = _environment(args.bytecode, Path(folder))
        _timed(path, env, "--jobs", "1")  # warm: bytecode and the file in the page cache
        one: list[float] = []
        forked: list[float] = []
        for _ in range(args.repeat):
            seconds, out_one = _timed(path, env, "--jobs", "1")
            one.append(seconds)
            seconds, out_forked = _timed(path, env)
            forked.append(seconds)
            if out_forked != out_one:
                raise SystemExit("the forked check's output differs from one process's")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    result = {
        "command": " ".join([Path(sys.executable).name, _relative(sys.argv[0]), *sys.argv[1:]]),
        "tritonsmith": _commit(Path(tritonsmith.__file__).parent),
        "machine": {"python": platform.python_version(), "cpus": cores, "load_after": os.getloadavg()},
        "lines": args.lines,
        "bytecode": args.bytecode,
        "jobs_1_s": one,
        "default_s": forked,
        "default_processes": cores,
    }
    print(f"{args.lines:,} lines: --jobs 1 median {statistics.median(one):.2f} s {one}; "
          f"default ({cores} processes) median {statistics.median(forked):.2f} s {forked}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
