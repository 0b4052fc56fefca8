"""Run the search on every problem of a folder, the same way for each, and collect what the
report needs: per-problem outcomes, best speedup against steps, and the aggregate metrics.

Problems are KernelBench-format files (a `Model` reference and a `ModelNew` that launches a
Triton kernel, the search's starting point) or files with an in-file harness. Each runs in a
copy of its own, so nothing in the user's folder changes; each gets the same step budget.

A task counts as correct only when the search found a *new* verified candidate: one that is not
the unmodified start, nor the start up to hints that cannot change the measured time
(search/equivalence.py). Whether the start itself verified is reported apart (`start_ok`, and its
own speedup on a GPU), never counted as the task's success.

Speedups: on a GPU against the PyTorch reference (KernelBench's sense), without one interpreter
time against the starting kernel, labelled so, never reported as a GPU speedup (DESIGN.md, "What a CPU search optimises"). A
task's speedup above its start counts only when the search *confirmed* it (the candidate and the
start re-timed in alternating rounds in fresh workers, the 95% interval's lower bound above 1 +
the noise floor; evaluator/stats.py): an unconfirmed best new candidate counts as no faster than
the start (1.00× under the interpreter; the start's own speedup on a GPU), and its row shows the
confirmation's interval and says "no improvement". The best-so-far curve per step is screening
(unconfirmed) and labelled so.
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis import Document, index_module
from ..evaluator.specs import detect_specs
from ..search.model import Outcome, StepKind
from ..search.setup import SearchRequest, SetupError, open_search
from .metrics import Aggregate, TaskOutcome, aggregate

__all__ = ["PROTOCOLS", "ProblemResult", "Protocol", "SuiteResult", "find_problems", "run_suite"]


@dataclass(frozen=True)
class Protocol:
    """How candidates are checked and timed; the report states which one was used."""

    name: str
    trials: int
    tolerances: dict[str, float]
    rounds: int  # timing rounds; each side gets rounds × runs timed calls
    runs: int
    description: str


PROTOCOLS = {
    "tritonsmith": Protocol("tritonsmith", 3, {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}, 10, 10,
                            "3 trials, atol=rtol 1e-4 (fp32) / 1e-2 (fp16, bf16), 10 alternating rounds of 10 "
                            "CUDA-event calls per side, L2 flushed, trimmed mean"),
    "kernelbench": Protocol("kernelbench", 5, {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}, 10, 10,
                            "KernelBench's current defaults: 5 trials, atol=rtol 1e-4 (fp32) / 1e-2, 100 timed "
                            "calls with L2 flush"),
    "kernelbench-v0": Protocol("kernelbench-v0", 5, {"float32": 1e-2, "float16": 1e-2, "bfloat16": 1e-2}, 10, 10,
                               "KernelBench's first release: 5 trials, atol=rtol 1e-2 for every dtype, 100 timed calls"),
    "adaexplore": Protocol("adaexplore", 5, {"float32": 5e-2, "float16": 5e-2, "bfloat16": 5e-2}, 10, 10,
                           "AdaExplore's: 5 trials at atol=rtol 5e-2, 100 timed calls, 10% trimmed mean "
                           "(tritonsmith still flushes L2 and alternates rounds)"),
}


@dataclass
class ProblemResult:
    name: str
    kernel: str
    correct: bool  # a new verified candidate exists (the start does not count)
    speedup: float | None  # the task's speedup for the metrics (see the module docstring); None unless correct
    start_ok: bool  # the unmodified starting kernel verified (reported apart, never "correct" by itself)
    steps: list[float] = field(default_factory=list)  # best new candidate's screening speedup after each step
    candidates: int = 0
    seconds: float = 0.0
    error: str = ""  # why the problem could not run (no spec, no kernel, ...)
    search_id: str = ""
    start_speedup: float | None = None  # the start's own: 1.0 under the interpreter, vs PyTorch on a GPU
    new_verified: int = 0  # new verified candidates (not the start, not the start up to time-neutral hints)
    set_aside: int = 0  # candidates that were the start (or another node) up to such hints: not re-timed
    claimed: bool = False  # the best new candidate's speedup over the start is confirmed
    result: str = ""  # the search's outcome: "1.32× (95% CI 1.21–1.44×, noise floor 3%)" or "no improvement (…)"
    confirmation: dict[str, object] | None = None  # stats.Confirmation.to_json() of the best new candidate

    def outcome(self) -> TaskOutcome:
        return TaskOutcome(self.name, self.correct, self.speedup)


@dataclass
class SuiteResult:
    folder: str
    device: str  # "gpu" | "interpreter"
    protocol: Protocol
    steps: int
    proposer: str
    problems: list[ProblemResult]
    environment: dict[str, object] = field(default_factory=dict)
    seconds: float = 0.0
    objective: str = "time"  # "predicted": a CPU run ranked and claimed by predicted H100 SXM (sm_90) time

    @property
    def metrics(self) -> Aggregate:
        return aggregate([p.outcome() for p in self.problems if not p.error])

    @property
    def unit(self) -> str:
        if self.device == "gpu":
            return "against the PyTorch reference (GPU time)"
        if self.objective == "predicted":
            return "against the starting kernel (predicted H100 SXM (sm_90) time, a model's estimate, not a measurement)"
        return "against the starting kernel (interpreter time, not a GPU figure)"


def find_problems(folder: Path) -> list[Path]:
    """The problem files of `folder` (not recursive): Python files with a spec."""
    return [p for p in sorted(folder.glob("*.py")) if not p.name.startswith("_") and detect_specs(p)]


def _kernel(source: str) -> str | None:
    """The kernel to optimise: the first one the file launches (else the first one)."""
    index = index_module(Document(source).root)
    launched = [k for k in index.kernels if k.launches or k.autotune]
    chosen = launched or index.kernels
    return chosen[0].name if chosen else None


def run_problem(path: Path, *, steps: int, device: str, proposer: str, protocol: Protocol, seed: int,
                allow_upload: bool = False, cancel: threading.Event | None = None,
                ray_address: str | None = None, objective: str = "auto") -> ProblemResult:
    began = time.perf_counter()
    source = path.read_text(encoding="utf-8")
    kernel = _kernel(source)
    result = ProblemResult(name=path.stem, kernel=kernel or "", correct=False, speedup=None, start_ok=False)
    if kernel is None:
        result.error = "no @triton.jit kernel to start from"
        return result
    work = Path(tempfile.mkdtemp(prefix=f"tritonsmith-bench-{path.stem}-"))
    try:
        (work / "pyproject.toml").write_text("")
        copy = work / path.name
        shutil.copy2(path, copy)
        for sibling in path.parent.glob(f"{path.stem}_reference.py"):  # a sibling reference travels along
            shutil.copy2(sibling, work / sibling.name)
        request = SearchRequest(path=copy, kernel=kernel, device=device, proposer=proposer, steps=steps, seed=seed,
                                allow_upload=allow_upload, trials=protocol.trials, tolerances=protocol.tolerances,
                                rounds=protocol.rounds if device == "gpu" else None,
                                runs=protocol.runs if device == "gpu" else None, ray_address=ray_address,
                                objective=objective)
        try:
            with open_search(request, cancel=cancel) as opened:
                search = opened.search.run()
        except SetupError as error:
            result.error = error.user_message
            return result
        result.search_id = search.search_id
        nodes = list(search.tree.evaluated())
        result.candidates = len(nodes) - 1
        root = next((n for n in nodes if n.kind is StepKind.ROOT), None)
        if root is not None and root.evaluation is not None and root.evaluation.outcome is Outcome.CORRECT:
            result.start_ok = True
            result.start_speedup = root.evaluation.reference_speedup if device == "gpu" else 1.0
        new = {n.id for n in search.new_verified}
        result.new_verified = len(new)
        result.set_aside = search.set_aside
        best_screening: float | None = None
        for node in nodes:
            if node.id in new and node.evaluation is not None and node.evaluation.speedup is not None:
                best_screening = max(best_screening or 0.0, node.evaluation.speedup)
            if node.kind is not StepKind.ROOT:
                result.steps.append(best_screening or 0.0)
        result.correct = bool(new)
        result.claimed = search.improved
        result.result = search.outcome_text()
        result.confirmation = search.confirmation.to_json() if search.confirmation is not None else None
        best = search.best
        if result.correct and best is not None and best.evaluation is not None:
            if device == "gpu":
                value = best.evaluation.reference_speedup
                if not search.improved and value is not None and result.start_speedup is not None:
                    value = min(value, result.start_speedup)  # unconfirmed: no faster than the start
                result.speedup = value
            else:
                result.speedup = search.speedup if search.improved else min(
                    search.speedup if search.speedup is not None else (best.evaluation.speedup or 0.0), 1.0)
        return result
    finally:
        result.seconds = round(time.perf_counter() - began, 1)
        shutil.rmtree(work, ignore_errors=True)


def run_suite(folder: Path, *, steps: int, device: str, proposer: str = "offline", protocol: str = "tritonsmith",
              seed: int = 0, max_problems: int | None = None, allow_upload: bool = False,
              progress: Callable[[ProblemResult], None] | None = None,
              cancel: threading.Event | None = None, ray_address: str | None = None,
              objective: str = "auto") -> SuiteResult:
    """Search every problem of `folder` in turn; never raises for a bad problem (its row says why)."""
    chosen = PROTOCOLS[protocol]
    began = time.perf_counter()
    suite = SuiteResult(folder=str(folder), device=device, protocol=chosen, steps=steps, proposer=proposer, problems=[],
                        objective="predicted" if device != "gpu" and objective in ("auto", "predicted") else "time")
    if device != "gpu":  # a GPU's environment comes from its timings; here, what the interpreter ran on
        suite.environment = {"python": platform.python_version(), "cpus": os.cpu_count() or 0,
                             "load average before": _load()}
    for path in find_problems(folder)[:max_problems]:
        if cancel is not None and cancel.is_set():
            break
        problem = run_problem(path, steps=steps, device=device, proposer=proposer, protocol=chosen, seed=seed,
                              allow_upload=allow_upload, cancel=cancel, ray_address=ray_address,
                              objective=objective)
        suite.problems.append(problem)
        if progress is not None:
            progress(problem)
    suite.seconds = round(time.perf_counter() - began, 1)
    if device != "gpu":
        suite.environment["load average after"] = _load()
    return suite


def _load() -> str:
    """The 1, 5 and 15 minute load averages ("" where the OS has none): confirmations are
    sound under load, but the figures' spread is read against it."""
    try:
        return " / ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return ""
