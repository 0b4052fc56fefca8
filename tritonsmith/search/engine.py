"""The search loop: select, propose, guard, evaluate, record, repeat; then the result.

One `Search` optimises one kernel. Each step selects a node and a step kind (tree.py), asks the
proposer for a candidate (a refinement of the node's chain, or a regeneration seeded by the
diverse pool), passes it through the guardian (static rules), evaluates it (evaluate.py:
compile, verify, time), and writes the node to the journal at once. Up to `concurrency` steps
are in flight; each holds a placeholder in the tree so that selection spreads out.

A search stops at its step budget, its wall-time budget, or when cancelled (the in-flight
evaluations are cancelled too; their placeholders are dropped, nothing half-done is recorded).
Resuming (`Search(..., resume=ID)`) rebuilds the tree from the journal and continues with the
next id: no evaluated node is lost or re-run.

The result is the fastest candidate that passed every check and beats the starting kernel by
more than the timing spread (every timing round of the candidate faster than every round of the
original), as a unified diff against the file as it was when the search started.
"""

from __future__ import annotations

import difflib
import hashlib
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .journal import Journal
from .model import (
    Evaluation,
    Outcome,
    ProposalError,
    Proposer,
    ProposerStopped,
    StepContext,
    StepKind,
    Task,
)
from .tree import Node, Tree, TreeSettings

if TYPE_CHECKING:  # experience memory: typing only (the engine imports no adapt code)
    from ..adapt.experience import ExperienceMemory

__all__ = ["Evaluator", "Guardian", "Progress", "Search", "SearchOptions", "SearchResult", "unified_diff"]


class Evaluator(Protocol):
    baseline_ms: float | None  # the original's time, which speedups are against

    def evaluate(self, source: str) -> Evaluation: ...


class Guardian(Protocol):
    def check(self, source: str) -> tuple[str | None, str]:
        """(the source to evaluate, possibly fixed; or None when dropped) and a note."""
        ...


@dataclass(frozen=True)
class SearchOptions:
    """Budgets and knobs (settings; defaults are AdaExplore's Level-2 configuration)."""

    steps: int = 100
    wall_time_s: float | None = None
    concurrency: int = 1
    mode: str = "auto"  # "auto" (the tree decides), "refine" or "regenerate" (that step kind only, where possible)
    seed: int = 0
    tree: TreeSettings = field(default_factory=TreeSettings)
    pitfalls: tuple[str, ...] = ()
    demonstrations: tuple[str, ...] = ()


@dataclass(frozen=True)
class Progress:
    """What a progress view shows after each step."""

    search_id: str
    step: int
    steps: int
    best_speedup: float | None
    cost_usd: float
    last: str  # one line about the step just finished

    def message(self, device: str) -> str:
        unit = "interpreter time" if device != "gpu" else "GPU time"
        best = f"best {self.best_speedup:.2f}× ({unit})" if self.best_speedup else "no faster variant yet"
        cost = f" · ${self.cost_usd:.2f}" if self.cost_usd else ""
        return f"step {self.step}/{self.steps} · {best}{cost}"


@dataclass
class SearchResult:
    """How a search ended and what it found."""

    search_id: str
    task: Task
    tree: Tree
    stopped: str  # "budget", "time", "cancelled", "original-fails", "proposer stopped: <why>"
    best: Node | None = None  # the fastest correct candidate, improved or not
    improved: bool = False  # `best` beats the original by more than the timing spread
    diff: str = ""  # unified diff of the improvement against the starting file ("" when none)
    cost_usd: float = 0.0

    @property
    def speedup(self) -> float | None:
        return self.best.evaluation.speedup if self.best is not None and self.best.evaluation else None

    def leaders(self, count: int = 5) -> list[Node]:
        """The fastest correct candidates, best first."""
        correct = [n for n in self.tree.evaluated() if n.evaluation is not None
                   and n.evaluation.outcome is Outcome.CORRECT and n.evaluation.speedup is not None]
        return sorted(correct, key=lambda n: -(n.evaluation.speedup or 0.0))[:count]  # type: ignore[union-attr]


def unified_diff(before: str, after: str, path: str) -> str:
    """A patch `git apply` accepts (a/ and b/ prefixes, relative path)."""
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=f"a/{path}", tofile=f"b/{path}")
    out = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return out


def _digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


