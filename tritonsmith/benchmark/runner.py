"""Run the search on every problem of a folder, the same way for each, and collect what the
report needs: per-problem outcomes, best speedup against steps, and the aggregate metrics.

Problems are KernelBench-format files (a `Model` reference and a `ModelNew` that launches a
Triton kernel, the search's starting point) or files with an in-file harness. Each runs in a
copy of its own, so nothing in the user's folder changes; each gets the same step budget.

Speedups: on a GPU against the PyTorch reference (KernelBench's sense; the starting `ModelNew`
counts, so a task is never worse than its start); without one, interpreter time against the
starting kernel, labelled so (DESIGN.md: never reported as a GPU speedup).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis import Document, index_module
from ..evaluator.specs import detect_specs
from ..search.model import Outcome
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
    "adaexplore": Protocol("adaexplore", 5, {"float32": 5e-2, "float16": 5e-2, "bfloat16": 5e-2}, 10, 10,
                           "AdaExplore's: 5 trials at atol=rtol 5e-2, 100 timed calls, 10% trimmed mean "
                           "(tritonsmith still flushes L2 and alternates rounds)"),
}


@dataclass
class ProblemResult:
    name: str
    kernel: str
    correct: bool
    speedup: float | None  # the task's best correct speedup (see the module docstring)
    start_ok: bool  # the starting kernel verified
    steps: list[float] = field(default_factory=list)  # best speedup so far after each step
    candidates: int = 0
    seconds: float = 0.0
    error: str = ""  # why the problem could not run (no spec, no kernel, ...)
    search_id: str = ""

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

    @property
    def metrics(self) -> Aggregate:
        return aggregate([p.outcome() for p in self.problems if not p.error])

    @property
    def unit(self) -> str:
        return "against the PyTorch reference (GPU time)" if self.device == "gpu" else \
            "against the starting kernel (interpreter time, not a GPU figure)"


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
                ray_address: str | None = None) -> ProblemResult:
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
                                runs=protocol.runs if device == "gpu" else None, ray_address=ray_address)
        try:
            with open_search(request, cancel=cancel) as opened:
                search = opened.search.run()
        except SetupError as error:
            result.error = error.user_message
            return result
        result.search_id = search.search_id
        nodes = list(search.tree.evaluated())
        result.candidates = len(nodes) - 1
        best: float | None = None
        for node in nodes:
            evaluation = node.evaluation
            value = None
            if evaluation is not None and evaluation.outcome is Outcome.CORRECT:
                value = evaluation.reference_speedup if device == "gpu" else evaluation.speedup
                if node.id == 0:
                    result.start_ok = True
            if value is not None:
                best = value if best is None else max(best, value)
            if node.id > 0:
                result.steps.append(best or 0.0)
        result.correct = best is not None
        result.speedup = best
        return result
    finally:
        result.seconds = round(time.perf_counter() - began, 1)
        shutil.rmtree(work, ignore_errors=True)


def run_suite(folder: Path, *, steps: int, device: str, proposer: str = "offline", protocol: str = "tritonsmith",
              seed: int = 0, max_problems: int | None = None, allow_upload: bool = False,
              progress: Callable[[ProblemResult], None] | None = None,
              cancel: threading.Event | None = None, ray_address: str | None = None) -> SuiteResult:
    """Search every problem of `folder` in turn; never raises for a bad problem (its row says why)."""
    chosen = PROTOCOLS[protocol]
    began = time.perf_counter()
    suite = SuiteResult(folder=str(folder), device=device, protocol=chosen, steps=steps, proposer=proposer, problems=[])
    for path in find_problems(folder)[:max_problems]:
        if cancel is not None and cancel.is_set():
            break
        problem = run_problem(path, steps=steps, device=device, proposer=proposer, protocol=chosen, seed=seed,
                              allow_upload=allow_upload, cancel=cancel, ray_address=ray_address)
        suite.problems.append(problem)
        if progress is not None:
            progress(problem)
    suite.seconds = round(time.perf_counter() - began, 1)
    return suite
