"""Verdicts on the adversary suite (tests/evaluator/fixtures/adversary/): which attacks a tree of
tritonsmith refuses, and whether the legitimate look-alikes verify.

Each file is verified once, under Triton's interpreter, in two worker pools shared by the run
(as the test does), with the package the interpreter imports: this checkout, or another copy
given on PYTHONPATH (a `git archive` of an older commit, to show what got through before).

Usage::

    .venv/bin/python bench/adversary.py --json docs/benchmarks/adversary-after-1.json
    PYTHONPATH=/tmp/before .venv/bin/python bench/adversary.py --json docs/benchmarks/adversary-before-1.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "evaluator" / "fixtures" / "adversary"


def expected_words(path: Path) -> str | None:
    match = re.search(r"^Refused: (.+)$", path.read_text(encoding="utf-8"), re.MULTILINE)
    return match.group(1).strip() if match else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    import tritonsmith
    from tritonsmith.evaluator.pool import WorkerPool
    from tritonsmith.evaluator.verify import detect_specs, verify_spec

    env = {**os.environ, "TRITON_INTERPRET": "1"}
    pools = (WorkerPool(1, env=env), WorkerPool(1, env=env))
    rows = []
    try:
        for path in sorted(FOLDER.glob("*.py")):
            began = time.perf_counter()
            [spec] = detect_specs(path)
            verdict = verify_spec(spec, mode="interpreter", pools=pools, timeout_s=60)
            words = expected_words(path)
            row = {"file": path.name, "attack": path.name.startswith("a"), "ok": verdict.ok,
                   "stage": verdict.stage, "message": verdict.message[:400],
                   "named": words is not None and words in verdict.message,
                   "seconds": round(time.perf_counter() - began, 2)}
            rows.append(row)
            print(f"{path.name:45s} {'verified' if verdict.ok else 'refused ':8s} {verdict.stage:10s} "
                  f"{verdict.message[:110]}", flush=True)
    finally:
        for pool in pools:
            pool.close()
    attacks = [r for r in rows if r["attack"]]
    legit = [r for r in rows if not r["attack"]]
    summary = {"attacks": len(attacks), "attacks_verified": sum(bool(r["ok"]) for r in attacks),
               "attacks_refused_mechanism_named": sum(not r["ok"] and bool(r["named"]) for r in attacks),
               "look_alikes": len(legit), "look_alikes_verified": sum(bool(r["ok"]) for r in legit)}
    print(summary)
    if args.json:
        source = Path(tritonsmith.__file__).resolve().parents[1]
        commit = subprocess.run(["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip() or "not a git checkout"
        package = "this checkout" if source == ROOT else "a copy given on PYTHONPATH"  # no machine paths
        Path(args.json).write_text(json.dumps({"package": package, "commit": commit, "summary": summary,
                                               "rows": rows}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
