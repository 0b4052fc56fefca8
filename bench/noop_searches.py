"""No-op searches: seeded searches whose candidates cannot change the time must claim nothing.

    .venv/bin/python bench/noop_searches.py --seeds 10 --json docs/benchmarks/noop_searches.json

Two sets, both through real workers on the CPU interpreter (issue 12: a patch whose only changes
were an eviction hint, `max_contiguous` and `num_warps=2` had been reported 1.91× faster):

- **hints only**: `tritonsmith optimize --proposer offline` on `tests/search/fixtures/hints_only_add.py`,
  a kernel whose block size is fixed inside it, so the offline proposer's only moves are hints
  (`num_warps` at the launch, eviction policies, `max_contiguous`/`multiple_of`); they are the
  original for the interpreter's time, set aside without being re-timed;
- **time-neutral changes**: the search engine with the real evaluator on
  `tests/search/fixtures/slow_add.py` and a proposer that only appends a module-level constant
  nothing reads (a different file, so every candidate is compiled, verified and screened; none
  can be faster); whatever screening says, the confirmation must not claim a speedup.

Each row keeps the search's one-line result, and the second set every confirmation with its
per-round medians.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tritonsmith.evaluator.specs import detect_specs  # noqa: E402
from tritonsmith.search.engine import Search, SearchOptions  # noqa: E402
from tritonsmith.search.evaluate import CandidateEvaluator  # noqa: E402
from tritonsmith.search.journal import Journal  # noqa: E402
from tritonsmith.search.model import Edit, ProposalError, StepContext, Task  # noqa: E402

FIXTURES = ROOT / "tests" / "search" / "fixtures"


class NeutralProposer:
    """Appends `_VARIANT_<n> = <random>` to the file: nothing reads it."""

    name = "neutral"
    cost_usd = 0.0

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.count = 0

    def _next(self, base: str) -> str:
        self.count += 1
        if self.count > 50:
            raise ProposalError("nothing left")
        return base + f"\n_VARIANT_{self.count} = {self.rng.randrange(1000)}\n"

    def refine(self, context: StepContext) -> tuple[str, list[Edit]]:
        base = context.chain[-1][0]
        new = self._next(base)
        return new, [Edit(base, new)]

    def regenerate(self, context: StepContext) -> str:
        return self._next(context.task.source)


def hints_only(seed: int, steps: int) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="tritonsmith-noop-"))
    (work / "pyproject.toml").write_text("")
    (work / "hints_only_add.py").write_text((FIXTURES / "hints_only_add.py").read_text())
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    began = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "tritonsmith", "optimize", "hints_only_add.py", "--kernel", "add_kernel",
                          "--steps", str(steps), "--device", "cpu", "--proposer", "offline", "--seed", str(seed),
                          "--format", "json"], cwd=work, env=env, capture_output=True, text=True, timeout=1800)
    data = json.loads(run.stdout)
    return {"seed": seed, "exit": run.returncode, "improved": data["improved"], "result": data["result"],
            "candidates": data["candidates"], "setAside": data["setAside"], "patch": data["patch"],
            "seconds": round(time.perf_counter() - began, 1)}


def neutral(seed: int, steps: int) -> dict[str, object]:
    source = (FIXTURES / "slow_add.py").read_text()
    work = Path(tempfile.mkdtemp(prefix="tritonsmith-noop-"))
    (work / "pyproject.toml").write_text("")
    path = work / "slow_add.py"
    path.write_text(source)
    (spec,) = detect_specs(path)
    task = Task(path=str(path), kernel="add_kernel", source=source, spec=f"harness:{spec.name}", device="interpreter")
    began = time.perf_counter()
    with CandidateEvaluator(task, spec) as evaluator:
        journal = Journal(work)
        result = Search(task, NeutralProposer(seed), evaluator, journal, SearchOptions(steps=steps, seed=seed)).run()
        journal.close()
    return {"seed": seed, "improved": result.improved, "result": result.outcome_text(),
            "screening": result.screening_speedup, "candidates": result.tree.evaluated_count - 1,
            "confirmations": [{"node": n, **c.to_json()} for n, c in result.confirmations],
            "seconds": round(time.perf_counter() - began, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=8, help="candidates per hints-only search")
    parser.add_argument("--neutral-steps", type=int, default=4, help="candidates per time-neutral search")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    load_before = [round(v, 2) for v in os.getloadavg()]
    began = time.perf_counter()
    rows: dict[str, list[dict[str, object]]] = {"hints_only": [], "time_neutral": []}
    for seed in range(args.seeds):
        rows["hints_only"].append(hints_only(seed, args.steps))
        print("hints only", rows["hints_only"][-1], flush=True)
    for seed in range(args.seeds):
        row = neutral(seed, args.neutral_steps)
        rows["time_neutral"].append(row)
        print("time-neutral", {k: v for k, v in row.items() if k != "confirmations"}, flush=True)
    claims = sum(bool(r["improved"]) for group in rows.values() for r in group)
    print(f"{claims} claims in {sum(len(g) for g in rows.values())} no-op searches; "
          f"{time.perf_counter() - began:.0f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "seeds": args.seeds, "steps": args.steps, "neutral_steps": args.neutral_steps,
            "seconds": round(time.perf_counter() - began, 1),
            "machine": {"cpus": os.cpu_count(), "load_before": load_before,
                        "load_after": [round(v, 2) for v in os.getloadavg()], "date": time.strftime("%Y-%m-%d %H:%M")},
            **rows}, indent=2))
    return 1 if claims else 0


if __name__ == "__main__":
    sys.exit(main())
