"""AdaExplore's aggregate metrics over a problem set (shared/reference/adaexplore.md, section 8).

- accuracy: the share of tasks with a correct candidate;
- mean speedup: the mean over *all* tasks of the best speedup, each clamped at 10x, an incorrect
  task counting 0;
- Fast@p: the share of all tasks correct and strictly faster than p (KernelBench's fast_p with
  the same strict ">"; fast_1 for p = 1);
- GM(10): the geometric mean of the clamped best speedups, an incorrect task counting 0.1.

The clamp keeps degenerate outliers (AdaExplore saw 926x) from deciding a mean.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CAP", "Aggregate", "TaskOutcome", "aggregate", "fast_p"]

CAP = 10.0
INCORRECT_IN_GM = 0.1


@dataclass(frozen=True)
class TaskOutcome:
    """One task's result: whether any candidate was correct, and the best correct speedup."""

    name: str
    correct: bool
    speedup: float | None  # best correct speedup (None when not correct)


@dataclass(frozen=True)
class Aggregate:
    tasks: int
    accuracy: float
    mean_speedup: float
    fast_1_2: float
    fast_2: float
    gm10: float

    def as_dict(self) -> dict[str, float | int]:
        return {"tasks": self.tasks, "accuracy": self.accuracy, "mean_speedup": self.mean_speedup,
                "fast@1.2": self.fast_1_2, "fast@2": self.fast_2, "gm10": self.gm10}


def _clamped(outcome: TaskOutcome) -> float:
    if not outcome.correct or outcome.speedup is None or not math.isfinite(outcome.speedup):
        return 0.0
    return min(max(outcome.speedup, 0.0), CAP)


def fast_p(outcomes: Sequence[TaskOutcome], p: float) -> float:
    """The share of all tasks that are correct and strictly faster than `p`."""
    if not outcomes:
        return 0.0
    return sum(1 for o in outcomes if o.correct and o.speedup is not None and o.speedup > p) / len(outcomes)


def aggregate(outcomes: Sequence[TaskOutcome]) -> Aggregate:
    """The metrics over `outcomes` (an empty set gives zeros)."""
    n = len(outcomes)
    if n == 0:
        return Aggregate(0, 0.0, 0.0, 0.0, 0.0, 0.0)
    clamped = [_clamped(o) for o in outcomes]
    gm_terms = [c if c > 0 else INCORRECT_IN_GM for c in clamped]
    return Aggregate(
        tasks=n,
        accuracy=sum(1 for o in outcomes if o.correct) / n,
        mean_speedup=sum(clamped) / n,
        fast_1_2=fast_p(outcomes, 1.2),
        fast_2=fast_p(outcomes, 2.0),
        gm10=math.exp(sum(math.log(t) for t in gm_terms) / n),
    )
