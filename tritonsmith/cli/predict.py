"""`tritonsmith predict FILE`: the predicted GPU time of a file's forward pass, without a GPU
(evaluator/predicted.py)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .common import file_settings, read_text


def register(commands: Any) -> None:
    predict = commands.add_parser("predict", help="the predicted GPU time of a file's forward pass, without a GPU")
    predict.add_argument("file", metavar="FILE")
    predict.add_argument("--target", metavar="TARGET",
                         help="the GPU to predict for: sm_80 (A100), sm_86 (RTX A6000), sm_89 (L40S), sm_90 (H100 SXM), "
                              "sm_100 (B200) (default: the first of the targets setting, sm_90)")
    predict.add_argument("--verify", action="store_true", help="verify the file first and say whether it verified")
    predict.add_argument("--format", choices=("text", "json"), default="text")
    predict.add_argument("--timeout", type=int, metavar="SECONDS", help="hang limit of one forward pass")
    predict.add_argument("--memory-mb", type=int, metavar="MB", help="memory limit of each worker")
    predict.set_defaults(handler=cmd_predict)


def cmd_predict(args: argparse.Namespace) -> int:
    """The predicted GPU time of a file's forward pass (evaluator/predicted.py), per launch and in
    total, on the GPU modelled for the target; verified or not, and it says which."""
    from ..evaluator.pipeline import Options, Pipeline
    from ..evaluator.pool import compile_workers
    from ..evaluator.predict import format_seconds, gpu_model
    from ..evaluator.verify import detect_specs

    path = Path(args.file)
    source = read_text(path)
    settings, root = file_settings(args, path)
    overrides: dict[str, object] = {"time_it": False, "predict": True}
    if args.target:
        overrides["targets"] = (args.target,)
    options = Options.from_settings(settings, root, mode="interpreter", **overrides)
    if not re.fullmatch(r"sm_?\d+[a-z]?", options.targets[0]):
        raise UsageError(f"unknown target {options.targets[0]!r}: predict knows NVIDIA targets "
                         "(sm_80, sm_86, sm_89, sm_90, sm_100)")
    specs = detect_specs(path, source)
    if not specs:
        raise UsageError(f"{args.file}: no forward pass to predict: the file has no spec (a KernelBench problem, "
                         "or a launcher with <name>_inputs and <name>_reference; see docs/harness.md)")
    results: list[dict[str, Any]] = []
    with Pipeline(options, compile_size=compile_workers()) as pipeline:
        verdicts = {v.name: v for v in pipeline.run(str(path), source).verdicts} if args.verify else {}
        for spec in specs:
            verdict = verdicts.get(spec.name)
            if verdict is not None and "predicted" in verdict.details:  # predicted after it verified
                predicted = verdict.details["predicted"]
            else:
                predicted = pipeline.predict(spec, source, path=str(path)).to_json()
            prediction = predicted.get("prediction") or {}
            seconds = prediction.get("seconds")
            results.append({
                "file": path.as_posix(), "name": spec.name, "target": options.targets[0],
                "gpu": gpu_model(options.targets[0]).name,
                "seconds": seconds if seconds is None or seconds != float("inf") else None,
                "cannot_launch": seconds == float("inf"),
                "launches": prediction.get("launches") or [], "torch_seconds": prediction.get("torch_seconds"),
                "device_seconds": prediction.get("device_seconds"), "host_seconds": prediction.get("host_seconds"),
                "host_ops": prediction.get("host_ops"),
                "sizes": predicted.get("sizes") or {}, "profiled": predicted.get("profiled"),
                "notes": prediction.get("notes") or [],
                "error": predicted.get("error"), "summary": predicted.get("summary"),
                "elapsed_s": predicted.get("elapsed_s"),
                "verified": None if verdict is None else verdict.ok,
                "verdict": None if verdict is None else verdict.summary(),
            })
    if args.format == "json":
        print(json.dumps({**results[0], "predictions": results}, indent=2, default=str))
    else:
        for result in results:
            checked = ("not verified (`tritonsmith verify` or `--verify` checks it)" if result["verified"] is None
                       else "verified" if result["verified"] else f"verification: {result['verdict']}")
            print(f"{result['file']}: {result['name']}: {result['summary']} · {checked}")
            for launch in result["launches"]:
                shown = "cannot launch" if launch.get("seconds") == float("inf") else format_seconds(float(launch["seconds"]))
                print(f"  {launch.get('kernel')}: {shown} · {launch.get('bound')}-bound · {launch.get('programs')} "
                      f"programs, {launch.get('blocks_per_sm')} blocks/SM")
            if result["torch_seconds"]:
                print(f"  PyTorch operators: {format_seconds(float(result['torch_seconds']))}")
            for note in result["notes"]:
                print(f"  note: {note}")
    return 0 if all(r["seconds"] is not None or r["cannot_launch"] for r in results) else 1
