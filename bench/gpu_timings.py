"""Verify and time every example with a spec on the GPU; one JSON and one Markdown table.

    python3 bench/gpu_timings.py --out bench/results/gpu [--rounds 10]

Each example's candidate (its launcher or ModelNew) is timed against its own reference (the
harness's PyTorch function or KernelBench's Model) in the same run, in alternating rounds in
two worker processes (tritonsmith/evaluator/verify.py). GPU figures come only from a GPU: the
script refuses to run without one.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tritonsmith.evaluator.specs import detect_specs  # noqa: E402
from tritonsmith.evaluator.verify import default_mode, verify_spec  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "gpu")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("examples", nargs="*", type=Path)
    args = parser.parse_args()
    if default_mode() != "gpu":
        print("no GPU here: GPU timings come only from a GPU", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    examples = args.examples or sorted((ROOT / "examples").glob("*.py"))
    rows = []
    for path in examples:
        for spec in detect_specs(path):
            began = time.perf_counter()
            verdict = verify_spec(spec, mode="gpu", rounds=args.rounds)
            elapsed = time.perf_counter() - began
            rows.append({"file": path.name, "seconds": round(elapsed, 1), **verdict.to_json()})
            print(f"{path.name}: {verdict.name}: {verdict.summary()} ({elapsed:.1f} s)", flush=True)
    (args.out / "timings.json").write_text(json.dumps(rows, indent=2))
    environment = next((r["timing"]["environment"] for r in rows if r.get("timing")), {})
    lines = [f"GPU: {environment.get('gpu', '?')} ({environment.get('capability', '?')}), torch "
             f"{environment.get('torch', '?')}, CUDA {environment.get('cuda', '?')}, Triton {environment.get('triton', '?')}",
             "", "| example | verified | candidate ms | reference ms | vs reference (95% CI, noise floor) | rounds "
             "| runs | wall s |",
             "|---|---|---:|---:|---|---:|---:|---:|"]
    for row in rows:
        timing = row.get("timing")
        if timing:
            lines.append(f"| {row['file']} `{row['name']}` | yes | {timing['candidate_mean']:.4g} | "
                         f"{timing['reference_mean']:.4g} | {timing['estimate']:.2f}× ({timing['ci_low']:.2f}–"
                         f"{timing['ci_high']:.2f}, {100 * timing['noise_floor']:.1f}%) | {timing['rounds']} | "
                         f"{timing['runs']} | {row['seconds']} |")
        else:
            lines.append(f"| {row['file']} `{row['name']}` | {'yes' if row['ok'] else 'NO: ' + row['message'][:80]} "
                         f"| | | | | | {row['seconds']} |")
    (args.out / "timings.md").write_text("\n".join(lines) + "\n")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
