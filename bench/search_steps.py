"""Best speedup against steps: the offline tree search, random search over the same space, and
what `triton.autotune` would do over the same configs, on the same kernels, in the same run.

    .venv/bin/python bench/search_steps.py --steps 10 --seeds 3 --out docs/search-steps.png \
        --json docs/benchmarks/search_steps.json

Each method gets the same number of evaluated candidates ("steps") on each kernel, and every
candidate is compiled, verified against the kernel's harness and timed by the same evaluator
(tritonsmith/search/evaluate.py), so the curves differ only in which candidates they choose:

- **tree search**: `tritonsmith optimize`'s engine with the offline proposer (refinements one
  knob at a time, regenerations from the library, selected by AdaExplore's UCB tree);
- **random search**: each step a random point of the same space (each knob of the launch set
  to a random value from the proposer's own ranges) applied to the original kernel;
- **autotune grid**: what `triton.autotune` does with a config list: time every config of the
  grid (block size × num_warps) in order and keep the fastest; one config per step.

The curves are screening figures (a few timed calls per candidate, each against the original's
time from the start: what steers a search, not a claim). At the end, each method's best candidate
is *confirmed* as `tritonsmith optimize` confirms its result (evaluator/confirm.py: re-timed
against the original in alternating rounds in fresh workers, with an A/A comparison for the
noise floor); the JSON keeps every confirmation, and the table in docs/benchmarks.md shows them.

Without a GPU all times are interpreter times (the search minimises them when asked to; DESIGN.md, "What a CPU search optimises"); on a GPU
the same script measures GPU time. Kernels: tests/search/fixtures/*.py (launched with block
sizes far too small, so there is something to find).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tritonsmith.evaluator.specs import detect_specs  # noqa: E402
from tritonsmith.evaluator.verify import default_mode  # noqa: E402
from tritonsmith.search.engine import Search, SearchOptions  # noqa: E402
from tritonsmith.search.evaluate import CandidateEvaluator  # noqa: E402
from tritonsmith.search.journal import Journal  # noqa: E402
from tritonsmith.search.model import Outcome, Task  # noqa: E402
from tritonsmith.search.proposers.offline import OfflineProposer, config_moves  # noqa: E402

KERNELS = [("slow_add.py", "add_kernel"), ("slow_softmax.py", "softmax_kernel")]
BLOCKS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
WARPS = (1, 2, 4, 8)


def _block_knob(source: str, kernel: str) -> str:
    """The launch keyword that sets the kernel's block size (e.g. `BLOCK_SIZE=16`)."""
    for move in config_moves(source, kernel):
        if "at the launch (was" in move.description and not move.description.startswith("num_"):
            return move.description.split("=")[0]
    raise SystemExit(f"{kernel}: no block-size keyword at its launch")


def _variant(source: str, knob: str, block: int, warps: int | None) -> str:
    import re

    launch = re.search(rf"{knob}=\d+\)", source)
    assert launch is not None
    extra = f", num_warps={warps}" if warps else ""
    return source[:launch.start()] + f"{knob}={block}{extra})" + source[launch.end():]


def _curve(speedups: list[float | None]) -> list[float]:
    best, out = 1.0, []
    for value in speedups:
        best = max(best, value or 0.0)
        out.append(best)
    return out


def _best(sources: list[tuple[str, float | None]], original: str) -> str | None:
    """The fastest candidate by screening that is not the original."""
    ranked = sorted(((s, v) for s, v in sources if v is not None and s != original), key=lambda sv: -(sv[1] or 0.0))
    return ranked[0][0] if ranked else None


def run_kernel(fixture: Path, kernel: str, steps: int, device: str, seed: int,
               confirmations: dict[str, dict[str, object] | None] | None = None) -> dict[str, list[float]]:
    source = fixture.read_text()
    work = Path(tempfile.mkdtemp(prefix="tritonsmith-bench-"))
    (work / "pyproject.toml").write_text("")
    path = work / fixture.name
    path.write_text(source)
    (spec,) = detect_specs(path)
    task = Task(path=str(path), kernel=kernel, source=source, spec=f"harness:{spec.name}", device=device)
    curves: dict[str, list[float]] = {}

    with CandidateEvaluator(task, spec) as evaluator:  # one evaluator: the same baseline for all
        evaluator.evaluate(source)
        journal = Journal(work)
        search = Search(task, OfflineProposer(random.Random(seed)), evaluator, journal, SearchOptions(steps=steps, seed=seed))
        result = search.run()  # confirms its own best, as `tritonsmith optimize` does
        nodes = [n for n in result.tree.evaluated() if n.id > 0]
        curves["tree search"] = _curve([n.evaluation.speedup if n.evaluation and n.evaluation.outcome is Outcome.CORRECT
                                        else None for n in nodes])
        journal.close()
        found: dict[str, str | None] = {}
        if confirmations is not None:
            confirmations["tree search"] = result.confirmation.to_json() if result.confirmation is not None else None

        knob = _block_knob(source, kernel)
        rng = random.Random(seed)
        seen: dict[str, float | None] = {}
        random_speedups = []
        for _ in range(steps):
            candidate = _variant(source, knob, rng.choice(BLOCKS), rng.choice((None, *WARPS)))
            if candidate not in seen:
                evaluation = evaluator.evaluate(candidate)
                seen[candidate] = evaluation.speedup if evaluation.outcome is Outcome.CORRECT else None
            random_speedups.append(seen[candidate])
        curves["random search"] = _curve(random_speedups)
        found["random search"] = _best(list(seen.items()), source)

        grid = list(itertools.product(BLOCKS, WARPS))[:steps]  # triton.autotune times its configs in order
        grid_speedups = []
        grid_sources = []
        for block, warps in grid:
            variant = _variant(source, knob, block, warps)
            evaluation = evaluator.evaluate(variant)
            grid_speedups.append(evaluation.speedup if evaluation.outcome is Outcome.CORRECT else None)
            grid_sources.append((variant, grid_speedups[-1]))
        curves["autotune grid"] = _curve(grid_speedups)
        found["autotune grid"] = _best(grid_sources, source)
        if confirmations is not None:
            for method, best in found.items():
                confirmations[method] = evaluator.confirm(source, best).to_json() if best is not None else None
    return curves


