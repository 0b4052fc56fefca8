"""Evaluate one candidate of a search: compile it for the target, verify it against the
spec's reference, and time it; the evaluator's sandboxed workers do the work.

The speedup of a candidate is against the kernel the search started from (the root), both
measured the same way: on a GPU, CUDA-event time at the sizes as written; without one, the
predicted time on the target GPU (`Task.objective == "predicted"`: evaluator/predict.py, from a
profiled forward pass and the compile for the target), with interpreter time at the checked sizes
kept as a secondary figure, or interpreter time alone when asked for (`--objective interpreter`)
or when the original cannot be predicted (DESIGN.md, "What a CPU search optimises"). The reference is always the spec's own (the harness's function or
KernelBench's `Model`) from the file as it was when the search started: a variant can change
the kernel, never what it is checked against.

That speedup is a screening figure, to steer the search: a few calls, timed at another moment
than the original's. Before anything is claimed, `confirm` re-times the winner against the
original in alternating rounds in fresh workers (evaluator/confirm.py).

Nothing here imports torch or triton.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..evaluator.confirm import confirm_predicted, confirm_speedup
from ..evaluator.pool import WorkerPool
from ..evaluator.predicted import predict_spec
from ..evaluator.reports import KernelReport, compile_file, correctness_blockers, settle_reports
from ..evaluator.sandbox import with_import_paths
from ..evaluator.stats import Confirmation, RoundPolicy
from ..evaluator.verify import Spec, verify_spec
from ..state import FailureLog, active_learned, record_compile, record_verdict
from .model import Evaluation, Outcome, Task

__all__ = ["CandidateEvaluator"]


class CandidateEvaluator:
    """Evaluates a search's candidates, with its worker pools kept warm between them.

    Args:
        task: the search's task (its `device` picks GPU or interpreter).
        spec: the spec the original file was verified against.
        rounds, runs: timing rounds, and timed calls per round and side.
        failure_log: where compile and verification failures go (the adaptation work reads it).
    """

    def __init__(self, task: Task, spec: Spec, *, rounds: int | None = None, runs: int | None = None,
                 trials: int = 3, tolerances: dict[str, float] | None = None,
                 failure_log: FailureLog | None = None, cancel: threading.Event | None = None,
                 confirm_policy: RoundPolicy | None = None, import_paths: Sequence[Path] = ()) -> None:
        self.task = task
        self.confirm_policy = confirm_policy  # None: evaluator/confirm.py's default for the device
        self.spec = spec
        self.trials = trials
        self.tolerances = tolerances
        gpu = task.device == "gpu"
        # Ranked by the predicted time, interpreter time is a secondary figure: one round of one
        # call (which is still a checked call) rather than the screening rounds it once ranked by.
        secondary = not gpu and task.objective == "predicted"
        self.rounds = rounds or (10 if gpu else 1 if secondary else 2)
        self.runs = runs or (10 if gpu else 1 if secondary else 3)
        self.failure_log = failure_log
        self.cancel = cancel
        env = with_import_paths(os.environ, import_paths)
        if not gpu:
            env["TRITON_INTERPRET"] = "1"
        self._env = env
        self._compile_pool = WorkerPool(1)
        self._verify_pools = (WorkerPool(1, env=env), WorkerPool(1, env=env))
        self.baseline_ms: float | None = None  # the root's time, set by its evaluation
        self.baseline_predicted_s: float | None = None  # the root's predicted time (objective "predicted")
        self.objective = task.objective  # "time" from the start when the original cannot be predicted

    def evaluate(self, source: str) -> Evaluation:
        """Compile, verify and time `source` (a whole file); never raises for a bad candidate."""
        began = time.perf_counter()
        evaluation = self._evaluate(source)
        evaluation.seconds = round(time.perf_counter() - began, 3)
        return evaluation

    def _record_compile(self, source: str, reports: list[KernelReport]) -> None:
        if self.failure_log is not None:
            record_compile(self.failure_log, self.task.path, source, reports)

    def _evaluate(self, source: str) -> Evaluation:
        task = self.task
        learned = active_learned(self.failure_log.root) if self.failure_log is not None else None
        reports = compile_file(self._compile_pool, source, path=task.path, targets=[task.target],
                               cancel_event=self.cancel, rules=learned)
        self._record_compile(source, reports)
        resources: list[dict[str, Any]] = [
            {"kernel": r.kernel, "config": e.get("config"), "target": e.get("target"), "resources": e.get("resources")}
            for r in reports for e in r.results if e.get("ok")
        ]
        # Only a kernel that truly cannot launch is "not compiled": spills, a Config the autotuner
        # prunes and errors under assumed pointer types (re-checked below) are not.
        blockers = correctness_blockers(reports)
        if blockers:
            return Evaluation(Outcome.NOT_COMPILED, message=blockers[0], resources=resources)
        verdict = verify_spec(
            self.spec, mode="gpu" if task.device == "gpu" else "interpreter", candidate_source=source,
            rounds=self.rounds, runs=self.runs, interpreter_timing=True, pools=self._verify_pools,
            cancel=self.cancel, trials=self.trials, tolerances=self.tolerances,
        )
        reports = settle_reports(reports, [verdict], source=source, path=task.path, targets=[task.target],
                                 pool=self._compile_pool, rules=learned, cancel_event=self.cancel)
        self._record_compile(source, [r for r in reports if r.recompiled])
        failed = [r for r in reports if not r.ok]
        if failed:  # it compiles with the types recorded at its launches no better
            first = failed[0]
            errors = [f for f in first.findings if f.severity.value == "error"] or first.findings
            message = errors[0].message if errors else (first.error or "compilation failed")
            return Evaluation(Outcome.NOT_COMPILED, message=message, resources=resources)
        if self.failure_log is not None and not verdict.ok:
            record_verdict(self.failure_log, task.path, verdict, source=source, stage_prefix="search",
                           kernel=task.kernel)
        if not verdict.ok or verdict.timing is None:
            return Evaluation(Outcome.WRONG, message=verdict.message or verdict.summary(), resources=resources)
        timing = verdict.timing
        time_ms = timing.candidate_median  # few runs under the interpreter: the median is robust
        if self.baseline_ms is None:
            self.baseline_ms = time_ms
        if self.objective == "predicted":
            return self._predicted(source, verdict.summary(), time_ms, resources)
        rounds = timing.candidate_rounds or (time_ms,)
        speedup = self.baseline_ms / max(time_ms, 1e-12)
        spread = (self.baseline_ms / max(max(rounds), 1e-12), self.baseline_ms / max(min(rounds), 1e-12))
        return Evaluation(Outcome.CORRECT, speedup=speedup, spread=spread, time_ms=time_ms,
                          message=verdict.summary(), resources=resources,
                          reference_speedup=timing.speedup if task.device == "gpu" else None)

    def _predicted(self, source: str, summary: str, time_ms: float, resources: list[dict[str, Any]]) -> Evaluation:
        """A correct candidate ranked by its predicted target time (interpreter time kept)."""
        task = self.task
        predicted = predict_spec(self.spec, source, path=task.path, target=task.target, pools=self._verify_pools,
                                 compile_pool=self._compile_pool, cancel=self.cancel)
        seconds = predicted.seconds
        if seconds is None or not seconds < float("inf"):
            if self.baseline_predicted_s is None:  # the original itself: fall back to interpreter time
                self.objective = "time"
                message = f"{summary} · {predicted.summary()}; the search ranks by interpreter time"
                return Evaluation(Outcome.CORRECT, speedup=1.0, spread=(1.0, 1.0), time_ms=time_ms,
                                  message=message, resources=resources)
            return Evaluation(Outcome.CORRECT, speedup=None, time_ms=time_ms,
                              message=f"{summary} · {predicted.summary()}", resources=resources)
        if self.baseline_predicted_s is None:
            self.baseline_predicted_s = seconds
        speedup = self.baseline_predicted_s / max(seconds, 1e-15)
        launches = predicted.prediction.launches if predicted.prediction is not None else []
        resources = resources + [{"kernel": e.kernel, "config": "as profiled", "target": task.target,
                                  "predicted": e.to_json()} for e in launches]
        return Evaluation(Outcome.CORRECT, speedup=speedup, spread=(speedup, speedup), time_ms=time_ms,
                          message=f"{summary} · {predicted.summary()}", resources=resources, predicted_s=seconds)

    def confirm(self, original: str, candidate: str,
                progress: Callable[[int, Confirmation], None] | None = None) -> Confirmation:
        """Re-time `candidate` against `original` in alternating rounds in fresh workers until
        the speedup's interval is tight (evaluator/confirm.py); the search's own workers idle
        meanwhile. With the predicted objective, both are predicted again in fresh workers."""
        if self.objective == "predicted":
            return confirm_predicted(self.spec, original, candidate, path=self.task.path, target=self.task.target,
                                     env=self._env, cancel=self.cancel)
        return confirm_speedup(self.spec, original, candidate, mode="gpu" if self.task.device == "gpu" else "interpreter",
                               policy=self.confirm_policy, env=self._env, cancel=self.cancel, progress=progress,
                               tolerances=self.tolerances)

    def close(self) -> None:
        self._compile_pool.close()
        for pool in self._verify_pools:
            pool.close()

    def __enter__(self) -> CandidateEvaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
