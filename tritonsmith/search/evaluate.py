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

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..evaluator.confirm import confirm_predicted, confirm_speedup
from ..evaluator.pipeline import Checked, Options, Pipeline
from ..evaluator.predicted import PredictedTime
from ..evaluator.stats import Confirmation, RoundPolicy
from ..evaluator.verify import Spec
from ..state import FailureLog, active_learned, record_checked
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
        self.tolerances = tolerances
        gpu = task.device == "gpu"
        # Ranked by the predicted time, interpreter time is a secondary figure: one round of one
        # call (which is still a checked call) rather than the screening rounds it once ranked by.
        secondary = not gpu and task.objective == "predicted"
        self.rounds = rounds or (10 if gpu else 1 if secondary else 2)
        self.runs = runs or (10 if gpu else 1 if secondary else 3)
        self.failure_log = failure_log
        self.cancel = cancel
        # The pipeline `tritonsmith verify` and a save run, with the spec's own policy (the file
        # the search started from): a candidate's text can change the kernel, never its judge.
        self._pipeline = Pipeline(Options(
            targets=(task.target,), mode="gpu" if gpu else "interpreter", trials=trials, tolerances=tolerances,
            rounds=self.rounds, runs=self.runs, interpreter_timing=True, predict=secondary,
            import_folders=tuple(import_paths)))
        self._env = self._pipeline.options.env()
        self.baseline_ms: float | None = None  # the root's time, set by its evaluation
        self.baseline_predicted_s: float | None = None  # the root's predicted time (objective "predicted")
        self.objective = task.objective  # "time" from the start when the original cannot be predicted

    def evaluate(self, source: str) -> Evaluation:
        """Compile, verify and time `source` (a whole file); never raises for a bad candidate."""
        began = time.perf_counter()
        task = self.task
        learned = active_learned(self.failure_log.root) if self.failure_log is not None else None
        checked = self._pipeline.run(task.path, source, specs=[self.spec], candidate_source=source,
                                     rules=learned, cancel=self.cancel)
        if self.failure_log is not None:
            record_checked(self.failure_log, checked, root=self.failure_log.root, stage_prefix="search",
                           kernel=task.kernel)
        evaluation = self._evaluate(checked)
        if checked.verdicts:
            evaluation.standing, evaluation.stage = str(checked.verdicts[0].standing), str(checked.verdicts[0].stage)
        evaluation.seconds = round(time.perf_counter() - began, 3)
        return evaluation

    def _evaluate(self, checked: Checked) -> Evaluation:
        task = self.task
        resources: list[dict[str, Any]] = [
            {"kernel": r.kernel, "config": e.get("config"), "target": e.get("target"), "resources": e.get("resources")}
            for r in checked.first_reports for e in r.results if e.get("ok")
        ]
        # Only a kernel that truly cannot launch is "not compiled": spills, a Config the autotuner
        # prunes and errors under assumed pointer types (compiled again with the recorded types) are not.
        if checked.blockers:
            return Evaluation(Outcome.NOT_COMPILED, message=checked.blockers[0], resources=resources)
        failed = [r for r in checked.reports if not r.ok]
        if failed:  # it compiles with the types recorded at its launches no better
            first = failed[0]
            errors = [f for f in first.findings if f.severity.value == "error"] or first.findings
            message = errors[0].message if errors else (first.error or "compilation failed")
            return Evaluation(Outcome.NOT_COMPILED, message=message, resources=resources)
        verdict = checked.verdicts[0] if checked.verdicts else None
        if verdict is None or not verdict.ok or verdict.timing is None:
            message = verdict.message or verdict.summary() if verdict is not None else "cancelled"
            return Evaluation(Outcome.WRONG, message=message, resources=resources)
        timing = verdict.timing
        time_ms = timing.candidate_median  # few runs under the interpreter: the median is robust
        if self.baseline_ms is None:
            self.baseline_ms = time_ms
        if self.objective == "predicted":
            predicted = checked.predicted.get(self.spec.name)
            if predicted is not None:
                return self._predicted(predicted, verdict.summary(), time_ms, resources)
        rounds = timing.candidate_rounds or (time_ms,)
        speedup = self.baseline_ms / max(time_ms, 1e-12)
        spread = (self.baseline_ms / max(max(rounds), 1e-12), self.baseline_ms / max(min(rounds), 1e-12))
        return Evaluation(Outcome.CORRECT, speedup=speedup, spread=spread, time_ms=time_ms,
                          message=verdict.summary(), resources=resources,
                          reference_speedup=timing.speedup if task.device == "gpu" else None)

    def _predicted(self, predicted: PredictedTime, summary: str, time_ms: float,
                   resources: list[dict[str, Any]]) -> Evaluation:
        """A correct candidate ranked by its predicted target time (interpreter time kept)."""
        task = self.task
        # The verdict's summary already ends with the predicted figure (the pipeline put it there).
        seconds = predicted.seconds
        if seconds is None or not seconds < float("inf"):
            if self.baseline_predicted_s is None:  # the original itself: fall back to interpreter time
                self.objective = "time"
                self._pipeline.reconfigure(replace(self._pipeline.options, predict=False))
                message = f"{summary}; the search ranks by interpreter time"
                return Evaluation(Outcome.CORRECT, speedup=1.0, spread=(1.0, 1.0), time_ms=time_ms,
                                  message=message, resources=resources)
            return Evaluation(Outcome.CORRECT, speedup=None, time_ms=time_ms, message=summary, resources=resources)
        if self.baseline_predicted_s is None:
            self.baseline_predicted_s = seconds
        speedup = self.baseline_predicted_s / max(seconds, 1e-15)
        launches = predicted.prediction.launches if predicted.prediction is not None else []
        resources = resources + [{"kernel": e.kernel, "config": "as profiled", "target": task.target,
                                  "predicted": e.to_json()} for e in launches]
        return Evaluation(Outcome.CORRECT, speedup=speedup, spread=(speedup, speedup), time_ms=time_ms,
                          message=summary, resources=resources, predicted_s=seconds)

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
        self._pipeline.close()

    def __enter__(self) -> CandidateEvaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
