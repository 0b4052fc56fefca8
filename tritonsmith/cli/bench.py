"""`tritonsmith bench PROBLEMS_DIR`: the search on every problem of a folder of KernelBench-format
problems, with a report (benchmark/)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError


def register(commands: Any) -> None:
    bench = commands.add_parser("bench", help="run the search on a folder of KernelBench-format problems")
    bench.add_argument("problems", metavar="PROBLEMS_DIR")
    bench.add_argument("--steps", type=int, default=10, help="candidates per problem (default 10)")
    bench.add_argument("--proposer", choices=("auto", "offline", "anthropic", "openai"), default="offline")
    bench.add_argument("--allow-upload", action="store_true", help="consent to sending kernels to a model")
    bench.add_argument("--device", choices=("auto", "gpu", "cpu"), default="auto")
    bench.add_argument("--protocol", choices=("tritonsmith", "kernelbench", "adaexplore"), default="tritonsmith",
                       help="verification tolerances, trials and timing to match a published protocol")
    bench.add_argument("--objective", choices=("auto", "predicted", "interpreter"), default="auto",
                       help="without a GPU, what candidates are ranked and claimed by (as for optimize)")
    bench.add_argument("--max-problems", type=int, metavar="N")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--ray", metavar="ADDRESS", help="evaluate on a Ray cluster, one actor per GPU (needs tritonsmith[ray])")
    bench.add_argument("--out", default="bench-report", metavar="DIR", help="where the report goes")
    bench.set_defaults(handler=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the search on every problem of a folder; write JSON, Markdown, plots and HTML."""
    from ..benchmark.report import write_report
    from ..benchmark.runner import find_problems, run_suite
    from ..evaluator.verify import mode_for_device

    folder = Path(args.problems)
    if not folder.is_dir():
        raise UsageError(f"{args.problems}: not a folder of problems")
    if not find_problems(folder):
        raise UsageError(f"{args.problems}: no KernelBench-format problem or harnessed kernel in it")
    mode = mode_for_device(args.device)

    def progress(problem: object) -> None:
        from ..benchmark.runner import ProblemResult

        assert isinstance(problem, ProblemResult)
        start = "start verified" if problem.start_ok else "start FAILED"
        found = problem.result if problem.correct else "no new verified candidate"
        print(f"{problem.name}: {problem.error or found} ({start}; {problem.new_verified} new verified of "
              f"{problem.candidates} candidates, {problem.seconds} s)", file=sys.stderr, flush=True)

    suite = run_suite(folder, steps=args.steps, device=mode, proposer=args.proposer, protocol=args.protocol,
                      seed=args.seed, max_problems=args.max_problems, allow_upload=args.allow_upload,
                      progress=progress, ray_address=args.ray, objective=args.objective)
    files = write_report(suite, Path(args.out))
    m = suite.metrics
    ran = [p for p in suite.problems if not p.error]
    print(f"start verified on {sum(p.start_ok for p in ran)}/{len(ran)} (not counted as correct) · "
          f"confirmed faster on {sum(p.claimed for p in ran)}/{len(ran)}")
    print(f"{len(suite.problems)} problems · accuracy {m.accuracy:.0%} (new verified candidate) · "
          f"mean speedup {m.mean_speedup:.2f}x "
          f"(10x cap, incorrect = 0) · Fast@1.2 {m.fast_1_2:.0%} · Fast@2 {m.fast_2:.0%} · GM(10) {m.gm10:.2f}x "
          f"· speedups {suite.unit}")
    print(f"report: {files['html']}")
    return 0
