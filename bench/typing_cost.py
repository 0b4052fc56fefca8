"""What launch typing costs: per file of a corpus, and on generated files of a shape that used to
blow it up (docs/benchmarks.md, "Launch typing linear in a file's launchers").

- corpus (optional): every file under the folder whose text holds `@triton` is checked once in
  this process; per file, its check's CPU time per line and the expressions the launch typer
  evaluated (`LaunchTyper.value` calls), in all and at most for one launch.
- `launchers N`: N launchers that share two wrapper functions (`y = alloc(x)` after
  `x = ensure(x)`), as fla's `modules/activations.py` has them; the typer's evaluations.
- `dispatchers N`: N host functions that may each call every other with the tensor, each
  launching; the check's CPU time (exponential before the typer's budget).

`--write DIR` writes the generated files there instead (`launchers-N.py`, `dispatchers-N.py`),
for `bench/lsp_latency.py --file` to type into.

Run it from outside the checkout to measure another tree (`PYTHONPATH=<tree>`, a `git worktree`
of the commit, so that its commit is recorded; the current directory comes first on the path).

Usage (`<checkout>`: this repository's folder)::

    cd /tmp && <checkout>/.venv/bin/python <checkout>/bench/typing_cost.py --corpus /tmp/realcorpus --json OUT
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_scaling import _commit  # noqa: E402

LAUNCHERS_HEAD = '''import torch
import triton
import triton.language as tl


def _alloc_output(x, contiguous=False):
    if contiguous:
        return x.new_empty(x.shape)
    return torch.empty_like(x)


def _ensure_contiguous(x):
    if x.stride(-1) != 1:
        return x.contiguous()
    return x
'''

LAUNCHER = '''

@triton.jit
def kernel_{i}(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def op_{i}(x, contiguous=False):
    x = _ensure_contiguous(x)
    y = _alloc_output(x, contiguous)
    kernel_{i}[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
    return y


def use_{i}():
    return op_{i}(torch.randn(1024, device="cuda", dtype=torch.{dtype}))
'''


def launchers(count: int, dtype: str = "float16") -> str:
    return LAUNCHERS_HEAD + "".join(LAUNCHER.format(i=i, dtype=dtype) for i in range(count))


def dispatchers(count: int) -> str:
    parts = ["import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\n"
             "def kernel(x_ptr, BLOCK: tl.constexpr):\n    offsets = tl.arange(0, BLOCK)\n"
             "    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) * 2)\n\n"]
    for i in range(count):
        calls = "".join(f"    if flag == {j}:\n        f{j}(x, flag - 1)\n" for j in range(count) if j != i)
        parts.append(f"\ndef f{i}(x, flag):\n{calls}    kernel[(1,)](x, BLOCK=128)\n\n")
    parts.append("\ndef use():\n    f0(torch.empty(8, dtype=torch.float16, device='cuda'), 3)\n")
    return "".join(parts)


class Counter:
    """Counts the typer's evaluations, in all and per launch."""

    def __init__(self) -> None:
        from tritonsmith.analysis import argtypes

        self.total = self.launch = self.most = 0
        value, typed = argtypes.LaunchTyper.value, argtypes.LaunchTyper.launch_types_read
        counter = self

        def counted(typer: Any, *args: Any) -> Any:
            counter.total += 1
            counter.launch += 1
            return value(typer, *args)

        def per_launch(typer: Any, *args: Any) -> Any:
            counter.launch = 0
            try:
                return typed(typer, *args)
            finally:
                counter.most = max(counter.most, counter.launch)

        argtypes.LaunchTyper.value = counted  # type: ignore[method-assign, assignment]
        argtypes.LaunchTyper.launch_types_read = per_launch  # type: ignore[method-assign, assignment]

    def reset(self) -> None:
        self.total = self.launch = self.most = 0


def check(source: str | bytes, counter: Counter) -> dict[str, float]:
    from tritonsmith.settings import Settings
    from tritonsmith.workspace import Workspace

    workspace = Workspace(None, Settings())
    counter.reset()
    began = time.process_time()
    workspace.check_source(source)
    return {"cpu_s": time.process_time() - began, "evaluations": counter.total, "most_per_launch": counter.most}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="a folder of Python files (those holding `@triton`)")
    parser.add_argument("--launchers", default="4,8,16,32")
    parser.add_argument("--dispatchers", default="4,8,12,30")
    parser.add_argument("--json", metavar="OUT")
    parser.add_argument("--write", type=Path, metavar="DIR", help="write the generated files here and stop")
    args = parser.parse_args()
    if args.write is not None:
        args.write.mkdir(parents=True, exist_ok=True)
        for n in map(int, args.launchers.split(",")):
            (args.write / f"launchers-{n}.py").write_text(launchers(n))
        for n in map(int, args.dispatchers.split(",")):
            (args.write / f"dispatchers-{n}.py").write_text(dispatchers(n))
        return

    import tritonsmith

    counter = Counter()
    check("import triton\n", counter)  # imports and packs loaded before anything is timed
    out: dict[str, Any] = {"tree": _commit(Path(tritonsmith.__file__).parent), "launchers": {}, "dispatchers": {}}
    for n in map(int, args.launchers.split(",")):
        out["launchers"][n] = check(launchers(n), counter)["evaluations"]
        print(f"launchers {n}: {out['launchers'][n]} evaluations")
    for n in map(int, args.dispatchers.split(",")):
        out["dispatchers"][n] = check(dispatchers(n), counter)
        print(f"dispatchers {n}: {out['dispatchers'][n]['cpu_s']:.2f} s")
    if args.corpus is not None:
        rows = []
        for path in sorted(args.corpus.rglob("*.py")):
            data = path.read_bytes()
            if b"@triton" in data:
                row = check(data, counter)
                rows.append({"file": str(path.relative_to(args.corpus)), "lines": data.count(b"\n") + 1, **row})
        cpu, lines = sum(r["cpu_s"] for r in rows), sum(r["lines"] for r in rows)
        mean = cpu / lines * 1e6
        big = sorted((r for r in rows if r["lines"] >= 100), key=lambda r: -r["cpu_s"] / r["lines"])
        out["corpus"] = {"files": len(rows), "lines": lines, "cpu_s": cpu, "us_per_line": mean, "rows": rows}
        print(f"corpus: {len(rows)} files, {lines} lines, {mean:.1f} µs a line; "
              f"most evaluations for one launch {max(r['most_per_launch'] for r in rows)}")
        for r in big[:5]:
            share = r["cpu_s"] / cpu
            print(f"  {r['cpu_s'] / r['lines'] * 1e6:6.1f} µs a line ({r['cpu_s'] / r['lines'] * 1e6 / mean:.1f}x, "
                  f"{share:.1%} of the check), {r['evaluations']} evaluations: {r['file']}")
        out["corpus"]["median_us_per_line"] = statistics.median(r["cpu_s"] / r["lines"] * 1e6 for r in rows)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
