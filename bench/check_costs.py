"""Where a cold `check` of real code spends its time: parsing, indexing, the per-kernel key, the
shared analyses (launch typing, type inference) and each rule family's own checks.

In one process, over the files under a corpus folder whose text holds `@triton` (the corpus of
bench/check_cache.py), a fresh matcher checks every file once per repeat. Time is charged to the
innermost of these that is running (so a family's figure is its checks' own work, and the shared
analyses are charged once, to themselves, whichever check asked first):

- `parse`: tree-sitter's parse (`Document`); `index`: `index_module`;
- `launch typing`: the runtime arguments' types at each launch site (`analysis/argtypes.py`, through
  `rules.context.launch_param_types`), asked for by the kernel's key and by the checks;
- `type inference`: the abstract interpretation of a kernel (`analysis/infer.py`, through
  `KernelContext._interpret`), asked for by the typed checks and the learned rules' predicates;
- a family (the rules' category, A to K, builtin packs' headers name them): each check's own time;
- `matcher, other`: the rest of `check_module` (the kernel key's texts, needles, findings).

Usage::

    .venv/bin/python bench/check_costs.py /tmp/realcorpus --repeat 2 --json docs/benchmarks/check-costs-1.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class Clock:
    """Nested timers: time goes to the innermost open bucket."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._stack: list[tuple[str, float]] = []

    def wrap(self, bucket: str, fn: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.open(bucket)
            try:
                return fn(*args, **kwargs)
            finally:
                self.close()
        return timed

    def open(self, bucket: str) -> None:
        now = time.perf_counter()
        if self._stack:
            outer, since = self._stack[-1]
            self.totals[outer] += now - since
        self._stack.append((bucket, now))
        self.calls[bucket] += 1

    def close(self) -> None:
        now = time.perf_counter()
        bucket, since = self._stack.pop()
        self.totals[bucket] += now - since
        if self._stack:
            outer, _ = self._stack[-1]
            self._stack[-1] = (outer, now)


def measure(sources: list[bytes]) -> tuple[dict[str, float], dict[str, int], float]:
    from tritonsmith.analysis import document as document_module
    from tritonsmith.rules import context as context_module
    from tritonsmith.rules import matcher as matcher_module
    from tritonsmith.settings import Settings
    from tritonsmith.workspace import Workspace

    clock = Clock()
    workspace = Workspace(None, Settings(), include_user_packs=False)
    matcher = workspace.matcher
    # Each rule's check, charged to its family (the rule's category).
    # (A check is a generator: it runs while the matcher lists its hits, so it is listed here.)
    matcher._plan = [(rule, clock.wrap(f"rules {rule.category}", lambda ctx, check=check: list(check(ctx))), needles)
                     for rule, check, needles in matcher._plan]
    patches = [
        (document_module.Document, "__init__", "parse"),
        (matcher_module, "index_module", "index"),
        (matcher_module, "launch_param_types", "launch typing"),
        (context_module, "launch_param_types", "launch typing"),
        (context_module.KernelContext, "_interpret", "type inference"),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, bucket in patches:
        setattr(owner, name, clock.wrap(bucket, getattr(owner, name)))
    try:
        began = time.perf_counter()
        for source in sources:
            clock.open("matcher, other")
            try:
                matcher.check_source(source)
            finally:
                clock.close()
        total = time.perf_counter() - began
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)
    return dict(clock.totals), dict(clock.calls), total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args()
    files = sorted(p for p in Path(args.corpus).rglob("*.py")
                   if "@triton" in p.read_text(encoding="utf-8", errors="replace"))
    sources = [p.read_bytes() for p in files]
    lines = sum(len(s.splitlines()) for s in sources)
    runs = []
    for _ in range(args.repeat):
        totals, calls, total = measure(sources)
        runs.append({"totals": totals, "calls": calls, "total_s": total})
    rows = table(runs)
    print(f"{len(files)} files, {lines} lines; seconds (share) per repeat")
    print("\n".join(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"kind": "check_costs", "corpus": Path(args.corpus).name,
                                               "files": len(files), "lines": lines, "runs": runs, "table": rows}, indent=1) + "\n")


def table(runs: list[dict[str, Any]]) -> list[str]:
    """Each part's seconds and share of the check, per run, the largest first (by the first run)."""
    buckets = sorted({b for r in runs for b in r["totals"]}, key=lambda b: -runs[0]["totals"].get(b, 0.0))
    rows = ["| part | " + " | ".join(f"run {i + 1}, s (share)" for i in range(len(runs))) + " |",
            "|---|" + "---:|" * len(runs)]
    for bucket in buckets:
        cells = [f"{r['totals'].get(bucket, 0.0):.2f} ({r['totals'].get(bucket, 0.0) / r['total_s']:.0%})" for r in runs]
        rows.append(f"| {bucket} | " + " | ".join(cells) + " |")
    rows.append("| total | " + " | ".join(f"{r['total_s']:.2f}" for r in runs) + " |")
    return rows


if __name__ == "__main__":
    main()
