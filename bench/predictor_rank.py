"""How well the predicted sm_90 time ranks kernels as a GPU would: Spearman's ρ between predicted
and measured time over variants of the suite's kernels.

    # here (no GPU): the predictions, for the variants of every problem
    .venv/bin/python bench/predictor_rank.py predict --json docs/benchmarks/predicted-variants-1.json
    # on the GPU machine (bench/gpu_search.sh): the same variants timed on the GPU
    python bench/predictor_rank.py measure --json $OUT/gpu-variants.json
    # anywhere: ρ per problem and pooled, from the two files
    python bench/predictor_rank.py compare docs/benchmarks/predicted-variants-1.json $OUT/gpu-variants.json

Variants of each bench/problems kernel (deterministic, so both sides build the same texts, and
each row carries its text's sha256): the start; each one-knob launch move of the offline
proposer (block ×2, ×4, ÷2, `num_warps`), at most `--moves`; the fused launcher where the
problem launches two kernels; the single-pass reduction where it has a multi-pass one.

`predict` verifies each variant under the interpreter first (a wrong variant is no data point),
then predicts it (evaluator/predicted.py). `measure` verifies and times each variant on the GPU
(evaluator/verify.py: CUDA events, L2 flushed, alternating rounds against the reference).
`compare` ranks within each problem, since what a search needs is the order of candidates of one
kernel, and also pools every variant's speedup over its problem's start (predicted against
measured). The target (issue 15) is ρ ≥ 0.8.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tritonsmith.evaluator.pool import WorkerPool  # noqa: E402
from tritonsmith.evaluator.predicted import predict_spec  # noqa: E402
from tritonsmith.evaluator.specs import detect_specs  # noqa: E402
from tritonsmith.evaluator.verify import verify_spec  # noqa: E402
from tritonsmith.search.model import apply_edits  # noqa: E402
from tritonsmith.search.proposers.fusion import fuse_elementwise  # noqa: E402
from tritonsmith.search.proposers.offline import config_moves, launched_kernels  # noqa: E402
from tritonsmith.search.proposers.single_pass import single_pass  # noqa: E402

PROBLEMS = ROOT / "bench" / "problems"


def variants(source: str, moves: int) -> list[tuple[str, str]]:
    """(name, text) of each variant of a problem's file, the start first."""
    kernels = launched_kernels(source, "")
    out = [("start", source)]
    for move in config_moves(source, kernels[0], "predicted")[:moves]:
        try:
            out.append((move.description, apply_edits(source, [move.edit])))
        except ValueError:
            continue
    fused = fuse_elementwise(source)
    if fused is not None:
        out.append(("fused", fused))
    for kernel in kernels:
        single = single_pass(source, kernel)
        if single is not None:
            out.append((f"single-pass {kernel}", single))
    seen: set[str] = set()
    unique = []
    for name, text in out:
        if text not in seen:
            seen.add(text)
            unique.append((name, text))
    return unique


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _problems(only: list[str] | None) -> list[Path]:
    return [p for p in sorted(PROBLEMS.glob("*.py")) if not only or p.stem in only]


def _each_variant(args: argparse.Namespace) -> Iterator[tuple[str, Any, Path, str, str]]:
    """(problem, spec, path, variant name, text) for every variant of the chosen problems, each
    problem's file copied to a fresh folder (the spec reads its reference from there)."""
    for problem in _problems(args.only):
        source = problem.read_text()
        path = Path(tempfile.mkdtemp(prefix="tritonsmith-rank-")) / problem.name
        path.write_text(source)
        (spec,) = detect_specs(path)
        for name, text in variants(source, args.moves):
            yield problem.stem, spec, path, name, text


def predict(args: argparse.Namespace) -> list[dict[str, Any]]:
    env = dict(os.environ, TRITON_INTERPRET="1")
    rows = []
    with WorkerPool(1, env=env) as reference, WorkerPool(1, env=env) as candidate, WorkerPool(1) as compiler:
        for problem, spec, path, name, text in _each_variant(args):
            began = time.perf_counter()
            verdict = verify_spec(spec, mode="interpreter", candidate_source=text, pools=(reference, candidate),
                                  time_it=False)
            row: dict[str, Any] = {"problem": problem, "variant": name, "sha256": _digest(text),
                                   "verified": verdict.ok}
            if verdict.ok:
                predicted = predict_spec(spec, text, path=str(path), target="sm_90", pools=(reference, candidate),
                                         compile_pool=compiler)
                row.update(predicted_s=predicted.seconds, sizes=predicted.sizes_text(), error=predicted.error,
                           launches=[{"kernel": e.kernel, "seconds": e.seconds, "bound": e.bound}
                                     for e in (predicted.prediction.launches if predicted.prediction else [])])
            else:
                row["error"] = verdict.summary()
            row["seconds"] = round(time.perf_counter() - began, 2)
            print(json.dumps({k: row.get(k) for k in ("problem", "variant", "predicted_s", "seconds")}), flush=True)
            rows.append(row)
            _save(args, rows)
    return rows


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    with WorkerPool(1) as reference, WorkerPool(1) as candidate:
        for problem, spec, _, name, text in _each_variant(args):
            began = time.perf_counter()
            verdict = verify_spec(spec, mode="gpu", candidate_source=text, pools=(reference, candidate),
                                  rounds=args.rounds, runs=args.runs, extra_shapes=False, trials=3)
            timing = verdict.timing
            row = {"problem": problem, "variant": name, "sha256": _digest(text), "verified": verdict.ok,
                   "gpu_ms": timing.candidate_median if verdict.ok and timing is not None else None,
                   "reference_ms": timing.reference_median if verdict.ok and timing is not None else None,
                   "error": None if verdict.ok else verdict.summary(),
                   "seconds": round(time.perf_counter() - began, 2)}
            print(json.dumps(row), flush=True)
            rows.append(row)
            _save(args, rows)  # a run cut short by the device's time limit keeps its rows
    return rows


