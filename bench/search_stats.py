"""Does the tree earn its keep? Tree search, random search and the autotune-order grid at equal
budgets, over several seeds, on the whole suite (bench/problems), ranked by predicted sm_90 time.

    .venv/bin/python bench/search_stats.py --steps 32 --seeds 0,1,2,3,4 \
        --json docs/benchmarks/search-stats-1.json --plot docs/search-stats.png

Each method gets the same number of evaluated candidates per problem and seed:

- **tree**: `tritonsmith optimize`'s engine with the offline proposer (refinements one knob at a
  time, regenerations from the transformation library: fusion, single pass, block jumps, ...),
  selected by AdaExplore's UCB tree;
- **random-moves**: the same engine and proposer with the tree's selection replaced by a uniform
  draw among the kernels evaluated so far (or the root, for a regeneration): the same moves,
  chosen without the tree, so tree minus random-moves is what the tree's choices are worth;
- **random**: each step a random point of the launch knobs applied to the original: every block
  size of every launch (wherever it is written) drawn from 16-4096 (16-256 for each of a tiled
  launch's), and a random `num_warps` or none; this is random search as a user would run it;
- **grid**: what `triton.autotune` does with a config list: block × `num_warps` in order, one
  config per step, every launch's blocks alike (the same for every seed).

Every candidate is verified against the problem's reference under the interpreter and predicted
(evaluator/predicted.py) by one `CandidateEvaluator` per problem, so the methods differ only in
which candidates they choose. A prediction is deterministic for these kernels (docs/benchmarks.md,
"Predicted sm_90 time": two runs agree to the last digit), so an evaluation is cached by the
candidate's text and shared by the methods and seeds: the budget counts candidates, not
evaluations. No confirmation runs (a predicted figure re-predicted is the same figure).

Per method, seed and budget (`--at`, default 8 and 32): the mean over problems of the best
predicted speedup found (each clamped at 10×, as AdaExplore's mean speedup), and Fast@1.2 (the
share of problems with a verified candidate at least 1.2× the start); across seeds, the mean with
a 95% t-interval; and tree minus random and tree minus random-moves per seed (paired), with
their intervals. The JSON keeps every curve, so everything re-derives.

`--cache DIR` keeps every evaluation (JSON lines per problem) for a later run with other seeds;
`--only` and `--combine` split the problems across processes (one per core) and merge them.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import itertools
import json
import math
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tritonsmith.analysis import Document  # noqa: E402
from tritonsmith.evaluator.specs import HarnessSpec, detect_specs  # noqa: E402
from tritonsmith.search.engine import Search, SearchOptions  # noqa: E402
from tritonsmith.search.evaluate import CandidateEvaluator  # noqa: E402
from tritonsmith.search.journal import Journal  # noqa: E402
from tritonsmith.search.model import Evaluation, Outcome, StepKind, Task  # noqa: E402
from tritonsmith.search.proposers.offline import OfflineProposer, launch_blocks, launched_kernels  # noqa: E402
from tritonsmith.search.tree import Node, Tree  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from search_steps import _curve  # noqa: E402  (best so far after each step, as that figure draws it)

PROBLEMS = ROOT / "bench" / "problems"
BLOCKS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
WARPS = (1, 2, 4, 8)
CLAMP = 10.0
METHODS = ("tree", "random-moves", "random", "grid")
SLOW = {"linear_bias_relu": "its tiled matmul's large tiles take up to the 300 s compile timeout each for sm_90 "
                            "on this machine: four methods, five seeds and 32 steps would take hours"}
"""Problems left out unless `--include-slow`, and why."""
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}
"""Student's t, two-sided 95%, by degrees of freedom (more than 9: 1.96 is close enough)."""


