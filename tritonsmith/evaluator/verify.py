"""Verification of a kernel against its spec: static checks, correctness in separate
processes, the extra-shape trial, and GPU timing (server and command-line side).

A spec (specs.py) is a KernelBench problem or an in-file harness. The protocol runs through two
worker pools so that reference and candidate never share a process:

1. `verify_inputs` (reference worker): under `manual_seed(seed)` build the reference, draw the
   trial seeds after `manual_seed(42)`, and save each trial's inputs, the init inputs and the
   model's state_dict. No expected output exists yet.
2. `verify_candidate` (candidate worker, a different process): import only the candidate's
   source (the reference's parts blanked out), run each trial on pristine copies of the saved
   inputs with uninitialised memory poisoned, check inputs, threads and output types, save the
   outputs; then the dynamic defenses (determinism, fault injection, ghost replay).
3. `verify_reference` (reference worker): rebuild the reference, regenerate the inputs under
   each trial seed (checking the saved files were not altered), run it, compare, and lint the
   task (trivial answers must fail).

So the expected outputs never exist, in any process or file, while candidate code runs
(exploit 17), and the reference runs on inputs the candidate never touched (exploit 6).

Without a GPU everything runs under Triton's interpreter with the spec's sizes scaled down
(sizes.py). With one, after correctness, both sides are timed in their own workers on the same
GPU, in alternating rounds, one timing at a time per GPU (`gpu_lock`); see timing.py.

Nothing here imports torch or triton: the server imports this module (tests/test_invariants.py).
"""

from __future__ import annotations

import fcntl
import os
import random
import shutil
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .exploits import Rejection, static_checks
from .pool import WorkerPool
from .protocol import Job, Result
from .sizes import KERNELBENCH_INPUTS, rewrite_constants, scale_value, scaled_constants, tail_sizes
from .specs import (
    REFERENCE_NAMES,
    HarnessSpec,
    KernelBenchSpec,
    Spec,
    blank_out,
    detect_harnesses,
    detect_kernelbench,
    detect_specs,
)
from .stats import Timing, summarize

__all__ = [
    "DEFAULT_TOLERANCES",
    "HarnessSpec",
    "KernelBenchSpec",
    "Rejection",
    "Verdict",
    "default_mode",
    "detect_harnesses",
    "detect_kernelbench",
    "detect_specs",
    "gpu_lock",
    "rewrite_constants",
    "scale_value",
    "scaled_constants",
    "static_checks",
    "verify_spec",
]

DEFAULT_TOLERANCES: dict[str, float] = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}
"""atol = rtol per output dtype. fp32 1e-4 as KernelBench now uses ("inspired by torchbench");
fp16/bf16 1e-2. Other dtypes fall back to `float32`'s value. An fp32 `tl.dot` runs as TF32 on
NVIDIA tensor cores by default and misses 1e-4 on a GPU: pass `input_precision="ieee"` or give
the spec a looser tolerance (docs/harness.md, "Tolerances")."""

TIMING_ROUNDS = 10
RUNS_PER_ROUND = 10
HOST_GAP_MS = 0.25
"""Host time may exceed event time by launch overhead; more than this plus the event time
itself means work ran outside the timed stream (exploit 7)."""


