"""`tritonsmith verify FILE`: compile each kernel for each target in sandboxed workers, check
each spec of the file against its reference and, on a GPU, time it (evaluator/pipeline.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..settings import find_workspace_root
from .common import command_settings, read_text, split_csv


def register(commands: Any) -> None:
    verify = commands.add_parser("verify", help="compile kernels for GPU targets, verify them against their reference, time them on a GPU")
    verify.add_argument("file", metavar="FILE")
    verify.add_argument("--kernel", action="append", metavar="NAME", help="only these kernels")
    verify.add_argument("--target", action="append", metavar="TARGETS",
                        help="comma-separated targets, e.g. sm_80,sm_90,gfx942 (default sm_90)")
    verify.add_argument("--format", choices=("text", "json"), default="text")
    verify.add_argument("--trials", type=int, default=3, help="correctness trials (at least 3)")
    verify.add_argument("--device", choices=("auto", "gpu", "cpu"), default="auto",
                        help="where to run the checks: a GPU, or the CPU under Triton's interpreter "
                        "(auto: the GPU when there is one)")
    verify.add_argument("--rounds", type=int, default=10, help="GPU timing rounds (10 timed runs each)")
    verify.add_argument("--no-timing", action="store_true", help="check correctness only, even on a GPU")
    verify.add_argument("--no-predict", action="store_true",
                        help="without a GPU, skip the predicted time on the first target (a profiled run and a compile)")
    verify.add_argument("--torch-ops", metavar="POLICY",
                        help="PyTorch compute allowed on the inputs: auto (default: none for a single-operator "
                             "task, any for a fusion task), none, any, or operators, e.g. convolution,addmm")
    verify.add_argument("--tolerance", action="append", metavar="DTYPE=TOL",
                        help="atol = rtol for outputs of a dtype, e.g. float32=1e-3 (default: float32 1e-4, "
                        "float16/bfloat16 1e-2, as KernelBench)")
    verify.add_argument("--protocol", choices=("kernelbench", "kernelbench-v0", "adaexplore"),
                        help="judge as a published benchmark does (its tolerances and trials; the verdict names it): "
                             "kernelbench 1e-4 fp32 / 1e-2 half, kernelbench-v0 1e-2, adaexplore 5e-2")
    verify.add_argument("--jobs", type=int, metavar="N", help="compile jobs at once (default: 2, or 1 on one core)")
    verify.add_argument("--timeout", type=int, metavar="SECONDS",
                        help="report a kernel as hung when one forward pass runs longer than this "
                             "(default: max(30, 20x the reference's own forward pass))")
    verify.add_argument("--memory-mb", type=int, metavar="MB",
                        help="memory limit of each worker (default: a quarter of the available memory, 1-32 GB)")
    verify.set_defaults(handler=cmd_verify)


def _tolerances(values: list[str]) -> dict[str, float]:
    """`--tolerance float32=1e-3` (repeatable, comma-separated) -> {"float32": 0.001}."""
    out = {}
    for item in (t for value in values for t in split_csv(value)):
        dtype, _, number = item.partition("=")
        try:
            out[dtype.strip().removeprefix("torch.")] = float(number)
        except ValueError:
            raise UsageError(f"--tolerance {item!r}: expected DTYPE=NUMBER, e.g. float32=1e-3") from None
    return out


def cmd_verify(args: argparse.Namespace) -> int:
    """Compile each kernel for each target in sandboxed workers and report per config; then
    check each spec in the file (KernelBench problem or in-file harness) against its reference,
    and on a GPU time it (evaluator/pipeline.py, as a save and a search do)."""
    from ..evaluator.pipeline import Options, Pipeline
    from ..evaluator.pool import compile_workers
    from ..evaluator.reports import resource_summary
    from ..evaluator.verify import mode_for_device
    from ..state import FailureLog, active_learned, record_checked

    path = Path(args.file)
    source = read_text(path)
    root = find_workspace_root(path)
    warnings: list[str] = []  # --timeout, --memory-mb over [tool.tritonsmith]
    settings = command_settings(args, root, warnings)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    tolerances = _tolerances(args.tolerance or [])
    overrides: dict[str, object] = {"trials": args.trials, "tolerances": tolerances, "time_it": not args.no_timing,
                                    "rounds": args.rounds, "predict": not args.no_predict}
    if args.target:
        overrides["targets"] = tuple(t for value in args.target for t in split_csv(value))
    if args.kernel:
        overrides["kernels"] = tuple(k for value in args.kernel for k in split_csv(value))
    if args.torch_ops:
        overrides["torch_ops"] = args.torch_ops
    if args.protocol:  # a published gate, so a published result is judged as its authors judged it
        from ..benchmark.runner import PROTOCOLS

        chosen = PROTOCOLS[args.protocol]
        overrides.update(protocol=args.protocol, tolerances={**chosen.tolerances, **tolerances},
                         trials=max(args.trials, chosen.trials))
    options = Options.from_settings(settings, root, mode=mode_for_device(args.device), **overrides)
    failure_log = FailureLog(root)
    learned = active_learned(root)  # their codes label the errors they match
    with Pipeline(options, compile_size=args.jobs or compile_workers()) as pipeline:
        checked = pipeline.run(str(path), source, rules=learned)
    for code in record_checked(failure_log, checked, root=root):
        print(f"note: learned rule {code} flagged this file, which compiled: it is demoted "
              "(its matcher is retracted after a second such file)", file=sys.stderr)
    failure_log.close()
    if options.kernels and not checked.first_reports:
        raise UsageError(f"no kernel named {', '.join(options.kernels)} in {args.file}")
    reports, verdicts = checked.reports, checked.verdicts  # one verdict per spec the file holds
    if args.format == "json":
        listing = [
            {"kernel": r.kernel, "ok": r.ok, "status": r.status(), "assumed": r.assumed, "error": r.error,
             "results": r.results, "skipped": r.skipped,
             "findings": [{"code": f.code, "severity": f.severity.value, "message": f.message,
                           "line": f.span.start[0] + 1, "column": f.span.start[1] + 1} for f in r.findings]}
            for r in reports
        ]
        if not verdicts:
            print(json.dumps(listing, indent=2))
        else:  # files with a spec: the kernels plus each verdict
            print(json.dumps({"kernels": listing, "verification": [v.to_json() for v in verdicts]}, indent=2))
    else:
        shown = path.as_posix()
        for report in reports:
            print(f"{shown}: {report.kernel}: {report.status()}")
            for entry in report.results:
                if entry.get("ok"):
                    print(f"  {resource_summary(entry)}")
            for skipped in report.skipped:
                print(f"  {skipped.get('target')} · {skipped.get('config')}: skipped ({skipped.get('reason')})")
            for finding in report.findings:
                print(f"  {shown}:{finding.span.start[0] + 1}:{finding.span.start[1] + 1}: "
                      f"{finding.code} [{finding.severity.value}] {finding.message}")
        for verdict in verdicts:
            if verdict.rejections:
                print(f"{shown}: {verdict.name}: REJECTED by static checks, not run:")
                for rejection in verdict.rejections:
                    print(f"  {shown}:{rejection.line}: {rejection.describe()}")
            else:
                print(f"{shown}: {verdict.name}: {verdict.summary()}")
            for note in verdict.notes:
                print(f"  note: {note}")
        if not verdicts:
            print("Correctness against a reference is not checked: this file has no spec (a KernelBench "
                  "problem, or a launcher with <name>_inputs and <name>_reference; see docs/harness.md, "
                  "or use the code action \"Create verification harness\").")
    return 0 if checked.ok else 1