class CachedEvaluator(CandidateEvaluator):
    """A `CandidateEvaluator` whose evaluations are remembered by the candidate's text, and
    appended to `store` (JSON lines) when given, so a second run with other seeds evaluates only
    the candidates the first did not."""

    def __init__(self, *args: Any, store: Path | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cache: dict[str, Evaluation] = {}
        self.store = store
        self.evaluated = 0  # evaluations this run made (not loaded from the store)
        if store is not None and store.exists():
            for line in store.read_text().splitlines():
                row = json.loads(line)
                fields = row["evaluation"]
                fields["outcome"] = Outcome(fields["outcome"])
                fields["spread"] = tuple(fields["spread"]) if fields["spread"] else None
                self.cache[row["key"]] = Evaluation(**fields)

    def evaluate(self, source: str) -> Evaluation:
        key = hashlib.sha256(source.encode()).hexdigest()
        if key not in self.cache:
            self.cache[key] = super().evaluate(source)
            self.evaluated += 1
            if self.store is not None:
                fields = asdict(self.cache[key])
                fields["outcome"] = fields["outcome"].value
                with self.store.open("a") as out:
                    out.write(json.dumps({"key": key, "evaluation": fields}) + "\n")
        return replace(self.cache[key])


def knob_variant(source: str, choose: Callable[[str, int], int], warps: int | None) -> str | None:
    """`source` with every block size of every launch set by `choose(knob, blocks_in_launch)`
    (where it is written: the literal at the launch, or the constant or local it names), and
    each launch's `num_warps` set to `warps` (None: left as written); None when no launch
    writes a block size."""
    edits: dict[int, tuple[int, str]] = {}  # start byte -> (end byte, new text)
    for _, launch, blocks in launch_blocks(source):
        for name, target, _ in blocks:
            edits[target.start_byte] = (target.end_byte, str(choose(name, len(blocks))))
        if not blocks or warps is None:
            continue
        if "num_warps" in launch.keywords:
            value = launch.keywords["num_warps"][1]
            edits[value.start_byte] = (value.end_byte, str(warps))
        elif (arguments := launch.node.child_by_field_name("arguments")) is not None and arguments.named_children:
            end = arguments.named_children[-1].end_byte
            edits[end] = (end, f", num_warps={warps}")
    if not edits:
        return None
    data = Document(source).source  # the bytes the tree's offsets count
    for begin, (finish, new) in sorted(edits.items(), reverse=True):
        data = data[:begin] + new.encode() + data[finish:]
    return data.decode("utf-8")


def blocks_for(count: int) -> tuple[int, ...]:
    """The block sizes a launch's knob is drawn from: 16-4096 for a 1-D block, 16-256 for each
    of a tiled launch's (BLOCK_M/N/K, BLOCK_R/C), as autotune spaces for such kernels run."""
    return BLOCKS if count == 1 else tuple(b for b in BLOCKS if b <= 256)


def random_select(tree: Tree, rng: random.Random) -> tuple[Node, StepKind]:
    """The tree's selection replaced by a uniform draw: any evaluated kernel, or the dummy root
    (a regeneration from the pool), with the tree's own refine-or-regenerate rule."""
    nodes = [tree.root, *(n for n in tree.evaluated() if n.evaluation is not None and n.source)]
    node = rng.choice(nodes)
    return node, tree.step_kind(node, rng)


def _speedup(evaluation: Evaluation) -> float | None:
    return evaluation.speedup if evaluation.outcome is Outcome.CORRECT else None


def run_problem(problem: Path, steps: int, seeds: list[int], cache: Path | None = None,
                methods: tuple[str, ...] = METHODS) -> dict[str, Any]:
    source = problem.read_text()
    # The same path in every run: the source path is part of the task, so a stored evaluation
    # stays the evaluation of this candidate.
    work = Path(tempfile.gettempdir()) / "tritonsmith-stats" / problem.stem
    work.mkdir(parents=True, exist_ok=True)
    (work / "pyproject.toml").write_text("")
    for old in work.glob(".tritonsmith"):
        shutil.rmtree(old)
    path = work / problem.name
    path.write_text(source)
    (spec,) = detect_specs(path)
    kernel = launched_kernels(source, "")[0]
    kind = f"harness:{spec.launcher}" if isinstance(spec, HarnessSpec) else "kernelbench"
    task = Task(path=str(path), kernel=kernel, source=source, spec=kind, device="interpreter", objective="predicted")
    curves: dict[str, list[list[float]]] = {method: [] for method in methods}
    began = time.perf_counter()
    store = cache / f"{problem.stem}.jsonl" if cache is not None else None
    if store is not None:
        store.parent.mkdir(parents=True, exist_ok=True)
    with CachedEvaluator(task, spec, store=store) as evaluator:
        start = evaluator.evaluate(source)
        # Loaded from the store, the start set no baseline: every speedup is against it.
        evaluator.baseline_predicted_s = evaluator.baseline_predicted_s or start.predicted_s
        evaluator.baseline_ms = evaluator.baseline_ms or start.time_ms
        if start.outcome is not Outcome.CORRECT or start.predicted_s is None:
            return {"problem": problem.stem, "error": start.message, "curves": curves}

        def measured(variant: str | None) -> float | None:
            return _speedup(evaluator.evaluate(variant)) if variant is not None else None

        for seed in seeds:
            for method in (m for m in ("tree", "random-moves") if m in methods):
                journal = Journal(work)
                search = Search(task, OfflineProposer(random.Random(seed)), evaluator, journal,
                                SearchOptions(steps=steps, seed=seed, confirmations=0))
                if method == "random-moves":  # the same moves, chosen without the tree
                    search.tree.select = functools.partial(random_select, search.tree)  # type: ignore[method-assign]
                result = search.run()
                journal.close()
                nodes = sorted((n for n in result.tree.evaluated() if n.id > 0), key=lambda n: n.id)[:steps]
                found = [_speedup(n.evaluation) if n.evaluation is not None else None for n in nodes]
                curves[method].append(_curve(found + [None] * (steps - len(found))))
            rng = random.Random(seed)
            if "random" not in methods:
                continue
            curves["random"].append(_curve([
                measured(knob_variant(source, lambda _, count, rng=rng: rng.choice(blocks_for(count)), rng.choice((None, *WARPS))))
                for _ in range(steps)]))
        grid = [] if "grid" not in methods else [measured(knob_variant(source, lambda _, count, block=block: min(block, max(blocks_for(count))), warps))
                for block, warps in list(itertools.product(BLOCKS, WARPS))[:steps]]
        if grid:
            curves["grid"] = [_curve(grid)] * len(seeds)
    return {"problem": problem.stem, "kernel": kernel, "start_predicted_s": start.predicted_s, "curves": curves,
            "evaluations": len(evaluator.cache), "evaluated_this_run": evaluator.evaluated, "seconds": round(time.perf_counter() - began, 1)}


def log_interval(values: list[float]) -> tuple[float, float, float]:
    """(geometric mean, low, high): the 95% t-interval of the logs, back on the ratio scale (for
    speedups and their ratios, which multiply)."""
    mean, low, high = interval([math.log(v) for v in values])
    return math.exp(mean), math.exp(low), math.exp(high)


def _methods(rows: list[dict[str, Any]]) -> list[str]:
    """The methods every row ran."""
    return [m for m in METHODS if rows and all(r["curves"].get(m) for r in rows)]


def interval(values: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the mean with its 95% t-interval."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, mean, mean
    half = T95.get(len(values) - 1, 1.96) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def summarise(rows: list[dict[str, Any]], seeds: list[int], at: list[int]) -> dict[str, Any]:
    """Per budget and method: mean speedup (clamped), Fast@1.2 and the geometric mean speedup
    (not clamped: it sees 12× against 100×) across problems, per seed, then across seeds with 95%
    intervals; and tree minus random (the geometric means: tree ÷ random), paired by seed."""
    done = [r for r in rows if not r.get("error")]
    methods = _methods(done)
    out: dict[str, Any] = {}
    for budget in at:
        per_method: dict[str, dict[str, list[float]]] = {}
        for method in methods:
            means, fasts, geomeans = [], [], []
            for i in range(len(seeds)):
                found = [r["curves"][method][i][budget - 1] for r in done]
                means.append(statistics.fmean(min(CLAMP, b) for b in found))
                fasts.append(sum(1 for b in found if b >= 1.2) / len(found))
                geomeans.append(statistics.geometric_mean(found))
            per_method[method] = {"mean_speedup": means, "fast_1_2": fasts, "geomean": geomeans}
        entry: dict[str, Any] = {m: {k: {"per_seed": v, "mean_ci": (log_interval if k == "geomean" else interval)(v)}
                                     for k, v in d.items()} for m, d in per_method.items()}
        for other in (m for m in ("random", "random-moves") if "tree" in methods and m in methods):
            # paired by seed: the same seed, the same problems
            entry[f"tree_minus_{other}"] = {
                k: interval([t - r for t, r in zip(per_method["tree"][k], per_method[other][k], strict=True)])
                for k in ("mean_speedup", "fast_1_2")}
            entry[f"tree_minus_{other}"]["geomean_ratio"] = log_interval(
                [t / r for t, r in zip(per_method["tree"]["geomean"], per_method[other]["geomean"], strict=True)])
        out[str(budget)] = entry
    return out


def table_rows(data: dict[str, Any], run: str) -> list[str]:
    """docs/benchmarks.md's rows for one run: per budget and method, the mean clamped speedup and
    Fast@1.2 with their 95% intervals over seeds; then the paired differences."""

    def ci(values: list[float], percent: bool = False) -> str:
        mean, low, high = values
        if percent:  # a share: its interval shown within 0-100%
            return f"{mean:.0%} ({max(low, 0.0):.0%} to {min(high, 1.0):.0%})"
        return f"{mean:.2f}× ({low:.2f} to {high:.2f})"

    lines = []
    for budget, entry in data["summary"].items():
        for method in (m for m in METHODS if m in entry):
            figures = entry[method]
            lines.append(f"| {run} | {budget} | {method} | {ci(figures['mean_speedup']['mean_ci'])} | "
                         f"{ci(figures['fast_1_2']['mean_ci'], percent=True)} | {ci(figures['geomean']['mean_ci'])} |")
        for key in (k for k in entry if k.startswith("tree_minus_")):
            difference = entry[key]
            mean, low, high = difference["mean_speedup"]
            f_mean, f_low, f_high = difference["fast_1_2"]
            g_mean, g_low, g_high = difference["geomean_ratio"]
            lines.append(f"| {run} | {budget} | tree − {key.removeprefix('tree_minus_')} | {mean:+.2f} ({low:+.2f} to "
                         f"{high:+.2f}) | {f_mean:+.0%} ({max(f_low, -1.0):+.0%} to {min(f_high, 1.0):+.0%}) | "
                         f"tree ÷ {key.removeprefix('tree_minus_')}: {g_mean:.2f}× ({g_low:.2f} to {g_high:.2f}) |")
    return lines


def problem_rows(data: dict[str, Any]) -> list[str]:
    """docs/benchmarks.md's per-problem rows: each method's best speedup after 8 and after all
    steps, the mean over seeds and its range."""
    steps = data["steps"]
    lines = []
    for row in data["rows"]:
        cells = []
        for budget in sorted({min(8, steps), steps}):
            for method in METHODS:
                finals = [curve[budget - 1] for curve in row["curves"][method]]
                cells.append(f"{statistics.fmean(finals):.1f}" if max(finals) - min(finals) < 0.05 else
                             f"{statistics.fmean(finals):.1f} ({min(finals):.1f}–{max(finals):.1f})")
        lines.append(f"| {row['problem']} | " + " | ".join(cells) + " |")
    return lines


def plot(rows: list[dict[str, Any]], out: Path) -> None:
    """Mean over problems of the best speedup so far (clamped), per method: the mean over seeds
    and its 95% band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [r for r in rows if not r.get("error")]
    figure, axis = plt.subplots(figsize=(6.5, 4))
    for method in _methods(done):
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
    parser.add_argument("--only", nargs="*", help="problem names (default: all of bench/problems but SLOW)")
    parser.add_argument("--include-slow", action="store_true", help="also the problems in SLOW")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--plot", type=Path)
    parser.add_argument("--methods", default=",".join(METHODS), help="a subset of " + ", ".join(METHODS))
    parser.add_argument("--combine", nargs="+", type=Path, metavar="JSON",
                        help="no search: merge the rows of earlier runs (problems split across processes) into "
                        "--json, with the summary and the plot")
    parser.add_argument("--cache", type=Path, help="a folder of stored evaluations (JSON lines per problem), read "
                        "and extended: a prediction is deterministic, so a later run evaluates only new candidates")
    parser.add_argument("--table", metavar="RUN", help="no search: print docs/benchmarks.md's rows for --json, "
                        "labelled RUN")
    args = parser.parse_args()
    if args.table:
        data = json.loads(args.json.read_text())
        print("\n".join(table_rows(data, args.table) + [""] + problem_rows(data)))
        return 0
    seeds = [int(s) for s in args.seeds.split(",")]
    at = [min(args.steps, int(a)) for a in args.at.split(",")]
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    if args.combine:
        parts = [json.loads(path.read_text()) for path in args.combine]
        rows = sorted((row for part in parts for row in part["rows"]
                       if args.include_slow or row["problem"] not in SLOW), key=lambda row: row["problem"])
        seeds, steps = parts[0]["seeds"], parts[0]["steps"]
        at = [min(steps, int(a)) for a in args.at.split(",")]
        args.json.write_text(json.dumps({
            "command": "bench/search_stats.py " + " ".join(sys.argv[1:]),
            "parts": [{"command": part["command"], "seconds": part["seconds"]} for part in parts],
            "steps": steps, "seeds": seeds, "measured": parts[0]["measured"], "clamp": CLAMP, "rows": rows,
            "summary": summarise(rows, seeds, at)}, indent=1) + "\n")
        if args.plot:
            plot(rows, args.plot)
        return 0
    methods = tuple(m for m in args.methods.split(",") if m)
    for problem in sorted(PROBLEMS.glob("*.py")):
        if args.only and problem.stem not in args.only or (
                not args.only and problem.stem in SLOW and not args.include_slow):
            continue
        rows.append(run_problem(problem, args.steps, seeds, args.cache, methods))
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
