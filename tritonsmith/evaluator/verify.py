"""Verification of a kernel against its spec: static checks, correctness in separate
processes, the extra-shape trial, and GPU timing (server and command-line side).

A spec (specs.py) is a KernelBench problem or an in-file harness. The protocol runs through two
worker pools so that reference and candidate never share a process:

1. `verify_inputs` (reference worker): under `manual_seed(seed)` build the reference, draw the
   trial seeds after `manual_seed(42)`, and save each trial's inputs and the init inputs. No
   expected output exists yet.
2. `verify_candidate` (candidate worker, a different process): import only the candidate's
   source (the reference's parts blanked out), run each trial on pristine copies of the saved
   inputs with uninitialised memory poisoned, check inputs, threads and output types, save the
   outputs, and record who computed what (attribution.py); then the dynamic defenses
   (determinism, fault injection, ghost replay).
3. `verify_reference` (reference worker): rebuild the reference, regenerate the inputs under
   each trial seed (checking the saved files were not altered), run it, compare, and lint the
   task (trivial answers must fail); then the parent judges the work attribution (policy.py).

So the expected outputs never exist, in any process or file, while candidate code runs
(exploit 17), and the reference runs on inputs the candidate never touched (exploit 6).

Without a GPU everything runs under Triton's interpreter with the spec's sizes scaled down
(sizes.py). With one, after correctness, both sides are timed in their own workers on the same
GPU, in alternating rounds, one timing at a time per GPU (`gpu_lock`); see timing.py.

Nothing here imports torch or triton: the server imports this module (tests/test_invariants.py).
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import os
import random
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..keys import user_key
from .exploits import ANSWERED_AS_A_GPU, Rejection, cuda_autocast, device_branches, static_checks
from .jail import JAIL_REDUCED
from .policy import judge_work, parse_policy
from .pool import CANDIDATE_WARM_MODULES, WorkerPool
from .protocol import Job, Result
from .sandbox import STARTUP_S, default_memory_mb, digests_for, hang_limit, runs_dir, write_recorded
from .sizes import (
    KERNELBENCH_INPUTS,
    SizePlan,
    plan_sizes,
    rewrite_constants,
    scaled_constants,
    size_branches,
    uniform_plan,
)
from .specs import (
    REFERENCE_NAMES,
    TORCH_OPS_COMMENT,
    HarnessSpec,
    KernelBenchSpec,
    Spec,
    blank_out,
    detect_harnesses,
    detect_kernelbench,
    detect_specs,
    only_definitions,
)
from .standing import Stage, Standing, standing
from .stats import Timing, interval_tight, summarize
from .tracebacks import syntax_error, user_frame, user_paths

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
    "mode_for_device",
    "rewrite_constants",
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
        sizes: each size constant the inputs read -> (as written, used in the trials).
        stage: where it ended (`standing.Stage`; `standing` reads it as verified, NOT VERIFIED
            or FAILED).
        message: one line: the failure, or the success summary.
        rejections: the static-check failures, when `stage == "static"`.
        timing: GPU timings (never for the interpreter).
        notes: what was skipped and why (extra shapes the reference cannot run, ...).
        details: the workers' payloads, for `--format json` and debugging.
        sandbox: "namespaces" where candidate code ran in the jail (`jail.py`), "reduced" where
            the OS allowed none (the summary then says so).
    """

    ok: bool
    mode: str
    trials: int
    name: str = "ModelNew"
    row: int = 0
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    stage: Stage = Stage.DONE
    message: str = ""
    rejections: list[Rejection] = field(default_factory=list)
    timing: Timing | None = None
    tail: dict[str, tuple[int, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    work: str = ""  # who computed what (policy.py): "Triton computes: k ×1; PyTorch computes: nothing"
    sandbox: str = ""
    protocol: str = ""  # a published benchmark's gate it was judged by (`verify --protocol`), if any

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "stage":  # the vocabulary is closed: an unknown stage is a bug, raised here
            value = Stage(value)
        super().__setattr__(name, value)

    @property
    def standing(self) -> Standing:
        """verified, NOT VERIFIED or FAILED (standing.standing: the one rule)."""
        return standing(self.ok, self.stage)

    def sizes_text(self) -> str:
        """"batch_size=16 (of 4096), dim=3072 (of 393216)", or "as written (N=64000)"."""
        if all(written == used for written, used in self.sizes.values()):
            shown = ", ".join(f"{name}={used}" for name, (_, used) in self.sizes.items())
            return f"as written ({shown})" if shown else "as written"
        return ", ".join(f"{name}={used}" if written == used else f"{name}={used} (of {written})"
                         for name, (written, used) in self.sizes.items())

    def short_summary(self) -> str:
        """One line for a code lens: "verified · interpreter · 3 trials" (with the speedup on a
        GPU), or "FAILED · interpreter · compare: output 1: ..." cut short; `summary` has it all."""
        if not self.ok:
            first = (self.message or "").splitlines()[0] if self.message else ""
            text = f"{self.standing} · {self.mode} · {self.stage}: {first}"
            return text if len(text) <= 90 else text[:89].rstrip() + "…"
        text = f"verified · {self.mode} · {self.trials} trials"
        if self.timing is not None:
            text += f" · {self.timing.estimate:.2f}× vs reference"
        return text

    def summary(self) -> str:
        """"verified · interpreter · 3 trials · sizes: batch_size=16, dim=192", or the failure."""
        if not self.ok:
            ran = f" · sizes: {self.sizes_text()}" if self.sizes and self.stage not in ("static", "shapes", "syntax", "compile") else ""
            return f"{self.standing} · {self.mode}{self._protocol()} · {self.stage}: {self.message}{ran}"
        text = f"verified · {self.mode}{self._protocol()} · {self.trials} trials · sizes: {self.sizes_text()}"
        if self.work:
            text += f" · {self.work}"
        if self.tail:
            text += " · also at " + ", ".join(f"{n}={v}" for n, (_, v) in self.tail.items())
        else:  # the notes say why
            text += " · no odd-size trial"
        if self.sandbox == "reduced":
            text += " · sandbox: reduced"
        if self.timing is not None and self.mode == "gpu":
            text += " · timed as written: " + self.timing.summary()
        elif self.timing is not None:  # the search's relative measure; against PyTorch it means nothing
            text += (f" · interpreter time {self.timing.candidate_median:.4g} ms (median of "
                     f"{self.timing.runs}; not a GPU figure)")
        predicted = self.details.get("predicted")
        if isinstance(predicted, dict) and predicted.get("summary"):  # predicted.py, without a GPU
            text += f" · {predicted['summary']}"
        return text

    def _protocol(self) -> str:
        return f" · {self.protocol} protocol" if self.protocol else ""

    def to_json(self) -> dict[str, Any]:
        timing = None
        if self.timing is not None:
            timing = {**self.timing.__dict__, "flagged": self.timing.flagged}
        return {
            "name": self.name, "ok": self.ok, "mode": self.mode, "trials": self.trials, "stage": self.stage,
            "message": self.summary(), "sizes": {k: list(v) for k, v in self.sizes.items()},
            "extra_sizes": {k: list(v) for k, v in self.tail.items()},
            "sizes_as_written": all(written == used for written, used in self.sizes.values()),
            "rejections": [str(r) for r in self.rejections], "timing": timing, "notes": self.notes,
            "work": self.work, "attribution": self.details.get("attribution"), "sandbox": self.sandbox,
            "predicted": self.details.get("predicted"),  # predicted.py's figure without a GPU, when made
            "protocol": self.protocol or None,
        }


def default_mode() -> str:
    """"gpu" when an NVIDIA or AMD device node exists, else "interpreter". A guess made
    without importing torch; `mode=` overrides it."""
    forced = os.environ.get("TRITONSMITH_VERIFY_MODE")
    if forced in ("gpu", "interpreter"):
        return forced
    nodes = ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/gpus", "/dev/kfd")
    return "gpu" if any(Path(node).exists() for node in nodes) else "interpreter"


def mode_for_device(device: str) -> str:
    """A command's `--device` (cpu, gpu, auto) -> the verifier's mode; asking for a GPU where
    there is none is a usage error."""
    from ..errors import UsageError

    if device == "cpu":
        return "interpreter"
    if device == "gpu":
        if default_mode() != "gpu":
            raise UsageError("--device gpu: no GPU found on this machine (no /dev/nvidiactl or /dev/kfd); "
                             "use --device cpu to verify under Triton's interpreter")
        return "gpu"
    return default_mode()


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


_LIMIT_HINTS = {
    "timeout": (" (each forward pass, and the setup before the first, must end within max(30 s, 20× the "
                "reference's own forward pass) unless --timeout SECONDS or the verifyTimeout setting says otherwise)"),
    "out-of-memory": " (--memory-mb MB or the memoryLimitMb setting changes the limit)",
}


def _failure(result: Result, work: Path | None = None, roles: Mapping[str, str] | None = None) -> str:
    """A failed job in one line. With the run's work folder and the user's file per role, the
    worker's copies are named as the user's files, and the place is the user's own line where
    the root cause was raised (tracebacks.py), never a scratch path."""
    message = result.error or "the job failed"
    if result.failure in _LIMIT_HINTS and ("(hang)" in message or "memory limit" in message):
        message += _LIMIT_HINTS[result.failure]
    folder, names = (str(work) if work is not None else None), dict(roles or {})
    message = user_paths(message, folder, names)
    if result.failure is None and result.payload.get("traceback"):
        text = str(result.payload["traceback"])
        where = user_frame(text, folder, names)
        if where is not None:
            message += f" (at {where})"
        else:
            frames = [line for line in text.splitlines() if line.startswith("  File ")]
            user = [f for f in frames if "tritonsmith/evaluator" not in f]
            if user:
                message += f" ({user_paths(user[-1].strip(), folder, names)})"
    return message


IMPORT_ERRORS = ("ModuleNotFoundError: ", "ImportError: ")


def import_failure(message: str) -> str | None:
    """For a job that failed on an import ("ModuleNotFoundError: No module named 'liger_kernel'
    (at k.py:4, in <module>)"): that the file's imports fail in the verification workers, and
    the two ways to make them work; None for any other failure. A missing module is the
    environment's, not a reference's or a kernel's fault."""
    if not message.startswith(IMPORT_ERRORS):
        return None
    return (f"the file's imports fail in the verification workers ({message}): install the package in the "
            f"interpreter that runs tritonsmith ({sys.executable}), or, for a module of your workspace, add "
            "the folder that holds it to the importPaths setting (import-paths in [tool.tritonsmith] of "
            "pyproject.toml), which the sandbox then lets the workers read")


CUDA_ONLY_ERRORS = ("Tried to instantiate dummy base class", "has no attribute '_cuda_", "Torch not compiled with CUDA",
                    "Found no NVIDIA driver")
"""How a CUDA-only call (`torch.cuda.Event`, `torch.cuda.current_stream()`, a CUDA allocator
query) fails on the CPU, where the shim (cuda_shim.py) cannot stand in for it."""


def cuda_only_failure(message: str) -> str | None:
    """For a candidate that failed on a CUDA-only call under the interpreter: that the CPU run
    cannot honour it (NOT VERIFIED, the call named by the message's own frame), not that the
    kernel is wrong; None for any other failure."""
    if not any(marker in message for marker in CUDA_ONLY_ERRORS):
        return None
    return (f"the candidate calls a CUDA-only API the CPU run cannot honour ({message}); the kernel itself was "
            "not judged: verify on a GPU")


def _syntax(spec: Spec, candidate_source: str | None) -> tuple[str, dict[str, Any]] | None:
    """A syntax error in the candidate or the reference, as "syntax error at file:line:col: msg"
    and where it is; None when both parse."""
    files = [(spec.candidate, candidate_source), (spec.reference, None)]
    for path, text in files:
        try:
            source = text if text is not None else path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found = syntax_error(source, str(path))
        if found is not None:
            message, line, column = found
            return (f"syntax error at {path}:{line}:{column}: {message}",
                    {"path": str(path), "line": line, "column": column, "message": message})
    return None


@dataclass
class _Sources:
    """The three texts the workers import: the reference, the candidate (reference parts
    blanked out), and an inputs-only copy the candidate's timing worker draws inputs from."""

    reference: str
    candidate: str
    inputs: str
    readers: tuple[str, ...]
    reference_module: str | None


def _ignored_directives(spec: Spec, candidate_source: str | None) -> list[str]:
    """A policy directive the candidate wrote for itself is not obeyed: a search's variant is
    judged under the opened file's policy, a solution beside a separate reference under the
    reference's. The verdict says so."""
    shown = spec.torch_ops or "auto"
    written = None
    if candidate_source is not None and (match := TORCH_OPS_COMMENT.search(candidate_source)) is not None:
        written = match.group(1).strip()
        if written == (spec.torch_ops or "").strip():
            return []
    elif isinstance(spec, KernelBenchSpec):
        written = spec.ignored_torch_ops
    if written is None:
        return []
    source = "the opened file's" if candidate_source is not None else "the reference's file"
    return [f"the candidate's `# tritonsmith: torch-ops = {written}` is ignored: the policy on PyTorch compute is "
            f"set by {source} ({shown})"]


def _sources(spec: Spec, candidate_source: str | None = None) -> _Sources:
    """The texts to import. `candidate_source` replaces the candidate's file (a search's
    variant): its reference parts are blanked like the file's, and the reference and inputs
    still come from the spec's files, so a variant cannot change what it is checked against.
    Where one file holds both, the reference's worker imports only the reference's definitions
    (`only_definitions`): none of the candidate's module-level code runs there."""
    if isinstance(spec, HarnessSpec):
        source = spec.path.read_text(encoding="utf-8")
        return _Sources(
            reference=only_definitions(source, spec.harness_names()),
            candidate=blank_out(candidate_source if candidate_source is not None else source,
                                spec.harness_names()),
            inputs=only_definitions(source, {f"{spec.launcher}_inputs"}),
            readers=(f"{spec.launcher}_inputs",),
            reference_module=None,
        )
    reference = spec.reference.read_text(encoding="utf-8")
    candidate = candidate_source if candidate_source is not None else spec.candidate.read_text(encoding="utf-8")
    if spec.same_file:
        return _Sources(
            reference=only_definitions(reference, set(REFERENCE_NAMES)),
            candidate=blank_out(candidate, set(REFERENCE_NAMES)),
            inputs=only_definitions(reference, set(KERNELBENCH_INPUTS)),
            readers=KERNELBENCH_INPUTS,
            reference_module=None,
        )
    return _Sources(reference=reference, candidate=candidate, inputs=blank_out(reference, {"Model"}),
                    readers=KERNELBENCH_INPUTS, reference_module=spec.reference.stem)


def _unseen(kernels: list[str], same_answers: bool) -> tuple[Stage, str]:
    """The verdict on kernels whose doing nothing leaves the output as it was (ghost replay)."""
    named = ", ".join(kernels)
    if same_answers:  # the task's output ignores its inputs: it cannot show the kernel's work either
        return Stage.UNSEEN, (f"the reference's output is the same for different inputs, and the output stays the "
                              f"same when kernel {named} does nothing: the task's output does not show its work, so "
                              "nothing checks it (the reference discards what the kernel computes; fix the task so "
                              "its output depends on its inputs)")
    return Stage.CANDIDATE, (f"the output is the same when kernel {named} does nothing: its work does not reach the "
                             "result (exploit 2: kernel launched for show, other code does the work)")


class _Run:
    """One verification's pools, work folder and job settings."""

    hang_override: float | None = None  # the user's hang limit (--timeout), if any
    reference_s: float | None = None  # the reference's own forward pass, once verify_inputs ran

    def limits(self) -> dict[str, Any]:
        """The limits jobs run under now (sandbox.py): hang limit per forward pass, memory."""
        return {"hang_s": hang_limit(self.reference_s, self.hang_override), "memory_mb": self.memory_mb,
                "reference_forward_s": self.reference_s, "hang_set_by_user": self.hang_override is not None}

    def __init__(self, spec: Spec, sources: _Sources, work: Path, mode: str, seed: int,
                 tolerances: dict[str, float], timeout_s: float, memory_mb: int,
                 pools: tuple[WorkerPool, WorkerPool], cancel: threading.Event | None,
                 policy: str | tuple[str, ...] = "auto") -> None:
        self.spec, self.sources, self.work, self.mode, self.seed = spec, sources, work, mode, seed
        self.policy = policy
        self.tolerances, self.timeout_s, self.memory_mb = tolerances, timeout_s, memory_mb
        self.reference_pool, self.candidate_pool = pools
        self.cancel = cancel
        self.redraw = False  # standard-normal inputs in place of the task's own (a degenerate task)
        self.written: dict[str, str] = {}  # sha256 of each source file as written, by path

    def failure(self, result: Result) -> str:
        """`_failure` naming the user's files, not the worker's copies of them."""
        roles = {"candidate": str(self.spec.candidate), "reference": str(self.spec.reference),
                 "inputs": str(self.spec.reference)}
        return _failure(result, self.work, roles)

    def reference_failed(self, result: Result, stage: Stage, where: str = "") -> tuple[Stage, str]:
        """(stage, message) of a failed reference job: "imports" and what to do when the file
        cannot import a module in the workers (the environment's fault, not the reference's),
        else `stage` and "the reference failed{where}: ..."."""
        message = self.failure(result)
        if (imports := import_failure(message)) is not None:
            return Stage.IMPORTS, imports
        return stage, f"the reference failed{where}: {message}"

    def job(self, kind: str, folder: Path, **payload: Any) -> Job:
        common = {"data_dir": str(folder / "data"), "seed": self.seed, "mode": self.mode,
                  "problem": {**self.spec.problem(), "redraw": self.redraw}, "tolerances": self.tolerances}
        # A job is hung when no forward pass ends within the hang limit (progress.py); the
        # whole job's timeout stays as a backstop. No address-space cap where CUDA runs.
        stall = hang_limit(self.reference_s, self.hang_override)
        # The digests of the files it imports, as written here: a candidate that edits one (its
        # own, a concurrent one's, the reference) is caught, and the import uses checked bytes.
        payload["sha256"] = digests_for(payload, self.written)
        return Job(kind, {**common, **payload}, timeout_s=max(self.timeout_s, 10 * stall),
                   memory_mb=self.memory_mb, stall_s=stall, startup_s=STARTUP_S,
                   limit_address_space=self.mode == "interpreter")

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
            write_recorded(paths[role], rewrite_constants(text, sizes), self.written)
        (folder / "data").mkdir()
        return folder, paths

    def correctness(self, verdict: Verdict, name: str, sizes: Mapping[str, tuple[int, int]],
                    trials: int, checks: bool) -> tuple[bool, Path, dict[str, Path]]:
        """The three-job protocol; fills in `verdict` on a failure and returns False."""
        folder, paths = self.files(name, sizes)
        inputs = self.reference_pool.run(
            self.job("verify_inputs", folder, reference=str(paths["reference"]), trials=trials), self.cancel)
        verdict.details[f"{name}.inputs"] = inputs.payload
        if self.reference_s is None and inputs.ok and inputs.payload.get("forward_s"):
            self.reference_s = float(inputs.payload["forward_s"])
        verdict.details["limits"] = self.limits()
        if not inputs.ok:
            verdict.stage, verdict.message = self.reference_failed(inputs, Stage.INPUTS)
            return False, folder, paths
        manifest = inputs.payload
        candidate = self.candidate_pool.run(self.job(
            "verify_candidate", folder, candidate=str(paths["candidate"]), trial_seeds=manifest["trial_seeds"],
            checks=checks), self.cancel)
        verdict.details[f"{name}.candidate"] = candidate.payload
        if not candidate.ok or candidate.payload.get("error"):
            # The worker may name one other stage: the work left the kernels (integrity.RoundTrips).
            verdict.stage = Stage.WORK if candidate.ok and candidate.payload.get("stage") == "work" else Stage.CANDIDATE
            verdict.message = str(candidate.payload.get("error")) if candidate.ok else self.failure(candidate)
            if not candidate.ok and (imports := import_failure(verdict.message)) is not None:
                verdict.stage, verdict.message = Stage.IMPORTS, imports
            elif self.mode == "interpreter" and (cuda_only := cuda_only_failure(verdict.message)) is not None:
                verdict.stage, verdict.message = Stage.CUDA_ONLY, cuda_only
            if candidate.failure == "crashed" and self.mode == "interpreter":
                # A kernel's loads and stores cannot crash the worker any more (bounds.py stops
                # them first); what is left is native code reached some other way.
                verdict.message += (" (the interpreter's loads and stores are bounds-checked, so the crash came from "
                                    "native code the candidate reached: NumPy, ctypes, an extension)")
            return False, folder, paths
        compared = self.reference_pool.run(self.job(
            "verify_reference", folder, reference=str(paths["reference"]), trial_seeds=manifest["trial_seeds"],
            input_hashes=manifest["input_hashes"], output_hashes=candidate.payload.get("output_hashes"),
            repeats=candidate.payload.get("repeats") or [],
            held=candidate.payload.get("held") or [], held_hash=candidate.payload.get("held_hash"),
            checks=checks), self.cancel)
        verdict.details[f"{name}.reference"] = compared.payload
        if not compared.ok:
            verdict.stage, verdict.message = self.reference_failed(compared, Stage.REFERENCE)
            return False, folder, paths
        failures = [t for t in compared.payload.get("trials", []) if not t.get("ok")]
        if compared.payload.get("error") or failures:
            verdict.stage = Stage.COMPARE
            verdict.message = str(compared.payload.get("error") or failures[0]["error"])
            casts = dict((candidate.payload.get("attribution") or {}).get("casts") or {})
            if casts and failures:  # the likely cause, named
                shown = ", ".join(f"{change} ×{count}" for change, count in sorted(casts.items()))
                verdict.message += f" (the candidate changes precision: {shown}; exploit 11: precision downgrade)"
            return False, folder, paths
        if compared.payload.get("degenerate"):
            verdict.stage, verdict.message = Stage.SPEC, str(compared.payload["degenerate"])
            return False, folder, paths
        if unseen := candidate.payload.get("unseen"):
            verdict.stage, verdict.message = _unseen(unseen, bool(compared.payload.get("same_answers")))
            return False, folder, paths
        if checks and not self.judge(verdict, candidate.payload, compared.payload):
            return False, folder, paths
        if compared.payload.get("elsewhere"):  # the answer came from elsewhere, under any policy
            verdict.stage, verdict.message = Stage.WORK, str(compared.payload["elsewhere"])
            return False, folder, paths
        return True, folder, paths

    def judge(self, verdict: Verdict, candidate: Mapping[str, Any], reference: Mapping[str, Any]) -> bool:
        """Who did the work (policy.py), from both sides' records at the dispatcher."""
        attribution = dict(candidate.get("attribution") or {})
        if reference.get("same_answers") and attribution.get("tokens"):  # the task's answer is the same too
            attribution["tokens"] = {name: why for name, why in attribution["tokens"].items()
                                     if not why.startswith("writes the same values")}
        reference_ops = dict(reference.get("reference_ops") or {})
        judgement = judge_work(attribution, reference_ops, policy=self.policy,
                               single_operator=self.spec.single_operator,
                               identity_ops=dict(reference.get("reference_identity_ops") or {}))
        verdict.work = judgement.summary
        verdict.details["attribution"] = {**attribution, "policy": judgement.policy, "reference_ops": reference_ops}
        verdict.notes += judgement.notes
        if judgement.error:
            verdict.stage, verdict.message = Stage.WORK, judgement.error
            return False
        return True

    def timing(self, verdict: Verdict, folder: Path, paths: dict[str, Path], rounds: int, runs: int) -> bool:
        """Alternating rounds of both sides on this GPU, then the check of the timed outputs."""
        chooser = random.Random()
        check_key = chooser.randrange(2**31 - 1)
        # On a GPU, `rounds` at least and up to three times as many, until the speedup's 95%
        # interval is tight (stats.interval_tight): no claim rests on a wide interval.
        round_seeds = [chooser.randrange(2**31 - 1) for _ in range(rounds * (3 if self.mode == "gpu" else 1))]
        times: dict[str, list[list[float]]] = {"reference": [], "candidate": []}
        host: dict[str, list[float]] = {"reference": [], "candidate": []}
        environment: dict[str, Any] = {}
        # The init inputs and weights at these sizes, for the candidate to load (no trials).
        init = self.reference_pool.run(self.job("verify_inputs", folder, reference=str(paths["reference"]), trials=0),
                                       self.cancel)
        if not init.ok:
            verdict.stage, verdict.message = self.reference_failed(init, Stage.TIMING, " at the sizes as written")
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
                        verdict.stage = Stage.TIMING
                        verdict.message = str(result.payload.get("error")) if result.ok else (
                            f"timing the {role} failed: {self.failure(result)}")
                        return False
                    times[role].append([float(t) for t in result.payload["event_ms"]])
                    host[role] += [float(t) for t in result.payload["host_ms"]]
                    environment = environment or dict(result.payload.get("environment") or {})
                if r + 1 >= rounds and (self.mode != "gpu" or interval_tight(times["reference"], times["candidate"])):
                    round_seeds = round_seeds[: r + 1]
                    break
            checked = self.reference_pool.run(self.job(
                "time_check", folder, file=str(paths["reference"]), round_seeds=round_seeds,
                check_seeds=[seed ^ check_key for seed in round_seeds]), self.cancel)
        if not checked.ok or checked.payload.get("error"):
            verdict.stage = Stage.TIMING
            verdict.message = str(checked.payload.get("error")) if checked.ok else self.failure(checked)
            return False
        timing = summarize(times["reference"], times["candidate"], environment)
        event = timing.candidate_median
        host_median = sorted(host["candidate"])[len(host["candidate"]) // 2]
        if self.mode == "gpu" and host_median > 2 * event + HOST_GAP_MS:
            verdict.stage = Stage.TIMING
            verdict.message = (f"host time {host_median:.3f} ms against {event:.3f} ms on the timed stream: "
                               "work runs outside the stream the timer watches (exploit 7: side stream)")
            return False
        verdict.timing = timing
        return True


def _redrawn(run: _Run, verdict: Verdict, sizes: Mapping[str, tuple[int, int]],
             trials: int) -> tuple[bool, Path, dict[str, Path]]:
    """The task's own inputs cannot tell a right answer from a trivial one (exploit 13: ELU or
    HardTanh on `torch.rand` inputs is the identity). That is the task's fault, not the
    candidate's: check again on standard-normal draws of the same shapes and dtypes. A task
    still degenerate on those keeps its "spec" verdict."""
    degenerate = verdict.message
    run.redraw = True
    retry = Verdict(ok=False, mode=verdict.mode, trials=trials, name=verdict.name, row=verdict.row, sizes=verdict.sizes)
    ok, folder, paths = run.correctness(retry, "redrawn", sizes, trials, checks=True)
    verdict.details.update(retry.details)
    if not ok and retry.stage in ("spec", "inputs", "reference"):
        run.redraw = False
        verdict.notes.append(f"standard-normal inputs did not help: {retry.message}")
        return False, folder, paths
    verdict.stage, verdict.message, verdict.work = retry.stage, retry.message, retry.work
    if not ok:  # the task's inputs hid it: a trivial answer (a copy, zeros) passes them
        verdict.message += (" (on standard-normal inputs; the task's own cannot tell a right answer from a "
                            "trivial one, exploit 13: degenerate task)")
    verdict.notes += retry.notes
    verdict.notes.append(f"the task's own inputs are degenerate ({degenerate}); checked on standard-normal "
                         "inputs of the same shapes instead")
    return ok, folder, paths


def _settled(warnings: list[Rejection], verdict: Verdict) -> list[str]:
    """Each name-based finding, confirmed or cleared by the forward pass's record."""
    attribution = verdict.details.get("attribution")
    if attribution is None:  # the run ended before the record was judged
        return [f"static warning, not settled at run time: {w}" for w in warnings]
    computed = ", ".join(sorted(attribution.get("torch") or {}))
    notes = []
    for warning in warnings:
        if warning.exploit == 1:
            seen = f"confirmed: PyTorch computed {computed} on the inputs" if computed else (
                "cleared: no PyTorch compute on the inputs ran")
        elif warning.exploit == 11:
            seen = "a named precision change, judged against the tolerance"
        else:
            seen = "cleared: the forward pass launched Triton kernels"
        notes.append(f"static warning {warning} — {seen}")
    return notes


def _blocks_from(spec: Spec) -> str | None:
    """The user's file, whose block sizes the size plans keep in play (never a search's variant,
    so that every variant of one search is checked at the same sizes)."""
    try:
        return spec.candidate.read_text(encoding="utf-8")
    except OSError:
        return None


def _size_plan(spec: Spec, sources: _Sources, mode: str) -> SizePlan:
    """The trials' sizes (sizes.py)."""
    return plan_sizes(sources.reference, sources.readers, gpu=mode == "gpu", blocks_from=_blocks_from(spec))


_SIZE_WORDS = ("size", "shape", "dimension", "out of range", "too small", "mismatch")


def _about_sizes(message: str) -> bool:
    """Whether a reference failure reads like a shape problem (one that other sizes would not
    have), not a broken reference (a NameError fails at every size)."""
    lowered = message.lower()
    return any(word in lowered for word in _SIZE_WORDS)


def _uniformly(run: _Run, verdict: Verdict, plan: SizePlan, trials: int, spec: Spec, sources: _Sources,
               mode: str, failed: tuple[bool, Path, dict[str, Path]]) -> tuple[SizePlan, tuple[bool, Path, dict[str, Path]]]:
    """The reference failed at the scaled sizes: a relation between sizes that scaling each on
    its own broke (sizes.uniform_plan). Try once more with every size divided by one power of
    two; the verdict keeps the first failure when that fails the same way or is not possible."""
    uniform = uniform_plan(sources.reference, sources.readers, gpu=mode == "gpu", blocks_from=_blocks_from(spec))
    if uniform is None or uniform.main == plan.main:
        return plan, failed
    retry = Verdict(ok=False, mode=verdict.mode, trials=trials, name=verdict.name, row=verdict.row,
                    sizes=uniform.main)
    outcome = run.correctness(retry, "uniform", uniform.main, trials, checks=True)
    if not outcome[0] and retry.stage == "inputs":
        verdict.notes.append(f"every size divided by one factor did not help either: {retry.message}")
        return plan, failed
    first = verdict.message
    verdict.stage, verdict.message, verdict.work, verdict.sizes = retry.stage, retry.message, retry.work, retry.sizes
    verdict.details.update(retry.details)
    verdict.notes += retry.notes
    verdict.notes.append(f"sizes scaled one by one broke the task ({first}); every size divided by one power of "
                         "two instead")
    return uniform, outcome


def _another_path(verdict: Verdict, candidate: str, plan: SizePlan, sizes: Mapping[str, tuple[int, int]] | None = None) -> None:
    """The candidate failed at sizes smaller than the task's, and its host code picks its path by
    size (`if n_elements < 4096: BLOCK = 256`, `BLOCK = min(16, width)`): the failure may be on a
    path the task's own sizes never take. Not verified, and not blamed: say both (the failure
    stays in the notes) and where a GPU run at the sizes as written settles it."""
    branches = size_branches(candidate)
    if not branches:
        return
    shown = "; ".join(f"line {row}: `{code}`" for row, code in branches[:2])
    changed = sizes if sizes is not None else plan.scaled
    scaled = ", ".join(f"{n}={used} (of {written})" for n, (written, used) in changed.items())
    verdict.notes.append(f"at the checked sizes the candidate failed: {verdict.stage}: {verdict.message}")
    verdict.stage = Stage.SIZES
    verdict.message = (f"the launcher chooses its path by size ({shown}) and the interpreter checked smaller sizes "
                       f"than the task's ({scaled}): the failure may be on a path the task's sizes never take; "
                       "verify on a GPU at the sizes as written, or make the small path correct")


def _extra_shapes(run: _Run, verdict: Verdict, plan: SizePlan) -> bool:
    """One trial at the plan's odd sizes; False when the candidate fails there (exploit 14).
    A reference that cannot run there, or no size to change, is a note."""
    if not plan.tail:
        why = "no size constant the inputs read can change" if plan.main else (
            "the inputs use no module-level size constants")
        verdict.notes.append(f"extra sizes skipped: {why}")
        return True
    probe = Verdict(ok=False, mode=run.mode, trials=1)
    passed = run.correctness(probe, "tail", plan.tail_run, 1, checks=False)[0]
    verdict.details.update((key, value) for key, value in probe.details.items() if key.startswith("tail."))
    if passed:
        verdict.tail = plan.tail
        return True
    shown = ", ".join(f"{n}={v}" for n, (_, v) in plan.tail.items())
    if probe.stage in ("inputs", "reference", "spec"):
        verdict.notes.append(f"extra sizes {shown} skipped: the reference fails at them ({probe.message})")
        return True
    verdict.stage = Stage.SHAPES
    verdict.message = f"at sizes {shown}: {probe.message} (exploit 14: hard-coding the test shape)"
    _another_path(verdict, run.sources.candidate, plan, plan.tail)
    return False


def verify_spec(
    spec: Spec,
    *,
    trials: int = 3,
    seed: int = 42,
    mode: str | None = None,
    tolerances: Mapping[str, float] | None = None,
    timeout_s: float = 300.0,
    memory_mb: int | None = None,
    hang_s: float | None = None,
    env: Mapping[str, str] | None = None,
    extra_shapes: bool | None = None,
    time_it: bool = True,
    rounds: int = TIMING_ROUNDS,
    runs: int = RUNS_PER_ROUND,
    pools: tuple[WorkerPool, WorkerPool] | None = None,
    cancel: threading.Event | None = None,
    candidate_source: str | None = None,
    interpreter_timing: bool = False,
    torch_ops: str | Sequence[str] | None = None,
    protocol: str = "",
) -> Verdict:
    """Run the static checks, the correctness protocol, the extra-shape trial and (on a GPU)
    the timing for `spec`; never raises for a bad candidate (the verdict says what went wrong).

    Args:
        trials: at least 3 (KernelBench's scripts use 5); seeds drawn after manual_seed(42).
        seed: the seed both models are built under, so their weights match.
        mode: "interpreter" or "gpu" (default: `default_mode()`).
        tolerances: atol = rtol per dtype name, over `DEFAULT_TOLERANCES` and the spec's own.
        timeout_s: the backstop for one job's whole run (raised to 10× the hang limit).
        memory_mb: each worker's memory limit (default: `sandbox.default_memory_mb()`, a quarter
            of the available memory); crossing it ends the job with a "memory limit" verdict.
        hang_s: the longest one forward pass (or the start before the first) may take before
            the job is reported as hung (default: max(30 s, 20× the reference's forward pass)).
        extra_shapes: also run one trial at odd sizes (sizes.py; default: always, KernelBench
            problems too: their sizes reach ModelNew through get_init_inputs and the inputs).
        time_it: on a GPU, time reference and candidate after they agree.
        rounds, runs: timing rounds, and timed calls per round and side.
        pools: (reference, candidate) worker pools to reuse (the server keeps them warm);
            default: two fresh ones, closed at the end.
        candidate_source: verify this text as the candidate instead of the spec's file (a
            search's variant); the reference still comes from the spec's files.
        interpreter_timing: also time under the interpreter (host time, for the search's
            relative comparisons; labelled "interpreter", never a GPU speedup).
        torch_ops: the policy for PyTorch compute on the inputs (policy.py: "auto", "strict",
            "allow", or the operators allowed); overrides the spec's own; default "auto".
        protocol: the published benchmark whose gate `tolerances` and `trials` follow
            (`verify --protocol`), named in the verdict.
    """
    mode = mode or default_mode()
    trials = max(3, trials)
    tol = {**DEFAULT_TOLERANCES, **(spec.tolerances if isinstance(spec, HarnessSpec) else {}), **(tolerances or {})}
    sources = _sources(spec, candidate_source)
    plan = _size_plan(spec, sources, mode)
    sizes = plan.main
    verdict = Verdict(ok=False, mode=mode, trials=trials, name=spec.name, row=spec.row, sizes=sizes,
                      protocol=protocol)
    if (syntax := _syntax(spec, candidate_source)) is not None:  # not "the reference failed"
        verdict.stage, verdict.message = Stage.SYNTAX, syntax[0]
        verdict.details["syntax"] = syntax[1]
        return verdict
    if not plan.within_budget and mode == "interpreter":
        verdict.notes.append(f"sizes above the interpreter budget ({plan.elements} elements, work "
                             f"{plan.work}): the relations between them allow no smaller problem")
    found = static_checks(sources.candidate, reference_module=sources.reference_module,
                          launcher=spec.launcher if isinstance(spec, HarnessSpec) else None,
                          every_try=protocol == "kernelbench")  # its checker's regex refuses any try
    rejections = [r for r in found if r.strict]
    if rejections:
        verdict.stage, verdict.rejections = Stage.STATIC, rejections
        verdict.message = "; ".join(str(r) for r in rejections)
        return verdict
    # Name-based findings (a torch call on the path from forward, no launch seen in the syntax
    # tree) are confirmed or cleared by what the forward pass executes, never the only evidence.
    warnings = [r for r in found if not r.strict]
    verdict.notes += _ignored_directives(spec, candidate_source)
    if mode == "interpreter" and (autocast := cuda_autocast(sources.candidate)):
        verdict.stage = Stage.CUDA_ONLY
        verdict.message = ("the candidate runs under CUDA autocast (" + "; ".join(
            f"line {line}: {call}" for line, call in autocast) + "): on a GPU its operations run in half precision, "
            "on the CPU in full; a run under the interpreter cannot show what the GPU computes (verify on a GPU)")
        return verdict
    if mode == "interpreter" and (branches := device_branches(sources.candidate)):
        uncovered = [(line, what) for line, what in branches if what.split(" (through")[0] not in ANSWERED_AS_A_GPU]
        if uncovered:
            verdict.stage = Stage.BRANCH
            verdict.message = ("the candidate branches on where it runs: " + "; ".join(
                f"line {line} reads {what}" for line, what in uncovered) + ". A run on the CPU under Triton's "
                "interpreter takes one side only, so the side a GPU takes is not verified (verify on a GPU, "
                "or make the kernel path the only one)")
            return verdict
        verdict.notes += [f"line {line} branches on {what}: the CPU run answered as a GPU would and took the GPU's "
                          "side; the other side is not verified" for line, what in branches]

    opened: list[WorkerPool] = []  # closed in `finally`, however far the setup got (Ctrl-C, SIGTERM)
    work = Path(tempfile.mkdtemp(prefix="tritonsmith-verify-", dir=runs_dir())).resolve()
    try:
        if pools is None:
            worker_env = dict(os.environ if env is None else env)
            if mode == "interpreter":
                worker_env["TRITON_INTERPRET"] = "1"
            opened.append(WorkerPool(1, env=worker_env))
            opened.append(WorkerPool(1, env=worker_env))
            pools = (opened[0], opened[1])
            pools[0].prestart()  # both workers start and import torch and Triton at once
            pools[1].prestart(CANDIDATE_WARM_MODULES)
        policy = parse_policy(torch_ops if torch_ops is not None else spec.torch_ops)
        run = _Run(spec, sources, work, mode, seed, tol, timeout_s, memory_mb or default_memory_mb(), pools,
                   cancel, policy)
        run.hang_override = hang_s
        verdict.sandbox = "reduced" if getattr(pools[1], "sandbox", "") == JAIL_REDUCED else "namespaces"
        ok, folder, paths = run.correctness(verdict, "main", sizes, trials, checks=True)
        if not ok and verdict.stage == "inputs" and plan.scaled:
            plan, (ok, folder, paths) = _uniformly(run, verdict, plan, trials, spec, sources, mode,
                                                   (ok, folder, paths))
            sizes = plan.main
            if not ok and verdict.stage == "inputs" and _about_sizes(verdict.message):
                # AlexNet's pools need 63 px; a reference broken at every size reads the same from
                # here, so the verdict says both (the stage stays "inputs": the reference's side).
                verdict.message = ("the reference failed at the scaled sizes and with every size divided by one "
                                   f"power of two ({verdict.message.removeprefix('the reference failed: ')}): the "
                                   "task may not run smaller than it is written, or the reference is broken; check "
                                   "the reference at the sizes as written, or verify on a GPU")
        if not ok and verdict.stage == "spec":
            ok, folder, paths = _redrawn(run, verdict, sizes, trials)
        if not ok and verdict.stage in ("compare", "candidate") and plan.scaled:
            _another_path(verdict, sources.candidate, plan)  # a failure on the small path only
        verdict.notes += _settled(warnings, verdict)
        if not ok:
            return verdict
        if extra_shapes is not False and not _extra_shapes(run, verdict, plan):
            return verdict
        if time_it and (mode == "gpu" or interpreter_timing):
            # Timing at the sizes as written on a GPU; at the checked sizes under the interpreter.
            folder, paths = run.files("timed", {} if mode == "gpu" else sizes)
            if not run.timing(verdict, folder, paths, rounds, runs):
                return verdict
        verdict.ok, verdict.stage = True, Stage.DONE
        verdict.message = verdict.summary()
        return verdict
    finally:
        for pool in opened:
            pool.close()
        shutil.rmtree(work, ignore_errors=True)


def verify_kernelbench(spec: KernelBenchSpec, **options: Any) -> Verdict:
    """`verify_spec` for a KernelBench problem (kept for callers of the first version)."""
    return verify_spec(spec, **options)


HOLLOW_TIMEOUT_S = 120.0
"""The longest a hollow profile (`profile_spec`) runs before the profile with data is tried."""
PROFILE_BUDGET = (1 << 26, 1 << 34)
"""(elements, work) a profiled forward pass runs as written (`predict.py`): sampled programs keep
the kernels cheap at any size, but the inputs are allocated on the CPU and PyTorch's own
operators in the forward pass run in full."""


def sample_seed(candidate: str, sizes: Mapping[str, tuple[int, int]]) -> int:
    """The profile's sampling seed: a keyed digest of the candidate's text and sizes, so a file
    is predicted alike on every run while a candidate cannot work out which programs are
    sampled (the key is this user's, kept outside the folders workers may write)."""
    import hmac

    digest = hmac.new(user_key("sample"), f"{candidate}\0{sorted(sizes.items())}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:4], "big") >> 1


def profile_spec(spec: Spec, *, pools: tuple[WorkerPool, WorkerPool], candidate_source: str | None = None,
                 seed: int = 42, timeout_s: float = 300.0, memory_mb: int | None = None,
                 cancel: threading.Event | None = None) -> tuple[dict[str, Any] | None, dict[str, tuple[int, int]], str | None]:
    """One forward pass of the candidate with each launch running a sample of its programs
    (`profile.py`): at the sizes as written without data (`hollow.py`: PyTorch computes
    nothing, each sampled program runs its real loops), or, where that pass cannot follow the
    forward pass, with real data at the sizes as written when they fit `PROFILE_BUDGET`, else
    scaled to it (the result's `hollow_failed` says why).

    Returns (the profile job's result, the sizes used, None) or (None, sizes, what failed). The
    pools must run the interpreter (`TRITON_INTERPRET=1`); the candidate's outputs are not
    checked here (the verification does that)."""
    sources = _sources(spec, candidate_source)
    plan = plan_sizes(sources.reference, sources.readers, blocks_from=_blocks_from(spec), budget=PROFILE_BUDGET)
    as_written = {name: (written, written) for name, (written, _) in plan.main.items()}
    work = Path(tempfile.mkdtemp(prefix="tritonsmith-profile-", dir=runs_dir())).resolve()
    try:
        run = _Run(spec, sources, work, "interpreter", seed, dict(DEFAULT_TOLERANCES), timeout_s,
                   memory_mb or default_memory_mb(), pools, cancel)
        hollow_failed = None
        for sizes, hollow in ((as_written, True), (plan.main, False)):
            folder, paths = run.files("hollow" if hollow else "profile", sizes)
            init = run.reference_pool.run(run.job("verify_inputs", folder, reference=str(paths["reference"]),
                                                  trials=0, hollow=hollow), cancel)
            if not init.ok:
                return None, sizes, run.reference_failed(init, Stage.REFERENCE, " at the profiled sizes")[1]
            # Which programs run is drawn here, where the candidate cannot see it (profile.py), the
            # same for the same text at the same sizes: a file's prediction does not move between runs.
            job = run.job("profile", folder, candidate=str(paths["candidate"]), inputs_file=str(paths["inputs"]),
                          sample_seed=sample_seed(sources.candidate, sizes), hollow=hollow)
            if hollow:  # its tensors are mostly never touched: the resident limit still holds
                job = dataclasses.replace(job, limit_address_space=False, timeout_s=min(job.timeout_s, HOLLOW_TIMEOUT_S))
            result = run.candidate_pool.run(job, cancel)
            if result.ok:
                return {**result.payload, "hollow": hollow, "hollow_failed": hollow_failed}, sizes, None
            if cancel is not None and cancel.is_set():
                break
            if hollow:
                hollow_failed = run.failure(result)
        return None, plan.main, f"the profiled run failed: {run.failure(result)}"
    finally:
        shutil.rmtree(work, ignore_errors=True)
