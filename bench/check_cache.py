"""`tritonsmith check` on a corpus of real Triton code: cold, cached, one file changed; beside
pyflakes and ruff in the same run.

The corpus is a folder this script does not fetch or commit (see docs/benchmarks.md, "check's
result cache", for the repositories and commits): the files under it whose text holds
`@triton` are checked. The folder is copied to a temporary workspace (with a `.tritonsmith/`,
so the cache lives there and starts empty), and per repeat, in this order:

- `pyflakes`: `python -m pyflakes FILES`;
- `ruff`: `ruff check --no-cache --select E,F,W FILES` (ruff's own default rules and more);
- `tritonsmith --no-cache`: `tritonsmith check --no-cache FILES` (the default: one process per core);
- `tritonsmith --no-cache --jobs 1`;
- `tritonsmith cold`: the cache folder removed, then a check that fills it;
- `tritonsmith cached`: the same files again, unchanged;
- `tritonsmith one changed`: one file (another each repeat) gets a line appended, then a check.

Each is a subprocess; its wall time and its CPU time (user + sys, from `RUSAGE_CHILDREN`) are
recorded. Python runs with its bytecode cached in a temporary `PYTHONPYCACHEPREFIX` (filled by one
untimed run of each command), as an installed package has it. Every tritonsmith run writes JSON
findings; the cached and one-changed runs' findings are compared with a `--no-cache` run of the
same texts (they must be identical).

Usage::

    .venv/bin/python bench/check_cache.py /tmp/realcorpus --repeat 2 --json docs/benchmarks/check-cache-1.json
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_scaling import _commit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], *, cwd: Path, env: dict[str, str]) -> tuple[float, float, bytes]:
    """(wall s, CPU s, stdout) of one subprocess."""
    cpu, began = _children_cpu(), time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=1200)
    wall = time.perf_counter() - began
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv[:4]} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return wall, _children_cpu() - cpu, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", help="a folder of Python files (those holding `@triton` are checked)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", metavar="OUT", help="write the raw measurements here")
    args = parser.parse_args()

    corpus = Path(args.corpus).resolve()
    ruff = shutil.which("ruff", path=str(BIN)) or shutil.which("ruff")
    with tempfile.TemporaryDirectory(prefix="check-cache-") as scratch:
        work = Path(scratch) / "corpus"
        shutil.copytree(corpus, work, ignore=shutil.ignore_patterns(".tritonsmith", ".git", "__pycache__"))
        (work / ".tritonsmith").mkdir(exist_ok=True)
        files = sorted(str(p.relative_to(work)) for p in work.rglob("*.py")
                       if "@triton" in p.read_text(encoding="utf-8", errors="replace"))
        lines = sum(len((work / f).read_bytes().splitlines()) for f in files)
        env = dict(os.environ, PYTHONPYCACHEPREFIX=str(Path(scratch) / "pycache"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        ts = [str(BIN / "python"), "-m", "tritonsmith", "check", "--exit-zero", "--format", "json"]
        commands = {
            "pyflakes": [str(BIN / "python"), "-m", "pyflakes", *files],
            **({"ruff": [ruff, "check", "--no-cache", "--select", "E,F,W", "--exit-zero", "--quiet", *files]}
               if ruff else {}),
            "tritonsmith --no-cache": [*ts, "--no-cache", *files],
            "tritonsmith --no-cache --jobs 1": [*ts, "--no-cache", "--jobs", "1", *files],
        }
        cache = work / ".tritonsmith" / "cache"
        for argv in commands.values():  # untimed: bytecode compiled, files in the page cache
            timed(argv, cwd=work, env=env)
        rows: list[dict[str, object]] = []
        mismatches: list[str] = []
        for repeat in range(args.repeat):
            for name, argv in commands.items():
                wall, cpu, _ = timed(argv, cwd=work, env=env)
                rows.append({"repeat": repeat, "tool": name, "wall_s": wall, "cpu_s": cpu})
            shutil.rmtree(cache, ignore_errors=True)
            wall, cpu, _ = timed([*ts, *files], cwd=work, env=env)
            rows.append({"repeat": repeat, "tool": "tritonsmith cold", "wall_s": wall, "cpu_s": cpu})
            wall, cpu, cached = timed([*ts, *files], cwd=work, env=env)
            rows.append({"repeat": repeat, "tool": "tritonsmith cached", "wall_s": wall, "cpu_s": cpu})
            if cached != timed([*ts, "--no-cache", *files], cwd=work, env=env)[2]:
                mismatches.append(f"repeat {repeat}: cached")
            changed = work / files[(repeat * 97) % len(files)]
            with changed.open("a", encoding="utf-8") as handle:
                handle.write(f"\n# edited by bench/check_cache.py, repeat {repeat}\n")
            wall, cpu, one = timed([*ts, *files], cwd=work, env=env)
            rows.append({"repeat": repeat, "tool": "tritonsmith one changed", "wall_s": wall, "cpu_s": cpu,
                         "changed": str(changed.relative_to(work))})
            if one != timed([*ts, "--no-cache", *files], cwd=work, env=env)[2]:
                mismatches.append(f"repeat {repeat}: one changed")

    lines_table = table(rows)
    print(f"{len(files)} files, {lines} lines; median of {args.repeat} (range)")
    print("\n".join(lines_table))
    print("findings identical with and without the cache" if not mismatches else f"MISMATCH: {mismatches}")
    if args.json:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "tritonsmith"],
                               capture_output=True, text=True).stdout.strip()
        Path(args.json).write_text(json.dumps({
            "kind": "check_cache", "corpus": corpus.name, "files": len(files), "lines": lines,
            "commit": commit, "dirty": bool(dirty),
            # The tree measured, when another than the checkout's was put first on the path (a
            # before run): its commit, where it is a `git worktree`.
            "tree": _commit(Path(os.environ["PYTHONPATH"].split(os.pathsep)[0])) if os.environ.get("PYTHONPATH")
            else None, "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
            "rows": rows, "table": lines_table, "mismatches": mismatches,
        }, indent=1) + "\n")
    if mismatches:
        raise SystemExit(1)


def table(rows: list[dict[str, object]]) -> list[str]:
    """Per tool, the median wall and CPU seconds over the repeats, with their range."""
    out = ["| tool | wall s, median (range) | CPU s, median (range) |", "|---|---:|---:|"]
    for tool in dict.fromkeys(str(r["tool"]) for r in rows):
        walls = [float(r["wall_s"]) for r in rows if r["tool"] == tool]  # type: ignore[arg-type]
        cpus = [float(r["cpu_s"]) for r in rows if r["tool"] == tool]  # type: ignore[arg-type]
        out.append(f"| {tool} | {statistics.median(walls):.2f} ({min(walls):.2f}-{max(walls):.2f}) | "
                   f"{statistics.median(cpus):.2f} ({min(cpus):.2f}-{max(cpus):.2f}) |")
    return out


if __name__ == "__main__":
    main()
