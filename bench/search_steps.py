"""Best speedup against steps: the offline tree search, random search over the same space, and
what `triton.autotune` would do over the same configs, on the same kernels, in the same run.

    .venv/bin/python bench/search_steps.py --steps 10 --seeds 3 --out docs/search-steps.png --json bench/results/search_steps.json

Each method gets the same number of evaluated candidates ("steps") on each kernel, and every
candidate is compiled, verified against the kernel's harness and timed by the same evaluator
(tritonsmith/search/evaluate.py), so the curves differ only in which candidates they choose:

- **tree search**: `tritonsmith optimize`'s engine with the offline proposer (refinements one
  knob at a time, regenerations from the library, selected by AdaExplore's UCB tree);
- **random search**: each step a random point of the same space (each knob of the launch set
  to a random value from the proposer's own ranges) applied to the original kernel;
- **autotune grid**: what `triton.autotune` does with a config list: time every config of the
  grid (block size × num_warps) in order and keep the fastest; one config per step.

Without a GPU all times are interpreter times (the search minimises them, DESIGN.md); on a GPU
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


def run_kernel(fixture: Path, kernel: str, steps: int, device: str, seed: int) -> dict[str, list[float]]:
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
        result = search.run()
        nodes = [n for n in result.tree.evaluated() if n.id > 0]
        curves["tree search"] = _curve([n.evaluation.speedup if n.evaluation and n.evaluation.outcome is Outcome.CORRECT
                                        else None for n in nodes])
        journal.close()

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

        grid = list(itertools.product(BLOCKS, WARPS))[:steps]  # triton.autotune times its configs in order
        grid_speedups = []
        for block, warps in grid:
            evaluation = evaluator.evaluate(_variant(source, knob, block, warps))
            grid_speedups.append(evaluation.speedup if evaluation.outcome is Outcome.CORRECT else None)
        curves["autotune grid"] = _curve(grid_speedups)
    return curves


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--seeds", type=int, default=3, help="runs per method and kernel (seeds 0..N-1); curves are means")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "search-steps.png")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    device = "gpu" if default_mode() == "gpu" else "interpreter"
    fixtures = ROOT / "tests" / "search" / "fixtures"
    results: dict[str, dict[str, list[list[float]]]] = {}
    began = time.perf_counter()
    for name, kernel in KERNELS:
        runs: dict[str, list[list[float]]] = {}
        for seed in range(args.seeds):
            for method, curve in run_kernel(fixtures / name, kernel, args.steps, device, seed).items():
                runs.setdefault(method, []).append(curve)
                print(f"{name:18} {method:14} seed {seed} " + " ".join(f"{v:5.2f}" for v in curve), flush=True)
        results[name] = runs
    print(f"{time.perf_counter() - began:.0f} s in all ({device})")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"device": device, "steps": args.steps, "seeds": args.seeds,
                                         "results": results}, indent=2))
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
        axis.set_title(name)
        axis.set_xlabel("candidates evaluated")
        axis.set_ylabel(f"best speedup ({'interpreter' if device != 'gpu' else 'GPU'} time)")
        axis.grid(alpha=0.3)
        axis.legend()
    figure.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out, dpi=110)
    print(f"plot: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
