"""Fault figures: time from start to verdict for a hung candidate, a signal-ignoring hang and
slow memory growth (issue 12, item 3), through the real verifier on the CPU.

Each fault is a KernelBench-format file written to a temporary folder: the reference is a ReLU
over 16x256 (the example's shape after size scaling), `ModelNew` launches a correct Triton ReLU
kernel after its `forward` has misbehaved:

- ``endless-loop``: ``while True: pass``;
- ``ignores-signals``: SIGTERM, SIGINT and SIGHUP set to SIG_IGN, then ``time.sleep(3600)`` in a
  loop (in C: the interpreter never runs a Python signal handler);
- ``memory-growth``: 64 MiB at a time (``torch.ones``, so every page is written), a pause of
  ``--growth-pause`` seconds between steps (0.1 s by default: at most 640 MiB/s);
- ``fine``: nothing (the control: what a verification of the same problem costs, both worker
  starts and the reference included).

Each runs through ``tritonsmith.evaluator.verify.verify_spec`` with its default limits (the hang
limit max(30 s, 20x the reference's forward pass), the memory limit a quarter of the available
memory) and fresh worker pools, exactly as ``tritonsmith verify FILE --device cpu`` runs it after
the compile step; the time is from the call to the verdict. The JSON holds each verdict's
message, the limits it ran under and the machine's state (load, available memory).

Usage::

    .venv/bin/python bench/faults.py --repeat 3 --json docs/benchmarks/faults-1.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tritonsmith.evaluator.sandbox import available_memory_mb, default_memory_mb
from tritonsmith.evaluator.verify import detect_kernelbench, verify_spec

PROBLEM = '''\
import signal
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


batch_size = 16
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def relu(x):
    out = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
FAULT
        return relu(x)
'''

FAULTS = {
    "endless-loop": """\
        while True:
            pass""",
    "ignores-signals": """\
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN)
        while True:
            time.sleep(3600)""",
    "memory-growth": """\
        hoard = []
        while True:
            hoard.append(torch.ones(16 * 1024 * 1024))  # 64 MiB, written
            time.sleep(PAUSE)""",
    "fine": """\
        pass""",
}


def machine() -> dict[str, Any]:
    import torch
    import triton

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "triton": triton.__version__,
    }


def state() -> dict[str, Any]:
    return {"load_1m": round(os.getloadavg()[0], 2), "available_mb": available_memory_mb()}


def run_one(folder: Path, fault: str, pause: float) -> dict[str, Any]:
    path = folder / f"{fault.replace('-', '_')}.py"
    path.write_text(PROBLEM.replace("FAULT", FAULTS[fault].replace("PAUSE", repr(pause))))
    spec = detect_kernelbench(path)
    assert spec is not None, path
    before = state()
    started = time.monotonic()
    verdict = verify_spec(spec, mode="interpreter")
    seconds = time.monotonic() - started
    limits = dict(verdict.details.get("limits") or {})
    return {"fault": fault, "seconds": round(seconds, 2), "ok": verdict.ok, "stage": verdict.stage,
            "verdict": verdict.summary(), "limits": limits, "before": before, "after": state()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each fault (interleaved)")
    parser.add_argument("--faults", default="endless-loop,ignores-signals,memory-growth,fine")
    parser.add_argument("--growth-pause", type=float, default=0.1,
                        help="seconds between 64 MiB steps of memory-growth")
    parser.add_argument("--json", type=Path, help="write the raw results here")
    args = parser.parse_args(argv)
    faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    results: list[dict[str, Any]] = []
    began = time.time()
    with tempfile.TemporaryDirectory(prefix="tritonsmith-faults-") as tmp:
        for round_ in range(args.repeat):
            for fault in faults:
                folder = Path(tmp) / f"{round_}-{fault}"
                folder.mkdir()
                result = run_one(folder, fault, args.growth_pause)
                result["round"] = round_
                results.append(result)
                print(f"{fault}: {result['seconds']:.1f} s · {result['verdict']}", file=sys.stderr, flush=True)
    summary = {}
    for fault in faults:
        times = [r["seconds"] for r in results if r["fault"] == fault]
        summary[fault] = {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
                          "runs": len(times),
                          "verdicts_named": all(("(hang)" in r["verdict"] or "memory limit" in r["verdict"])
                                                for r in results if r["fault"] == fault) if fault != "fine"
                          else all(r["ok"] for r in results if r["fault"] == fault)}
    report = {
        "benchmark": "faults",
        "command": "python bench/faults.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(began)),
        "machine": machine(),
        "default_memory_mb_at_end": default_memory_mb(),
        "growth_pause_s": args.growth_pause,
        "summary": summary,
        "results": results,
    }
    for fault, row in summary.items():
        print(f"{fault}: median {row['median_s']:.1f} s (min {row['min_s']:.1f}, max {row['max_s']:.1f}, "
              f"{row['runs']} runs)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
