"""Does the offline search make the structural changes a kernel engineer would? (issue 15's
figure: "every bench/problems starting kernel whose launcher has two kernels ends fused"; and
the same question for the multi-pass row reductions and the single-pass rewrite).

``--kind fusion``: every problem of ``bench/problems`` whose launcher launches two or more
kernels; ``--kind single-pass``: every problem whose first kernel walks its rows in block loops
(``for start in range(0, n, BLOCK)``). For each, in a fresh git repository holding a copy of the
problem, run::

    tritonsmith optimize FILE --kernel FIRST --device cpu --objective O --steps N --seed S --format json --out best.patch

then ``git apply`` the patch (the check a user would make) and count the kernels the patched
file launches and the block loops they run. Recorded per problem and seed: the kernels launched
and their block loops before and after, whether the patch applied, the search's confirmed
speedup and its 95% interval (``--objective interpreter``, the default here: interpreter time, a
CPU figure, not a GPU one; ``--objective predicted``: predicted sm_90 time, a model's estimate)
and the seconds the search took.

``--kind all``: every problem of ``bench/problems`` and every example of ``examples/`` (issue 34:
"what is offered is what was verified"). Besides the above, each applied patch is parsed
(``ast.parse``) and the patched file verified again (``tritonsmith verify --device cpu
--no-timing``), so a row says whether the patch a user would apply is a file that parses and
verifies.

Usage::

    .venv/bin/python bench/structural_search.py --kind fusion --steps 8 --seeds 0,1 --json docs/benchmarks/fusion-search-1.json
    .venv/bin/python bench/structural_search.py --kind single-pass --steps 8 --seeds 0 --json docs/benchmarks/single-pass-search-1.json
    .venv/bin/python bench/structural_search.py --kind all --objective predicted --steps 4 --seeds 0 --json docs/benchmarks/patch-roundtrip-1.json
"""

from __future__ import annotations

import argparse
import ast
import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tritonsmith.analysis import Document, index_module

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "bench" / "problems"
EXAMPLES = ROOT / "examples"


def launched(source: str) -> list[str]:
    index = index_module(Document(source).root)
    return [k.name for k in index.kernels if k.launches]


def block_loops(source: str) -> int:
    """`for v in range(0, n, BLOCK)` loops in the launched kernels' bodies."""
    index = index_module(Document(source).root)
    return sum(len(re.findall(r"^\s*for \w+ in range\(0, \w+, \w+\):", (k.node.text or b"").decode(), re.MULTILINE))
               for k in index.kernels if k.launches)


def first_launched(source: str) -> str:
    index = index_module(Document(source).root)
    sites = sorted((site.node.start_byte, k.name) for k in index.kernels for site in k.launches)
    return sites[0][1]


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def _verifies(work: Path, name: str) -> tuple[bool, str]:
    """Whether `tritonsmith verify` passes the patched file (exit 0), and its last lines."""
    done = subprocess.run([sys.executable, "-m", "tritonsmith", "verify", name, "--device", "cpu", "--no-timing"],
                          cwd=work, capture_output=True, text=True, timeout=1800)
    return done.returncode == 0, "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])


def run_one(path: Path, steps: int, seed: int, objective: str = "interpreter", *, verify: bool = False) -> dict[str, object]:
    source = path.read_text()
    with tempfile.TemporaryDirectory(prefix="fusion-search-") as tmp:
        work = Path(tmp)
        shutil.copy(path, work / path.name)
        subprocess.run(["git", "init", "-q"], cwd=work, check=True)
        patch = work / "best.patch"
        began = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "tritonsmith", "optimize", path.name, "--kernel", first_launched(source),
             "--device", "cpu", "--objective", objective, "--steps", str(steps), "--seed", str(seed), "--format", "json", "--out", str(patch)],
            cwd=work, capture_output=True, text=True, timeout=1800,
        )
        seconds = time.monotonic() - began
        lines = done.stdout.splitlines()
        start = max((i for i, line in enumerate(lines) if line == "{"), default=None)
        result = json.loads("\n".join(lines[start:])) if start is not None else {}
        applied, parses, verified, verdict = False, None, None, ""
        after, loops_after = launched(source), block_loops(source)
        if patch.exists():
            applied = subprocess.run(["git", "apply", patch.name], cwd=work, capture_output=True).returncode == 0
            if applied:
                patched = (work / path.name).read_text()
                after, loops_after = launched(patched), block_loops(patched)
                parses = _parses(patched)
                if verify:
                    verified, verdict = _verifies(work, path.name)
        confirmation = result.get("confirmation") or {}
        return {
            "problem": path.stem if path.parent == PROBLEMS else f"examples/{path.name}", "seed": seed, "steps": steps, "exit": done.returncode,
            "launched_before": launched(source), "launched_after": after, "fused": len(after) < len(launched(source)),
            "block_loops_before": block_loops(source), "block_loops_after": loops_after,
            "single_pass": loops_after == 0 < block_loops(source),
            "patch_applies": applied, "patch_parses": parses, "patch_verifies": verified, "verdict": verdict,
            "improved": result.get("improved"), "result": result.get("result"), "speedup": result.get("speedup"),
            "interval": [confirmation.get("low"), confirmation.get("high")] if confirmation else None,
            "confirmation": confirmation or None, "search_seconds": round(seconds, 1),
            "stderr_tail": done.stderr[-400:] if done.returncode not in (0, 1) else "",
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=("fusion", "single-pass", "all"), default="fusion")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--objective", choices=("interpreter", "predicted"), default="interpreter")
    args = parser.parse_args()
    if args.kind == "fusion":
        problems = [p for p in sorted(PROBLEMS.glob("*.py")) if len(launched(p.read_text())) >= 2]
    elif args.kind == "single-pass":
        problems = [p for p in sorted(PROBLEMS.glob("*.py")) if len(launched(p.read_text())) == 1 and block_loops(p.read_text())]
    else:
        problems = sorted(PROBLEMS.glob("*.py")) + sorted(EXAMPLES.glob("*.py"))
    rows = []
    for path in problems:
        for seed in (int(s) for s in args.seeds.split(",")):
            row = run_one(path, args.steps, seed, args.objective, verify=args.kind == "all")
            rows.append(row)
            print(f"{row['problem']:<20} seed {seed}: {row['launched_before']} -> {row['launched_after']},"
                  f" block loops {row['block_loops_before']} -> {row['block_loops_after']}"
                  f"  patch applies: {row['patch_applies']} parses: {row['patch_parses']} verifies: "
                  f"{row['patch_verifies']}  speedup {row['speedup']}  interval {row['interval']}"
                  f"  ({row['search_seconds']} s)", flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    summary = {
        "command": "bench/structural_search.py " + " ".join(sys.argv[1:]),
        "commit": commit, "python": platform.python_version(), "machine": platform.machine(),
        "measured_on": ("interpreter (TRITON_INTERPRET=1), CPU" if args.objective == "interpreter"
                        else "predicted sm_90 time (profiled under the interpreter, CPU)"), "rows": rows,
        "kind": args.kind, "fused": sum(1 for r in rows if r["fused"]),
        "single_pass": sum(1 for r in rows if r["single_pass"]), "searches": len(rows),
        "patches": sum(1 for r in rows if r["patch_applies"]),
        "patches_verified": sum(1 for r in rows if r["patch_verifies"]),
    }
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"fused in {summary['fused']}, single-pass in {summary['single_pass']} of {summary['searches']} searches;"
          f" {summary['patches_verified']} of {summary['patches']} patches applied verify")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
