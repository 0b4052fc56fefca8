"""The search's plain data: what a step proposes, what an evaluation measured, and what a
proposer is given (shared by the tree, the journal, the proposers and the engine).

A candidate is always a whole file: the user's file with the kernel (and its launcher,
configs, helpers) changed. Small steps are exact old/new text edits applied to the last kernel
of the refinement chain (AdaExplore's tuner format); large steps are complete new files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

__all__ = [
    "Edit",
    "Evaluation",
    "Outcome",
    "PoolEntry",
    "ProposalError",
    "Proposer",
    "ProposerStopped",
    "StepContext",
    "StepKind",
    "Task",
    "apply_edits",
]


class StepKind(str, Enum):
    ROOT = "root"  # the kernel the search started from (evaluated first, node 0)
    REFINE = "refine"  # small step: exact edits to the parent's source
    REGENERATE = "regenerate"  # large step: a full rewrite seeded by the diverse pool


class Outcome(str, Enum):
    NOT_COMPILED = "not_compiled"  # includes candidates the guardian dropped, and proposer failures
    WRONG = "wrong"  # compiled, but failed verification (or a defense)
    CORRECT = "correct"


@dataclass(frozen=True)
class Edit:
    """Replace the one occurrence of `old` with `new` (AdaExplore's `<old_str>/<new_str>`)."""

    old: str
    new: str
    reasoning: str = ""


class ProposalError(Exception):
    """A proposer could not produce a candidate (malformed answer, refusal, edit that does not
    apply, spending cap reached, ...). The message is one line for the journal."""


class ProposerStopped(ProposalError):
    """The proposer cannot produce anything in this search any more (no key, key rejected,
    spending cap reached): the engine stops the search rather than fail every later step."""


def apply_edits(source: str, edits: list[Edit]) -> str:
    """`source` with each edit applied in order; each `old` must occur exactly once."""
    for i, edit in enumerate(edits, 1):
        count = source.count(edit.old) if edit.old else 0
        if count != 1:
            where = "does not occur" if count == 0 else f"occurs {count} times"
            raise ProposalError(f"edit {i}: the old text {where} in the kernel")
        source = source.replace(edit.old, edit.new, 1)
    return source


@dataclass(frozen=True)
class Task:
    """What is being optimised: the file, the kernel, how it is verified, and the target."""

    path: str
    kernel: str  # the @triton.jit kernel the user asked for
    source: str  # the whole file as it was when the search started
    spec: str  # "harness:<launcher>" | "kernelbench" | "oracle" (the original kernel's outputs)
    device: str  # "gpu" | "interpreter"
    target: str = "sm_90"
    target_facts: str = ""  # e.g. "NVIDIA H200, 132 SMs, 228 KB shared memory per SM"
    objective: str = "time"  # "time" (GPU or interpreter time, per `device`) | "predicted" (predicted target time)

    @property
    def measured(self) -> str:
        """What a speedup is a ratio of: "GPU time", "interpreter time" or "predicted H100 SXM time"."""
        if self.objective == "predicted":
            from ..evaluator.predict import predicted_label  # imports nothing heavy

            return predicted_label(self.target)
        return "GPU time" if self.device == "gpu" else "interpreter time"


@dataclass
class Evaluation:
    """What evaluating one candidate measured."""

    outcome: Outcome
    speedup: float | None = None  # against the kernel the search started from
    spread: tuple[float, float] | None = None  # the speedup's per-round range
    time_ms: float | None = None  # the candidate's time (interpreter or GPU, per `Task.device`)
    message: str = ""  # compile error, verification failure, or the verdict summary
    resources: list[dict[str, Any]] = field(default_factory=list)  # per config × target
    seconds: float = 0.0  # how long the evaluation took
    reference_speedup: float | None = None  # on a GPU: against the spec's PyTorch reference (KernelBench's sense)
    same_as: int | None = None  # the evaluated node this one is identical to for the timing (search/equivalence.py)
    predicted_s: float | None = None  # the predicted target time (evaluator/predict.py), when the objective is it
    standing: str = ""  # the check's verdict: "verified", "NOT VERIFIED" or "FAILED" (evaluator/standing.py)
    stage: str = ""  # where the check ended (`standing.Stage`)

    def feedback(self) -> str:
        """Execution feedback for the next prompt: one short paragraph."""
        if self.same_as is not None:
            text = (f"the same kernel as #{self.same_as} once hints that cannot change the measured time are set "
                    f"aside: not re-timed ({self.outcome.value})")
        elif self.outcome is Outcome.CORRECT and self.speedup is not None:
            text = f"correct; {self.speedup:.2f}x against the original"
            if self.predicted_s is not None:
                text += f" (predicted {self.predicted_s * 1e6:.4g} µs on the target GPU)"
            elif self.time_ms is not None:
                text += f" ({self.time_ms:.4g} ms)"
        elif self.outcome is Outcome.WRONG:
            text = f"compiled but wrong: {self.message}"
        else:
            text = f"did not compile: {self.message}"
        for entry in self.resources[:3]:
            res = entry.get("resources") or {}
            if res:
                text += (f"; {entry.get('config')}: {res.get('registers')} regs, {res.get('spills')} spills, "
                         f"{res.get('shared')} B smem")
        return text


@dataclass(frozen=True)
class PoolEntry:
    """A verified kernel in the diverse pool given to a regenerate step."""

    source: str
    evaluation: Evaluation


@dataclass(frozen=True)
class StepContext:
    """Everything a proposer sees for one step.

    Attributes:
        task: the kernel being optimised.
        chain: for a refine step, the refinement chain up to the nearest regenerate ancestor,
            oldest first, at most five (source, evaluation); the last is the one edits apply to.
        pool: for a regenerate step, the best verified kernel of each branch on the path, at
            most five.
        pitfalls: rule statements with a count at or above the threshold, most relevant first.
        demonstrations: verified solutions from the experience memory (may be empty).
    """

    task: Task
    chain: tuple[tuple[str, Evaluation], ...] = ()
    pool: tuple[PoolEntry, ...] = ()
    pitfalls: tuple[str, ...] = ()
    demonstrations: tuple[str, ...] = ()


class Proposer(Protocol):
    """Proposes candidates. Both methods return a whole file, or raise `ProposalError`.

    `name` goes in the journal; `cost_usd` is what the proposer has spent so far (0 offline).
    """

    name: str

    def refine(self, context: StepContext) -> tuple[str, list[Edit]]:
        """A small step: the edits, applied to `context.chain[-1]`'s source, and the result."""
        ...

    def regenerate(self, context: StepContext) -> str:
        """A large step: a complete new file."""
        ...

    @property
    def cost_usd(self) -> float:
        ...