_BEGAN = time.perf_counter()


def _save(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    commit = os.popen(f"git -C {ROOT} rev-parse --short HEAD").read().strip()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"command": " ".join(sys.argv[1:]), "commit": commit, "moves": args.moves,
                                     "seconds": round(time.perf_counter() - _BEGAN, 1), "rows": rows}, indent=1) + "\n")


def _ranks(values: list[float]) -> list[float]:
    """Average ranks (ties share the mean of their positions)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2.0
        i = j + 1
    return ranks


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's ρ (Pearson's r of the ranks); None under three points or with no spread."""
    if len(a) < 3 or len(a) != len(b):
        return None
    ra, rb = _ranks(a), _ranks(b)
    mean_a, mean_b = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - mean_a) * (y - mean_b) for x, y in zip(ra, rb, strict=True))
    var_a = sum((x - mean_a) ** 2 for x in ra)
    var_b = sum((y - mean_b) ** 2 for y in rb)
    if var_a == 0 or var_b == 0:
        return None
    return float(cov / (var_a * var_b) ** 0.5)


def compare(predicted_file: Path, measured_file: Path) -> dict[str, Any]:
    predicted = {(r["problem"], r["sha256"]): r for r in json.loads(predicted_file.read_text())["rows"]}
    measured = {(r["problem"], r["sha256"]): r for r in json.loads(measured_file.read_text())["rows"]}
    both = [(key, predicted[key], measured[key]) for key in predicted if key in measured
            and predicted[key].get("predicted_s") and measured[key].get("gpu_ms")]
    per_problem: dict[str, Any] = {}
    pooled_predicted, pooled_measured = [], []
    for problem in sorted({key[0] for key, _, _ in both}):
        rows = [(p, m) for key, p, m in both if key[0] == problem]
        start = next(((p, m) for p, m in rows if p["variant"] == "start"), None)
        rho = spearman([p["predicted_s"] for p, _ in rows], [m["gpu_ms"] for _, m in rows])
        per_problem[problem] = {"variants": len(rows), "spearman": rho}
        if start is not None:
            for p, m in rows:
                if p is not start[0]:
                    pooled_predicted.append(start[0]["predicted_s"] / p["predicted_s"])
                    pooled_measured.append(start[1]["gpu_ms"] / m["gpu_ms"])
    rhos = [v["spearman"] for v in per_problem.values() if v["spearman"] is not None]
    return {"per_problem": per_problem, "mean_spearman": sum(rhos) / len(rhos) if rhos else None,
            "pooled_speedup_spearman": spearman(pooled_predicted, pooled_measured),
            "pairs": len(both)}


def table_rows(data: dict[str, Any], run: str) -> list[str]:
    """The docs/benchmarks.md rows of one `predict` run: per problem, the start's predicted time
    and what bounds it, the fastest verified variant and its predicted speedup."""
    rows = []
    for problem in sorted({r["problem"] for r in data["rows"]}):
        mine = [r for r in data["rows"] if r["problem"] == problem]
        start = next(r for r in mine if r["variant"] == "start")
        ranked = [r for r in mine if r.get("predicted_s") and r is not start]
        if not start.get("predicted_s") or not ranked:
            continue
        best = min(ranked, key=lambda r: r["predicted_s"])
        bound = "+".join(sorted({launch["bound"] for launch in start.get("launches") or []}))
        rows.append(f"| {problem} | {run} | {len(mine)} ({sum(1 for r in mine if r['verified'])}) | "
                    f"{start['predicted_s'] * 1e6:.3g} µs ({bound}) | {best['variant']} | "
                    f"{best['predicted_s'] * 1e6:.3g} µs | {start['predicted_s'] / best['predicted_s']:.2f}× |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("predict", "measure"):
        sub = commands.add_parser(name)
        sub.add_argument("--json", required=True, type=Path)
        sub.add_argument("--moves", type=int, default=4, help="one-knob launch moves per problem")
        sub.add_argument("--only", nargs="*", help="problem names (default: all of bench/problems)")
        sub.add_argument("--rounds", type=int, default=3)
        sub.add_argument("--runs", type=int, default=10)
    both = commands.add_parser("compare")
    both.add_argument("predicted", type=Path)
    both.add_argument("measured", type=Path)
    shown = commands.add_parser("table", help="the docs/benchmarks.md rows of predict runs")
    shown.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args()
    if args.command == "table":
        for i, run in enumerate(args.runs, 1):
            print("\n".join(table_rows(json.loads(run.read_text()), str(i))))
        return 0
    if args.command == "compare":
        print(json.dumps(compare(args.predicted, args.measured), indent=2))
        return 0
    rows = predict(args) if args.command == "predict" else measure(args)
    _save(args, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