def plot(results: dict[str, dict[str, list[list[float]]]],
         confirmed: dict[str, dict[str, list[dict[str, object] | None]]], device: str, out: Path) -> None:
    """The curves (screening, mean and min-max band per method) and, right of them, each
    method's confirmed speedups (mean, with the lowest and highest seed's)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 4), squeeze=False)
    for axis, (name, runs) in zip(axes[0], results.items(), strict=True):
        for method, curves in runs.items():
            steps = range(1, len(curves[0]) + 1)
            mean = [sum(values) / len(values) for values in zip(*curves, strict=True)]
            line, = axis.plot(steps, mean, marker="o", markersize=3, label=f"{method} (mean of {len(curves)})")
            axis.fill_between(steps, [min(v) for v in zip(*curves, strict=True)],
                              [max(v) for v in zip(*curves, strict=True)], color=line.get_color(), alpha=0.15)
            values = [float(c["speedup"]) for c in confirmed.get(name, {}).get(method, [])  # type: ignore[arg-type]
                      if c is not None and isinstance(c.get("speedup"), (int, float))]
            if values:
                x = len(curves[0]) + 0.6
                middle = sum(values) / len(values)
                axis.errorbar([x], [middle], yerr=[[middle - min(values)], [max(values) - middle]], fmt="D",
                              color=line.get_color(), capsize=3, markersize=5)
        axis.set_title(name)
        axis.set_xlabel("candidates evaluated (◆ right: the best, confirmed)")
        axis.set_ylabel(f"best speedup so far, screening ({'interpreter' if device != 'gpu' else 'GPU'} time)")
        axis.grid(alpha=0.3)
        axis.legend()
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)


def _load() -> list[float]:
    import os

    return [round(v, 2) for v in os.getloadavg()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--seeds", type=int, default=3, help="runs per method and kernel (seeds 0..N-1); curves are means")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "search-steps.png")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--replot", type=Path, metavar="JSON", help="only draw --out again from a run's --json")
    args = parser.parse_args()
    if args.replot:
        data = json.loads(args.replot.read_text())
        plot(data["results"], data.get("confirmations", {}), data["device"], args.out)
        print(f"plot: {args.out}")
        return 0
    device = "gpu" if default_mode() == "gpu" else "interpreter"
    fixtures = ROOT / "tests" / "search" / "fixtures"
    results: dict[str, dict[str, list[list[float]]]] = {}
    confirmed: dict[str, dict[str, list[dict[str, object] | None]]] = {}
    load_before = _load()
    began = time.perf_counter()
    for name, kernel in KERNELS:
        runs: dict[str, list[list[float]]] = {}
        for seed in range(args.seeds):
            confirmations: dict[str, dict[str, object] | None] = {}
            for method, curve in run_kernel(fixtures / name, kernel, args.steps, device, seed, confirmations).items():
                runs.setdefault(method, []).append(curve)
                confirmation = confirmations.get(method)
                confirmed.setdefault(name, {}).setdefault(method, []).append(confirmation)
                print(f"{name:18} {method:14} seed {seed} " + " ".join(f"{v:5.2f}" for v in curve)
                      + f" | confirmed: {confirmation['text'] if confirmation else 'nothing to confirm'}", flush=True)
        results[name] = runs
    seconds = time.perf_counter() - began
    print(f"{seconds:.0f} s in all ({device})")
    if args.json:
        import os
        import platform

        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "device": device, "steps": args.steps, "seeds": args.seeds, "seconds": round(seconds, 1),
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                        "load_before": load_before, "load_after": _load(), "date": time.strftime("%Y-%m-%d %H:%M")},
            "curves": "screening: best speedup so far after each candidate, against the original's "
                      "time from the start (unconfirmed)",
            "results": results, "confirmations": confirmed}, indent=2))
    plot(results, confirmed, device, args.out)
    print(f"plot: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