@dataclass
class Verdict:
    """The outcome of verifying one candidate.

    Attributes:
        ok: every trial matched the reference and no check failed.
        mode: "interpreter" (TRITON_INTERPRET=1 on CPU tensors) or "gpu".
        name: what was verified: "ModelNew" or the harness's launcher.
        row: 0-based row of its definition (where the editor shows the verdict).
        trials: how many trials were run (or asked for, on an early failure).
        sizes: each scaled constant's name -> (original, used).
        stage: where it ended: "static", "inputs", "candidate", "reference", "compare", "spec",
            "shapes", "timing", "done".
        message: one line: the failure, or the success summary.
        rejections: the static-check failures, when `stage == "static"`.
        timing: GPU timings (never for the interpreter).
        notes: what was skipped and why (extra shapes the reference cannot run, ...).
        details: the workers' payloads, for `--format json` and debugging.
    """

    ok: bool
    mode: str
    trials: int
    name: str = "ModelNew"
    row: int = 0
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    stage: str = "done"
    message: str = ""
    rejections: list[Rejection] = field(default_factory=list)
    timing: Timing | None = None
    tail: dict[str, tuple[int, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def sizes_text(self) -> str:
        return ", ".join(f"{name}={used}" for name, (_, used) in self.sizes.items()) or "as written"

    def summary(self) -> str:
        """"verified · interpreter · 3 trials · sizes: batch_size=16, dim=192", or the failure."""
        if not self.ok:
            return f"FAILED · {self.mode} · {self.stage}: {self.message}"
        text = f"verified · {self.mode} · {self.trials} trials · sizes: {self.sizes_text()}"
        if self.tail:
            text += " · also " + ", ".join(f"{n}={v}" for n, (_, v) in self.tail.items())
        if self.timing is not None and self.mode == "gpu":
            text += " · timed as written: " + self.timing.summary()
        elif self.timing is not None:  # the search's relative measure; against PyTorch it means nothing
            text += (f" · interpreter time {self.timing.candidate_median:.4g} ms (median of "
                     f"{self.timing.runs}; not a GPU figure)")
        return text

    def to_json(self) -> dict[str, Any]:
        timing = None
        if self.timing is not None:
            timing = {**self.timing.__dict__, "flagged": self.timing.flagged}
        return {
            "name": self.name, "ok": self.ok, "mode": self.mode, "trials": self.trials, "stage": self.stage,
            "message": self.summary(), "sizes": {k: list(v) for k, v in self.sizes.items()},
            "extra_sizes": {k: list(v) for k, v in self.tail.items()},
            "rejections": [str(r) for r in self.rejections], "timing": timing, "notes": self.notes,
        }


def default_mode() -> str:
    """"gpu" when an NVIDIA or AMD device node exists, else "interpreter". A guess made
    without importing torch; `mode=` overrides it."""
    forced = os.environ.get("TRITONSMITH_VERIFY_MODE")
    if forced in ("gpu", "interpreter"):
        return forced
    nodes = ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/gpus", "/dev/kfd")
    return "gpu" if any(Path(node).exists() for node in nodes) else "interpreter"


@contextmanager
def gpu_lock() -> Iterator[None]:
    """One timing at a time per GPU, across processes (several editors, the command line)."""
    device = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0] or "0"
    path = Path(tempfile.gettempdir()) / f"tritonsmith-gpu-{os.getuid()}-{device}.lock"
    with open(path, "a+") as handle:  # noqa: PTH123
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _failure(result: Result) -> str:
    message = result.error or "the job failed"
    if result.failure is None and result.payload.get("traceback"):
        frames = [line for line in str(result.payload["traceback"]).splitlines() if line.startswith("  File ")]
        user = [f for f in frames if "tritonsmith/evaluator" not in f]
        if user:
            message += f" ({user[-1].strip()})"
    return message


@dataclass
class _Sources:
    """The three texts the workers import: the reference, the candidate (reference parts
    blanked out), and an inputs-only copy the candidate's timing worker draws inputs from."""

    reference: str
    candidate: str
    inputs: str
    readers: tuple[str, ...]
    reference_module: str | None


def _sources(spec: Spec, candidate_source: str | None = None) -> _Sources:
    """The texts to import. `candidate_source` replaces the candidate's file (a search's
    variant): its reference parts are blanked like the file's, and the reference and inputs
    still come from the spec's files, so a variant cannot change what it is checked against."""
    if isinstance(spec, HarnessSpec):
        source = spec.path.read_text(encoding="utf-8")
        return _Sources(
            reference=source,
            candidate=blank_out(candidate_source if candidate_source is not None else source,
                                spec.harness_names()),
            inputs=blank_out(source, {f"{spec.launcher}_reference"}),
            readers=(f"{spec.launcher}_inputs",),
            reference_module=None,
        )
    reference = spec.reference.read_text(encoding="utf-8")
    candidate = candidate_source if candidate_source is not None else spec.candidate.read_text(encoding="utf-8")
    if spec.same_file:
        return _Sources(
            reference=blank_out(reference, {"ModelNew"}),
            candidate=blank_out(candidate, set(REFERENCE_NAMES)),
            inputs=blank_out(reference, {"Model", "ModelNew"}),
            readers=KERNELBENCH_INPUTS,
            reference_module=None,
        )
    return _Sources(reference=reference, candidate=candidate, inputs=blank_out(reference, {"Model"}),
                    readers=KERNELBENCH_INPUTS, reference_module=spec.reference.stem)


class _Run:
    """One verification's pools, work folder and job settings."""

    def __init__(self, spec: Spec, sources: _Sources, work: Path, mode: str, seed: int,
                 tolerances: dict[str, float], timeout_s: float, memory_mb: int,
                 pools: tuple[WorkerPool, WorkerPool], cancel: threading.Event | None) -> None:
        self.spec, self.sources, self.work, self.mode, self.seed = spec, sources, work, mode, seed
        self.tolerances, self.timeout_s, self.memory_mb = tolerances, timeout_s, memory_mb
        self.reference_pool, self.candidate_pool = pools
        self.cancel = cancel

    def job(self, kind: str, folder: Path, **payload: Any) -> Job:
        common = {"data_dir": str(folder / "data"), "seed": self.seed, "mode": self.mode,
                  "problem": self.spec.problem(), "tolerances": self.tolerances}
        return Job(kind, {**common, **payload}, timeout_s=self.timeout_s, memory_mb=self.memory_mb)

    def files(self, name: str, sizes: Mapping[str, tuple[int, int]]) -> tuple[Path, dict[str, Path]]:
        """Write the three sources, with `sizes` applied, into a fresh folder of the work dir.
        Separate subfolders: the candidate cannot import the reference as a sibling module."""
        folder = self.work / name
        paths = {}
        filename = self.spec.candidate.name
        for role, text in (("reference", self.sources.reference), ("candidate", self.sources.candidate),
                           ("inputs", self.sources.inputs)):
            (folder / role).mkdir(parents=True)
            paths[role] = folder / role / filename
            paths[role].write_text(rewrite_constants(text, sizes), encoding="utf-8")
        (folder / "data").mkdir()
        return folder, paths

    def correctness(self, verdict: Verdict, name: str, sizes: Mapping[str, tuple[int, int]],
                    trials: int, checks: bool) -> tuple[bool, Path, dict[str, Path]]:
        """The three-job protocol; fills in `verdict` on a failure and returns False."""
        folder, paths = self.files(name, sizes)
        inputs = self.reference_pool.run(
            self.job("verify_inputs", folder, reference=str(paths["reference"]), trials=trials), self.cancel)
        verdict.details[f"{name}.inputs"] = inputs.payload
        if not inputs.ok:
            verdict.stage, verdict.message = "inputs", f"the reference failed: {_failure(inputs)}"
            return False, folder, paths
        manifest = inputs.payload
        candidate = self.candidate_pool.run(self.job(
            "verify_candidate", folder, candidate=str(paths["candidate"]), trial_seeds=manifest["trial_seeds"],
            checks=checks), self.cancel)
        verdict.details[f"{name}.candidate"] = candidate.payload
        if not candidate.ok or candidate.payload.get("error"):
            verdict.stage = "candidate"
            verdict.message = str(candidate.payload.get("error")) if candidate.ok else _failure(candidate)
            if candidate.failure == "crashed" and self.mode == "interpreter":
                # The interpreter has no bounds checks: a load or store outside its tensor
                # writes over the worker's own memory.
                verdict.message += " (under the interpreter this is usually a load or store out of bounds: check the masks)"
            return False, folder, paths
        compared = self.reference_pool.run(self.job(
            "verify_reference", folder, reference=str(paths["reference"]), trial_seeds=manifest["trial_seeds"],
            input_hashes=manifest["input_hashes"], checks=checks), self.cancel)
        verdict.details[f"{name}.reference"] = compared.payload
        if not compared.ok:
            verdict.stage, verdict.message = "reference", f"the reference failed: {_failure(compared)}"
            return False, folder, paths
        failures = [t for t in compared.payload.get("trials", []) if not t.get("ok")]
        if compared.payload.get("error") or failures:
            verdict.stage = "compare"
            verdict.message = str(compared.payload.get("error") or failures[0]["error"])
            return False, folder, paths
        if compared.payload.get("degenerate"):
            verdict.stage, verdict.message = "spec", str(compared.payload["degenerate"])
            return False, folder, paths
        return True, folder, paths

    def timing(self, verdict: Verdict, folder: Path, paths: dict[str, Path], rounds: int, runs: int) -> bool:
        """Alternating rounds of both sides on this GPU, then the check of the timed outputs."""
        chooser = random.Random()
        check_key = chooser.randrange(2**31 - 1)
        round_seeds = [chooser.randrange(2**31 - 1) for _ in range(rounds)]
        times: dict[str, list[list[float]]] = {"reference": [], "candidate": []}
        host: dict[str, list[float]] = {"reference": [], "candidate": []}
        environment: dict[str, Any] = {}
        # The init inputs and weights at these sizes, for the candidate to load (no trials).
        init = self.reference_pool.run(self.job("verify_inputs", folder, reference=str(paths["reference"]), trials=0),
                                       self.cancel)
        if not init.ok:
            verdict.stage, verdict.message = "timing", f"the reference failed at the sizes as written: {_failure(init)}"
            return False
        with gpu_lock():
            for r, round_seed in enumerate(round_seeds):
                order = ("reference", "candidate") if r % 2 == 0 else ("candidate", "reference")
                for role in order:
                    pool = self.reference_pool if role == "reference" else self.candidate_pool
                    result = pool.run(self.job(
                        "time_round", folder, role=role, file=str(paths[role]), inputs_file=str(paths["inputs"]),
                        round=r, round_seed=round_seed, runs=runs, warmup=3 if r == 0 else 1,
                        check_index=chooser.randrange(runs) if role == "candidate" else -1,
                        check_seed=round_seed ^ check_key,
                        environment=r == 0 and role == "reference"), self.cancel)
                    if not result.ok or result.payload.get("error"):
                        verdict.stage = "timing"
                        verdict.message = str(result.payload.get("error")) if result.ok else (
                            f"timing the {role} failed: {_failure(result)}")
                        return False
                    times[role].append([float(t) for t in result.payload["event_ms"]])
                    host[role] += [float(t) for t in result.payload["host_ms"]]
                    environment = environment or dict(result.payload.get("environment") or {})
            checked = self.reference_pool.run(self.job(
                "time_check", folder, file=str(paths["reference"]), round_seeds=round_seeds,
                check_seeds=[seed ^ check_key for seed in round_seeds]), self.cancel)
        if not checked.ok or checked.payload.get("error"):
            verdict.stage = "timing"
            verdict.message = str(checked.payload.get("error")) if checked.ok else _failure(checked)
            return False
        timing = summarize(times["reference"], times["candidate"], environment)
        event = timing.candidate_median
        host_median = sorted(host["candidate"])[len(host["candidate"]) // 2]
        if self.mode == "gpu" and host_median > 2 * event + HOST_GAP_MS:
            verdict.stage = "timing"
            verdict.message = (f"host time {host_median:.3f} ms against {event:.3f} ms on the timed stream: "
                               "work runs outside the stream the timer watches (exploit 7: side stream)")
            return False
        verdict.timing = timing
        return True


def verify_spec(
    spec: Spec,
    *,
    trials: int = 3,
    seed: int = 42,
    mode: str | None = None,
    tolerances: Mapping[str, float] | None = None,
    timeout_s: float = 300.0,
    memory_mb: int = 8192,
    env: Mapping[str, str] | None = None,
    extra_shapes: bool | None = None,
    time_it: bool = True,
    rounds: int = TIMING_ROUNDS,
    runs: int = RUNS_PER_ROUND,
    pools: tuple[WorkerPool, WorkerPool] | None = None,
    cancel: threading.Event | None = None,
    candidate_source: str | None = None,
    interpreter_timing: bool = False,
) -> Verdict:
    """Run the static checks, the correctness protocol, the extra-shape trial and (on a GPU)
    the timing for `spec`; never raises for a bad candidate (the verdict says what went wrong).

    Args:
        trials: at least 3 (KernelBench's scripts use 5); seeds drawn after manual_seed(42).
        seed: the seed both models are built under, so their weights match.
        mode: "interpreter" or "gpu" (default: `default_mode()`).
        tolerances: atol = rtol per dtype name, over `DEFAULT_TOLERANCES` and the spec's own.
        extra_shapes: also run one trial at odd sizes (default: the spec says whether it takes
            any shape; harnesses do, KernelBench problems only with `# tritonsmith: any-shape`).
        time_it: on a GPU, time reference and candidate after they agree.
        rounds, runs: timing rounds, and timed calls per round and side.
        pools: (reference, candidate) worker pools to reuse (the server keeps them warm);
            default: two fresh ones, closed at the end.
        candidate_source: verify this text as the candidate instead of the spec's file (a
            search's variant); the reference still comes from the spec's files.
        interpreter_timing: also time under the interpreter (host time, for the search's
            relative comparisons; labelled "interpreter", never a GPU speedup).
    """
    mode = mode or default_mode()
    trials = max(3, trials)
    tol = {**DEFAULT_TOLERANCES, **(spec.tolerances if isinstance(spec, HarnessSpec) else {}), **(tolerances or {})}
    sources = _sources(spec, candidate_source)
    sizes = scaled_constants(sources.reference, sources.readers, gpu=mode == "gpu")
    verdict = Verdict(ok=False, mode=mode, trials=trials, name=spec.name, row=spec.row, sizes=sizes)
    rejections = static_checks(sources.candidate, reference_module=sources.reference_module,
                               launcher=spec.launcher if isinstance(spec, HarnessSpec) else None)
    if rejections:
        verdict.stage, verdict.rejections = "static", rejections
        verdict.message = "; ".join(str(r) for r in rejections)
        return verdict

    work = Path(tempfile.mkdtemp(prefix="tritonsmith-verify-")).resolve()
    own_pools = pools is None
    if pools is None:
        worker_env = dict(os.environ if env is None else env)
        if mode == "interpreter":
            worker_env["TRITON_INTERPRET"] = "1"
        pools = (WorkerPool(1, env=worker_env), WorkerPool(1, env=worker_env))
    try:
        run = _Run(spec, sources, work, mode, seed, tol, timeout_s, memory_mb, pools, cancel)
        ok, folder, paths = run.correctness(verdict, "main", sizes, trials, checks=True)
        if not ok:
            return verdict
        if extra_shapes if extra_shapes is not None else spec.any_shape:
            tail = tail_sizes(sources.reference, sources.readers, sizes)
            if tail:
                probe = Verdict(ok=False, mode=mode, trials=1)
                if run.correctness(probe, "tail", tail, 1, checks=False)[0]:
                    verdict.tail = tail
                elif probe.stage in ("inputs", "reference"):
                    verdict.notes.append(f"extra sizes skipped: the reference fails at them ({probe.message})")
                else:
                    shown = ", ".join(f"{n}={v}" for n, (_, v) in tail.items())
                    verdict.stage = "shapes"
                    verdict.message = (f"at sizes {shown}: {probe.message} "
                                       "(exploit 14: hard-coding the test shape)")
                    return verdict
            else:
                verdict.notes.append("extra sizes skipped: the inputs use no module-level size constants")
        if time_it and (mode == "gpu" or interpreter_timing):
            # Timing at the sizes as written on a GPU; at the checked sizes under the interpreter.
            folder, paths = run.files("timed", {} if mode == "gpu" else sizes)
            if not run.timing(verdict, folder, paths, rounds, runs):
                return verdict
        verdict.ok, verdict.stage = True, "done"
        verdict.message = verdict.summary()
        return verdict
    finally:
        if own_pools:
            for pool in pools:
                pool.close()
        shutil.rmtree(work, ignore_errors=True)


def verify_kernelbench(spec: KernelBenchSpec, **options: Any) -> Verdict:
    """`verify_spec` for a KernelBench problem (kept for callers of the first version)."""
    return verify_spec(spec, **options)