class Search:
    """One kernel's search. `run()` blocks until a budget is spent or `cancel` is set."""

    def __init__(
        self,
        task: Task,
        proposer: Proposer,
        evaluator: Evaluator,
        journal: Journal,
        options: SearchOptions | None = None,
        *,
        guardian: Guardian | None = None,
        progress: Callable[[Progress], None] | None = None,
        cancel: threading.Event | None = None,
        resume: str | None = None,
        relative_path: str | None = None,
        memory: ExperienceMemory | None = None,
    ) -> None:
        self.proposer = proposer
        self.evaluator = evaluator
        self.journal = journal
        self.options = options or SearchOptions()
        self.guardian = guardian
        self.memory = memory  # experience memory: each step's outcome is recorded in `_finish`
        self.progress = progress
        self.cancel = cancel or threading.Event()
        self.relative_path = relative_path or Path(task.path).name
        self.rng = random.Random(self.options.seed)
        if resume is not None:
            self.task, _, self.tree = journal.load(resume)
            self.search_id = resume
            self.rng = random.Random(f"{self.options.seed}:{self.tree.next_id}")  # not a replay of the old draws
        else:
            self.task = task
            self.tree = Tree(self.options.tree)
            self.search_id = journal.start(task, {"tree": self.options.tree.to_dict(), "steps": self.options.steps,
                                                  "proposer": proposer.name})
        self._seen: dict[str, Evaluation] = {
            _digest(n.source): n.evaluation for n in self.tree.evaluated() if n.evaluation is not None and n.source
        }
        self._lock = threading.Lock()
        self.stop_reason = ""  # why the proposer stopped the search, if it did
        baseline = self._root()
        if baseline is not None and baseline.evaluation is not None and baseline.evaluation.time_ms:
            self.evaluator.baseline_ms = baseline.evaluation.time_ms  # resumed: speedups against the same time

    # -- the loop -------------------------------------------------------------------------

    def _root(self) -> Node | None:
        return next((n for n in self.tree.root.children if n.kind is StepKind.ROOT and not n.pending), None)

    def run(self) -> SearchResult:
        started = time.monotonic()
        stopped = "budget"
        if self._root() is None:
            placeholder = self.tree.reserve(self.tree.root, StepKind.ROOT)
            evaluation = self.evaluator.evaluate(self.task.source)
            if self.cancel.is_set() and evaluation.outcome is not Outcome.CORRECT:  # cut short, not failed
                self.tree.discard(placeholder)
                self.journal.finish(self.search_id, "cancelled")
                return SearchResult(self.search_id, self.task, self.tree, stopped="cancelled",
                                    cost_usd=self.proposer.cost_usd)
            self._finish(placeholder, self.task.source, evaluation, 0.0, "")
            if evaluation.outcome is not Outcome.CORRECT:
                self.journal.finish(self.search_id, "failed")
                return SearchResult(self.search_id, self.task, self.tree, stopped="original-fails",
                                    cost_usd=self.proposer.cost_usd)
        in_flight: dict[Future[tuple[str, Evaluation, float, str]], Node] = {}
        with ThreadPoolExecutor(max_workers=max(1, self.options.concurrency)) as executor:
            while True:
                if self.cancel.is_set():
                    stopped = "proposer stopped: " + self.stop_reason if self.stop_reason else "cancelled"
                    break
                out_of_time = self.options.wall_time_s is not None and time.monotonic() - started > self.options.wall_time_s
                budget_left = self.options.steps - (self.tree.evaluated_count - 1) - len(in_flight)
                if out_of_time:
                    stopped = "time"
                while not out_of_time and budget_left > 0 and len(in_flight) < max(1, self.options.concurrency):
                    parent, kind = self.tree.select(self.rng)
                    parent, kind = self._forced(parent, kind)
                    placeholder = self.tree.reserve(parent, kind)
                    # Contexts are built here, on the loop's thread: steps in flight never read the tree.
                    attempts = [(k, self._context(parent, k)) for k in (kind, self.tree.fallback(parent, kind)) if k]
                    in_flight[executor.submit(self._step, placeholder, attempts)] = placeholder
                    budget_left -= 1
                if not in_flight:
                    break
                done, _ = wait(in_flight, timeout=0.2, return_when=FIRST_COMPLETED)
                for future in done:
                    placeholder = in_flight.pop(future)
                    try:
                        source, evaluation, seconds, note = future.result()
                    except Exception as error:  # a bug in a proposer or the guardian: record, go on
                        source, evaluation, seconds, note = "", Evaluation(
                            Outcome.NOT_COMPILED, message=f"step failed: {type(error).__name__}: {error}"), 0.0, ""
                    self._finish(placeholder, source, evaluation, seconds, note)
            if self.cancel.is_set():
                for placeholder in in_flight.values():
                    self.tree.discard(placeholder)
                stopped = "proposer stopped: " + self.stop_reason if self.stop_reason else "cancelled"
        self.journal.finish(self.search_id, stopped)
        return self._result(stopped)

    def _forced(self, parent: Node, kind: StepKind) -> tuple[Node, StepKind]:
        """The step the options ask for ("… by refinement", "… by regeneration")."""
        if self.options.mode == "refine":
            if not self.tree.can_refine(parent):  # the dummy root: refine the best kernel so far
                parent = self._best_correct() or self._root() or parent
            if self.tree.can_refine(parent):
                return parent, StepKind.REFINE
        if self.options.mode == "regenerate":
            return parent, StepKind.REGENERATE
        return parent, kind

    def _step(self, placeholder: Node, attempts: list[tuple[StepKind, StepContext]]) -> tuple[str, Evaluation, float, str]:
        """Propose (the chosen step kind, then the other once), guard, evaluate."""
        began = time.perf_counter()
        source: str | None = None
        errors = []
        for kind, context in attempts:
            try:
                if kind is StepKind.REFINE:
                    source, _ = self.proposer.refine(context)
                else:
                    source = self.proposer.regenerate(context)
                placeholder.kind = kind  # the step actually taken (refinements are counted by kind)
                break
            except ProposerStopped as error:  # no key, cap reached: every later step would fail too
                self.stop_reason = str(error)
                self.cancel.set()
                errors.append(str(error))
                break
            except ProposalError as error:
                errors.append(f"{kind.value}: {error}")
        seconds = time.perf_counter() - began
        if source is None:
            return "", Evaluation(Outcome.NOT_COMPILED, message="proposer: " + "; ".join(errors)), seconds, ""
        note = ""
        if self.guardian is not None:
            checked, note = self.guardian.check(source)
            if checked is None:
                return source, Evaluation(Outcome.NOT_COMPILED, message=f"guardian: {note}"), seconds, note
            source = checked
        digest = _digest(source)
        with self._lock:
            known = self._seen.get(digest)
        if known is not None:  # the same file again: its measurement stands
            return source, replace(known, message="same as an evaluated candidate: " + known.message), seconds, note
        evaluation = self.evaluator.evaluate(source)
        with self._lock:
            self._seen[digest] = evaluation
        return source, evaluation, seconds, note

    def _context(self, parent: Node, kind: StepKind) -> StepContext:
        if kind is StepKind.REFINE:
            return StepContext(task=self.task, chain=self.tree.chain_context(parent),
                               pitfalls=self.options.pitfalls, demonstrations=self.options.demonstrations)
        pool = tuple(self.tree.pool(parent, self.rng))[: self.tree.settings.pool_size]
        return StepContext(task=self.task, pool=pool, pitfalls=self.options.pitfalls,
                           demonstrations=self.options.demonstrations)

    def _finish(self, placeholder: Node, source: str, evaluation: Evaluation, seconds: float, note: str) -> None:
        node = self.tree.complete(placeholder, evaluation, source=source, proposer=self.proposer.name,
                                  cost_usd=self.proposer.cost_usd, propose_seconds=round(seconds, 3))
        self.journal.record(self.search_id, node)
        if self.memory is not None and node.kind is not StepKind.ROOT and source:
            # Experience memory (adapt/experience.py): every proposed candidate is an attempt at
            # the task, every correct one a solution. The original is not a proposal; a step
            # that produced no candidate (no key, a proposer bug) is not an attempt.
            self.memory.record_attempt(self.task, evaluation.outcome)
            if evaluation.outcome is Outcome.CORRECT:
                self.memory.record_solution(self.task, source, evaluation.speedup, self.task.device)
        if self.progress is not None:
            best = self._best_correct()
            speed = best.evaluation.speedup if best is not None and best.evaluation is not None else None
            line = f"#{node.id} {node.kind.value}: {evaluation.outcome.value}"
            if evaluation.speedup is not None:
                line += f" {evaluation.speedup:.2f}×"
            elif evaluation.message:
                line += f" ({evaluation.message.splitlines()[0][:100]})"
            self.progress(Progress(self.search_id, self.tree.evaluated_count - 1, self.options.steps, speed,
                                   self.proposer.cost_usd, line))

    # -- the result -----------------------------------------------------------------------

    def _best_correct(self) -> Node | None:
        correct = [n for n in self.tree.evaluated() if n.kind is not StepKind.ROOT and n.evaluation is not None
                   and n.evaluation.outcome is Outcome.CORRECT and n.evaluation.speedup is not None]
        return max(correct, key=lambda n: n.evaluation.speedup or 0.0, default=None)  # type: ignore[union-attr]

    def _result(self, stopped: str) -> SearchResult:
        result = SearchResult(self.search_id, self.task, self.tree, stopped, cost_usd=self.proposer.cost_usd)
        best = self._best_correct()
        root = self._root()
        result.best = best
        if best is None or best.evaluation is None or root is None or root.evaluation is None:
            return result
        low = best.evaluation.spread[0] if best.evaluation.spread else best.evaluation.speedup or 0.0
        root_high = root.evaluation.spread[1] if root.evaluation.spread else 1.0
        result.improved = low > max(1.0, root_high) and best.source != self.task.source
        if result.improved:
            result.diff = unified_diff(self.task.source, best.source, self.relative_path)
        return result
