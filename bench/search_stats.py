"""Does the tree earn its keep? Tree search, random search and the autotune-order grid at equal
budgets, over several seeds, on the whole suite (bench/problems), ranked by predicted sm_90 time.

    .venv/bin/python bench/search_stats.py --steps 32 --seeds 0,1,2,3,4 \
        --json docs/benchmarks/search-stats-1.json --plot docs/search-stats.png

Each method gets the same number of evaluated candidates per problem and seed:

- **tree**: `tritonsmith optimize`'s engine with the offline proposer (refinements one knob at a
  time, regenerations from the transformation library: fusion, single pass, block jumps, ...),
  selected by AdaExplore's UCB tree;
- **random**: each step a random point of the launch knobs (the first launched kernel's block
  size from the proposer's range and a random `num_warps`) applied to the original;
- **grid**: what `triton.autotune` does with a config list: block × `num_warps` in order, one
  config per step (the same for every seed).

Every candidate is verified against the problem's reference under the interpreter and predicted
(evaluator/predicted.py) by one `CandidateEvaluator` per problem, so the methods differ only in
which candidates they choose. A prediction is deterministic for these kernels (docs/benchmarks.md,
"Predicted sm_90 time": two runs agree to the last digit), so an evaluation is cached by the
candidate's text and shared by the methods and seeds: the budget counts candidates, not
evaluations. No confirmation runs (a predicted figure re-predicted is the same figure).

Per method, seed and budget (`--at`, default 8 and 32): the mean over problems of the best
predicted speedup found (each clamped at 10×, as AdaExplore's mean speedup), and Fast@1.2 (the
share of problems with a verified candidate at least 1.2× the start); across seeds, the mean with
a 95% t-interval; and tree minus random per seed (paired), with its interval. The JSON keeps every
curve, so everything re-derives.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import random
import re
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tritonsmith.evaluator.specs import HarnessSpec, detect_specs  # noqa: E402
from tritonsmith.search.engine import Search, SearchOptions  # noqa: E402
from tritonsmith.search.evaluate import CandidateEvaluator  # noqa: E402
from tritonsmith.search.journal import Journal  # noqa: E402
from tritonsmith.search.model import Evaluation, Outcome, Task  # noqa: E402
from tritonsmith.search.proposers.offline import OfflineProposer, launched_kernels  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from search_steps import _curve  # noqa: E402  (best so far after each step, as that figure draws it)

PROBLEMS = ROOT / "bench" / "problems"
BLOCKS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
WARPS = (1, 2, 4, 8)
CLAMP = 10.0
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}
"""Student's t, two-sided 95%, by degrees of freedom (more than 9: 1.96 is close enough)."""


class CachedEvaluator(CandidateEvaluator):
    """A `CandidateEvaluator` whose evaluations are remembered by the candidate's text."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cache: dict[str, Evaluation] = {}

    def evaluate(self, source: str) -> Evaluation:
        key = hashlib.sha256(source.encode()).hexdigest()
        if key not in self.cache:
            self.cache[key] = super().evaluate(source)
        return replace(self.cache[key])


_LAUNCH_BLOCK = re.compile(r"(?P<kernel>\w+)\[(?P<grid>[^\]]+)\]\((?P<args>[^)]*?)\b(?P<knob>BLOCK\w*)=(?P<value>\d+)\)")


def knob_variant(source: str, kernel: str, block: int, warps: int | None) -> str | None:
    """`source` with `kernel`'s launch block literal set to `block` (and `num_warps`), or None
    when the launch writes no literal block."""
    for match in _LAUNCH_BLOCK.finditer(source):
        if match.group("kernel") == kernel:
            extra = f", num_warps={warps}" if warps else ""
            replacement = (f"{kernel}[{match.group('grid')}]({match.group('args')}{match.group('knob')}={block}"
                           f"{extra})")
            return source[:match.start()] + replacement + source[match.end():]
    return None


def _speedup(evaluation: Evaluation) -> float | None:
    return evaluation.speedup if evaluation.outcome is Outcome.CORRECT else None


def run_problem(problem: Path, steps: int, seeds: list[int]) -> dict[str, Any]:
    source = problem.read_text()
    work = Path(tempfile.mkdtemp(prefix="tritonsmith-stats-"))
    (work / "pyproject.toml").write_text("")
    path = work / problem.name
    path.write_text(source)
    (spec,) = detect_specs(path)
    kernel = launched_kernels(source, "")[0]
    kind = f"harness:{spec.launcher}" if isinstance(spec, HarnessSpec) else "kernelbench"
    task = Task(path=str(path), kernel=kernel, source=source, spec=kind, device="interpreter", objective="predicted")
    curves: dict[str, list[list[float]]] = {"tree": [], "random": [], "grid": []}
    began = time.perf_counter()
    with CachedEvaluator(task, spec) as evaluator:
        start = evaluator.evaluate(source)
        if start.outcome is not Outcome.CORRECT or start.predicted_s is None:
            return {"problem": problem.stem, "error": start.message, "curves": curves}
        for seed in seeds:
            journal = Journal(work)
            search = Search(task, OfflineProposer(random.Random(seed)), evaluator, journal,
                            SearchOptions(steps=steps, seed=seed, confirmations=0))
            result = search.run()
            journal.close()
            nodes = sorted((n for n in result.tree.evaluated() if n.id > 0), key=lambda n: n.id)[:steps]
            tree = [_speedup(n.evaluation) if n.evaluation is not None else None for n in nodes]
            curves["tree"].append(_curve(tree + [None] * (steps - len(tree))))
            rng = random.Random(seed)
            picks = []
            for _ in range(steps):
                variant = knob_variant(source, kernel, rng.choice(BLOCKS), rng.choice((None, *WARPS)))
                picks.append(_speedup(evaluator.evaluate(variant)) if variant is not None else None)
            curves["random"].append(_curve(picks))
        grid = []
        for block, warps in list(itertools.product(BLOCKS, WARPS))[:steps]:
            variant = knob_variant(source, kernel, block, warps)
            grid.append(_speedup(evaluator.evaluate(variant)) if variant is not None else None)
        curves["grid"] = [_curve(grid)] * len(seeds)
    return {"problem": problem.stem, "kernel": kernel, "start_predicted_s": start.predicted_s, "curves": curves,
            "evaluations": len(evaluator.cache), "seconds": round(time.perf_counter() - began, 1)}


def interval(values: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the mean with its 95% t-interval."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, mean, mean
    half = T95.get(len(values) - 1, 1.96) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def summarise(rows: list[dict[str, Any]], seeds: list[int], at: list[int]) -> dict[str, Any]:
    """Per budget and method: mean speedup (clamped) and Fast@1.2 across problems, per seed,
    then across seeds with 95% intervals; and tree minus random, paired by seed."""
    done = [r for r in rows if not r.get("error")]
    out: dict[str, Any] = {}
    for budget in at:
        per_method: dict[str, dict[str, list[float]]] = {}
        for method in ("tree", "random", "grid"):
            means, fasts = [], []
            for i in range(len(seeds)):
                best = [min(CLAMP, r["curves"][method][i][budget - 1]) for r in done]
                means.append(statistics.fmean(best))
                fasts.append(sum(1 for b in best if b >= 1.2) / len(best))
            per_method[method] = {"mean_speedup": means, "fast_1_2": fasts}
        entry: dict[str, Any] = {m: {k: {"per_seed": v, "mean_ci": interval(v)} for k, v in d.items()}
                                 for m, d in per_method.items()}
        entry["tree_minus_random"] = {
            k: interval([t - r for t, r in zip(per_method["tree"][k], per_method["random"][k], strict=True)])
            for k in ("mean_speedup", "fast_1_2")}
        out[str(budget)] = entry
    return out


def plot(rows: list[dict[str, Any]], out: Path) -> None:
    """Mean over problems of the best speedup so far (clamped), per method: the mean over seeds
    and its 95% band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [r for r in rows if not r.get("error")]
    figure, axis = plt.subplots(figsize=(6.5, 4))
    for method in ("tree", "random", "grid"):
        seeds = len(done[0]["curves"][method])
        steps = len(done[0]["curves"][method][0])
        per_seed = [[statistics.fmean(min(CLAMP, r["curves"][method][i][s]) for r in done) for s in range(steps)]
                    for i in range(seeds)]
        bands = [interval([per_seed[i][s] for i in range(seeds)]) for s in range(steps)]
        x = range(1, steps + 1)
        line, = axis.plot(x, [b[0] for b in bands], label=f"{method} ({seeds} seeds)")
        axis.fill_between(x, [b[1] for b in bands], [b[2] for b in bands], color=line.get_color(), alpha=0.2)
    axis.set_xlabel("candidates evaluated")
    axis.set_ylabel("mean best speedup over the suite\n(predicted sm_90 time, clamped at 10×)")
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--at", default="8,32", help="the budgets the summary reports")
    parser.add_argument("--only", nargs="*", help="problem names (default: all of bench/problems)")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    at = [min(args.steps, int(a)) for a in args.at.split(",")]
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    for problem in sorted(PROBLEMS.glob("*.py")):
        if args.only and problem.stem not in args.only:
            continue
        rows.append(run_problem(problem, args.steps, seeds))
        row = rows[-1]
        finals = {m: [c[-1] for c in row["curves"][m]] for m in row["curves"]}
        print(json.dumps({"problem": row["problem"], "error": row.get("error"), "final": finals,
                          "evaluations": row.get("evaluations"), "seconds": row.get("seconds")}), flush=True)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "command": "bench/search_stats.py " + " ".join(sys.argv[1:]), "steps": args.steps, "seeds": seeds,
            "measured": "predicted sm_90 time (profiled under the interpreter, CPU)", "clamp": CLAMP,
            "seconds": round(time.perf_counter() - began, 1), "rows": rows,
            "summary": summarise(rows, seeds, at) if any(not r.get("error") for r in rows) else None,
        }, indent=1) + "\n")
    if args.plot and rows:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
