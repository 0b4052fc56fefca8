"""The search loop: select, propose, guard, evaluate, record, repeat; then the result.

One `Search` optimises one kernel. Each step selects a node and a step kind (tree.py), asks the
proposer for a candidate (a refinement of the node's chain, or a regeneration seeded by the
diverse pool), passes it through the guardian (static rules), evaluates it (evaluate.py:
compile, verify, time), and writes the node to the journal at once. Up to `concurrency` steps
are in flight; each holds a placeholder in the tree so that selection spreads out.

A search stops at its step budget, its wall-time budget, at a plateau (`patience` candidates in a
row found nothing faster than the best so far by more than a tie), or when cancelled (the
in-flight evaluations are cancelled too; their placeholders are dropped, nothing half-done is
recorded).
Resuming (`Search(..., resume=ID)`) rebuilds the tree from the journal and continues with the
next id: no evaluated node is lost or re-run.

Screening and confirmation. Each candidate is timed briefly as it is evaluated (a few calls,
against the original's time from the start of the search): enough to steer the tree, not enough
to claim anything, since on a loaded machine the moment of a measurement can matter more than
the kernel. A candidate that is the same kernel as one already evaluated once hints that cannot
change the measured time are set aside (equivalence.py) is not evaluated again: it takes that
node's measurement, marked `same_as`, and can never be the result. When the search ends, the
fastest candidates by screening (at most `SearchOptions.confirmations` of them, each screened
faster than the original) are confirmed in turn. Candidates whose screening figures tie (within
`TIE`, as a predicted time's often do: every block past the row's width predicts alike) are one
result: the one that changes the fewest lines of the original stands for them, and the others
are counted, not confirmed again. They are confirmed in turn (`Evaluator.confirm`: re-timed against the
original in alternating rounds in fresh workers, evaluator/confirm.py and stats.py), and the first
whose 95% interval clears 1 + the measured noise floor is the result, as a unified diff against
the file as it was when the search started. A search cancelled by the user confirms nothing and
claims nothing (resume it to finish); nothing else claims a speedup.
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

from ..evaluator.stats import Confirmation
from .equivalence import equivalence_key, measure_of, without_unmeasured
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
    from ..state.experience import ExperienceMemory

__all__ = ["TIE", "Evaluator", "Guardian", "Progress", "Search", "SearchOptions", "SearchResult", "unified_diff"]

TIE = 0.01
"""Screening speedups within this fraction of each other tie: neither is better."""


class Evaluator(Protocol):
    baseline_ms: float | None  # the original's time, which screening speedups are against
    baseline_predicted_s: float | None  # the original's predicted time (Task.objective "predicted")

    def evaluate(self, source: str) -> Evaluation: ...

    def confirm(self, original: str, candidate: str,
                progress: Callable[[int, Confirmation], None] | None = None) -> Confirmation:
        """Re-time `candidate` against `original` until the speedup is known (stats.confirm)."""
        ...


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
    confirmations: int = 2
    """At most this many of the fastest candidates (by screening) are confirmed at the end."""
    patience: int | None = None
    """Stop once this many candidates in a row found nothing faster than the best so far (by
    more than `TIE`); None or 0: run the whole budget."""


@dataclass(frozen=True)
class Progress:
    """What a progress view shows after each step."""

    search_id: str
    step: int
    steps: int
    best_speedup: float | None
    cost_usd: float
    last: str  # one line about the step just finished
    measured: str = ""  # what the speedups are ratios of (`Task.measured`)
    elapsed_s: float = 0.0  # since the search began
    left_s: float | None = None  # the steps that may remain, at the pace so far (None: unknown yet)

    def message(self, device: str) -> str:
        unit = self.measured or ("interpreter time" if device != "gpu" else "GPU time")
        clock = f" · {_clock(self.elapsed_s)} elapsed" + (
            f", at most ~{_clock(self.left_s)} left" if self.left_s is not None else "")
        if self.last.startswith("confirming"):
            return f"step {self.step}/{self.steps} · {self.last} ({unit}){clock}"
        best = (f"best so far {self.best_speedup:.2f}× in screening, unconfirmed ({unit})" if self.best_speedup
                else "no faster variant yet")
        cost = f" · ${self.cost_usd:.2f}" if self.cost_usd else ""
        return f"step {self.step}/{self.steps} · {best}{cost}{clock}"


def _clock(seconds: float) -> str:
    """"42 s", "3 min 05 s", "1 h 02 min"."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


@dataclass
class SearchResult:
    """How a search ended and what it found."""

    search_id: str
    task: Task
    tree: Tree
    stopped: str  # "budget", "plateau", "time", "cancelled", "original-fails", "proposer stopped: <why>"
    best: Node | None = None  # the confirmed candidate; else the fastest new one by screening
    improved: bool = False  # `best`'s speedup is confirmed (`confirmation.claimed`)
    diff: str = ""  # unified diff of the improvement against the starting file ("" when none)
    patched: str = ""  # the file the diff makes: `best`'s source, as verified and confirmed
    cost_usd: float = 0.0
    confirmation: Confirmation | None = None  # `best`'s confirmation, when one ran
    confirmations: list[tuple[int, Confirmation]] = field(default_factory=list)  # every one that ran, in order
    new_verified: list[Node] = field(default_factory=list)  # verified, not the start up to hints; fastest first
    tied: dict[int, list[int]] = field(default_factory=dict)  # a result's node -> the others its figure ties (`TIE`)

    @property
    def speedup(self) -> float | None:
        """The confirmed estimate of `best`'s speedup (with its interval in `confirmation`),
        or None when no confirmation ran: a screening figure is never the search's speedup."""
        return self.confirmation.speedup if self.confirmation is not None and not self.confirmation.error else None

    @property
    def screening_speedup(self) -> float | None:
        return self.best.evaluation.speedup if self.best is not None and self.best.evaluation else None

    @property
    def set_aside(self) -> int:
        """Candidates not evaluated: the same kernel as an evaluated one for the timing."""
        return sum(1 for n in self.tree.evaluated() if n.evaluation is not None and n.evaluation.same_as is not None)

    def outcome_text(self) -> str:
        """"1.32× (95% CI 1.21–1.44×, noise floor 3%)", "no improvement (best 1.04×, CI
        0.97–1.10×, within noise; …)", or why there is nothing to confirm."""
        if self.confirmation is not None:
            return self.confirmation.text()
        if self.stopped == "original-fails":
            return "the original kernel fails verification"
        if self.best is None:
            same = self.set_aside
            return "no improvement (no new verified candidate" + (
                f"; {same} set aside as the original up to hints that cannot change the time)" if same else ")")
        if self.stopped == "cancelled":
            return "no improvement claimed (cancelled before the confirmation; resume to finish)"
        screening = self.screening_speedup
        return (f"no improvement (no candidate faster than the original in screening; best "
                f"{screening:.2f}×)" if screening is not None else "no improvement")

    def leaders(self, count: int = 5) -> list[Node]:
        """The fastest correct candidates by screening, best first, one for each group of ties
        (the original included; candidates that are another node's kernel for the timing, or
        tie one listed, left out)."""
        correct = [n for n in self.tree.evaluated() if n.evaluation is not None and n.evaluation.same_as is None
                   and n.evaluation.outcome is Outcome.CORRECT and n.evaluation.speedup is not None]
        hidden = {other for others in self.tied.values() for other in others}
        ranked = sorted(correct, key=lambda n: -(n.evaluation.speedup or 0.0))  # type: ignore[union-attr]
        return [n for n in ranked if n.id not in hidden][:count]


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
        # What has been measured, by exact text and by kernel-for-the-timing (equivalence.py).
        self._seen: dict[str, tuple[int, Evaluation]] = {}
        self._keys: dict[int, str] = {}  # node id -> its equivalence key
        self._same: dict[str, tuple[int, Evaluation]] = {}
        for node in self.tree.evaluated():
            if node.evaluation is not None and node.source and node.evaluation.same_as is None:
                self._remember(node.id, node.source, node.evaluation)
        self._lock = threading.Lock()
        self._root_key = equivalence_key(self.task.source, self._measure)
        self._started = time.monotonic()
        self._resumed_steps = 0
        self._stop = threading.Event()  # the proposer cannot go on: no new steps (in-flight ones finish)
        self.stop_reason = ""  # why the proposer stopped the search, if it did
        baseline = self._root()
        if baseline is not None and baseline.evaluation is not None and baseline.evaluation.time_ms:
            self.evaluator.baseline_ms = baseline.evaluation.time_ms  # resumed: speedups against the same time
        if baseline is not None and baseline.evaluation is not None and baseline.evaluation.predicted_s:
            self.evaluator.baseline_predicted_s = baseline.evaluation.predicted_s

    # -- the loop -------------------------------------------------------------------------

    def _root(self) -> Node | None:
        return next((n for n in self.tree.root.children if n.kind is StepKind.ROOT and not n.pending), None)

    def run(self) -> SearchResult:
        started = self._started = time.monotonic()
        self._resumed_steps = max(0, self.tree.evaluated_count - 1)  # steps of an earlier run: not this pace
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
                    stopped = "cancelled"
                    break
                if self._stop.is_set():
                    stopped = "proposer stopped: " + self.stop_reason
                out_of_time = self.options.wall_time_s is not None and time.monotonic() - started > self.options.wall_time_s
                budget_left = self.options.steps - (self.tree.evaluated_count - 1) - len(in_flight)
                if out_of_time and not self._stop.is_set():
                    stopped = "time"
                plateau = self._plateaued()
                if plateau and not out_of_time and not self._stop.is_set():
                    stopped = "plateau"
                while (not out_of_time and not plateau and not self._stop.is_set() and budget_left > 0
                       and len(in_flight) < max(1, self.options.concurrency)):
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
                stopped = "cancelled"
        result = self._result(stopped)
        self.journal.finish(self.search_id, stopped)
        return result

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
                self._stop.set()
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
        # Only what the measure can see stays (equivalence.without_unmeasured), and it is cut
        # here, before the evaluation: the text verified and timed is the text a patch carries.
        source = without_unmeasured(self.task.source, source, self._measure)
        digest, key = _digest(source), equivalence_key(source, self._measure)
        with self._lock:
            exact, same = self._seen.get(digest), self._same.get(key)
        if exact is not None:  # the same file again: its measurement stands
            known_id, known = exact
            return source, replace(known, message=f"same as #{known_id}: " + known.message, same_as=known_id,
                                   seconds=0.0), seconds, note
        if same is not None:  # the same kernel for the timing: not re-timed, and it cannot win
            known_id, known = same
            hints = {"interpreter": "hints that cannot change interpreter time (num_warps, num_stages, eviction_policy, "
                                    "cache_modifier, max_contiguous, multiple_of, …)",
                     "predicted": "hints the predicted time has no term for (eviction_policy, cache_modifier, "
                                  "max_contiguous, multiple_of, …)",
                     }.get(self._measure, "names, comments and layout")
            return source, replace(known, message=(f"the same kernel as #{known_id} up to {hints}: not re-timed; "
                                                   "its measurement stands: " + known.message),
                                   same_as=known_id, seconds=0.0), seconds, note
        evaluation = self.evaluator.evaluate(source)
        return source, evaluation, seconds, note

    @property
    def _measure(self) -> str:
        return measure_of(self.task)

    def _key(self, node: Node) -> str:
        key = self._keys.get(node.id)
        if key is None:
            key = self._keys[node.id] = equivalence_key(node.source, self._measure)
        return key

    def _remember(self, node_id: int, source: str, evaluation: Evaluation) -> None:
        key = equivalence_key(source, self._measure)
        self._keys[node_id] = key
        self._seen.setdefault(_digest(source), (node_id, evaluation))
        self._same.setdefault(key, (node_id, evaluation))

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
        if source and evaluation.same_as is None:
            with self._lock:
                self._remember(node.id, source, evaluation)
        if self.memory is not None and node.kind is not StepKind.ROOT and source:
            # Experience memory (state/experience.py): every proposed candidate is an attempt at
            # the task, every correct one a solution. The original is not a proposal; a step
            # that produced no candidate (no key, a proposer bug) is not an attempt.
            self.memory.record_attempt(self.task, evaluation.outcome)
            if evaluation.outcome is Outcome.CORRECT and evaluation.same_as is None:
                self.memory.record_solution(self.task, source, evaluation.speedup, self.task.device)
        if self.progress is not None:
            best = self._best_correct()
            speed = best.evaluation.speedup if best is not None and best.evaluation is not None else None
            line = f"#{node.id} {node.kind.value}: {evaluation.outcome.value}"
            if evaluation.speedup is not None:
                line += f" {evaluation.speedup:.2f}×"
            elif evaluation.message:
                line += f" ({evaluation.message.splitlines()[0][:100]})"
            elapsed = time.monotonic() - self._started
            self.progress(Progress(self.search_id, self.tree.evaluated_count - 1, self.options.steps, speed,
                                   self.proposer.cost_usd, line, self.task.measured, elapsed, self._time_left(elapsed)))

    # -- the result -----------------------------------------------------------------------

    def _candidates(self) -> list[Node]:
        """New verified kernels that may be the result, fastest by screening first: correct,
        not the original, and not the original's (or another node's) kernel for the timing."""
        root = self._root()
        root_key = self._root_key
        correct = [n for n in self.tree.evaluated() if n is not root and n.kind is not StepKind.ROOT
                   and n.evaluation is not None and n.evaluation.outcome is Outcome.CORRECT
                   and n.evaluation.speedup is not None and n.evaluation.same_as is None and n.source
                   and n.source != self.task.source and self._key(n) != root_key]
        return sorted(correct, key=lambda n: -(n.evaluation.speedup or 0.0))  # type: ignore[union-attr]

    def _tie_groups(self) -> list[list[Node]]:
        """`_candidates` in groups whose screening figures tie (each within `TIE` of its
        group's fastest), fastest group first; within a group the smallest change to the
        original first (fewest lines changed, then the earliest), which stands for the group."""
        groups: list[list[Node]] = []
        for node in self._candidates():
            speedup = node.evaluation.speedup or 0.0  # type: ignore[union-attr]
            lead = (groups[-1][0].evaluation.speedup or 0.0) if groups else 0.0  # type: ignore[union-attr]
            if groups and speedup >= lead * (1 - TIE):
                groups[-1].append(node)
            else:
                groups.append([node])
        return [sorted(group, key=lambda n: (self._changed_lines(n), n.id)) for group in groups]

    def _changed_lines(self, node: Node) -> int:
        before, after = self.task.source.splitlines(), node.source.splitlines()
        opcodes = difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes()
        return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in opcodes if tag != "equal")

    def _best_correct(self) -> Node | None:
        candidates = self._candidates()
        return candidates[0] if candidates else None

    def _plateaued(self) -> bool:
        """Whether the last `patience` candidates found nothing faster than the best before
        them by more than a tie (the original counts as the first best)."""
        return bool(self.options.patience) and self._since_best() >= (self.options.patience or 0)

    def _time_left(self, elapsed: float) -> float | None:
        """At the pace so far, how long the steps that may remain take (the budget's, or the
        plateau's if it comes first); None before the first step."""
        done = self.tree.evaluated_count - 1 - self._resumed_steps
        if done <= 0:
            return None
        remaining = self.options.steps - (self.tree.evaluated_count - 1)
        if self.options.patience:
            remaining = min(remaining, self.options.patience - self._since_best())
        left = max(0, remaining) * elapsed / done
        if self.options.wall_time_s is not None:
            left = min(left, max(0.0, self.options.wall_time_s - elapsed))
        return left

    def _since_best(self) -> int:
        """Candidates evaluated since the last one faster than every one before it."""
        best, since = 1.0, 0
        for node in sorted(self.tree.evaluated(), key=lambda n: n.id):
            evaluation = node.evaluation
            if node.kind is StepKind.ROOT or evaluation is None:
                continue
            if evaluation.outcome is Outcome.CORRECT and evaluation.same_as is None and \
                    evaluation.speedup is not None and evaluation.speedup > best * (1 + TIE):
                best, since = evaluation.speedup, 0
            else:
                since += 1
        return since

    def _result(self, stopped: str) -> SearchResult:
        result = SearchResult(self.search_id, self.task, self.tree, stopped, cost_usd=self.proposer.cost_usd)
        groups = self._tie_groups()
        candidates = [group[0] for group in groups]  # one for each group of ties
        root = self._root()
        result.new_verified = [node for group in groups for node in group]
        result.tied = {group[0].id: [n.id for n in group[1:]] for group in groups if len(group) > 1}
        result.best = candidates[0] if candidates else None
        if (not candidates or root is None or root.evaluation is None or root.evaluation.outcome is not Outcome.CORRECT
                or stopped == "cancelled" or self.cancel.is_set()):
            return result
        for node in candidates[: max(0, self.options.confirmations)]:
            if (node.evaluation.speedup or 0.0) <= 1.0 or self.cancel.is_set():  # type: ignore[union-attr]
                break  # screened no faster than the original: nothing left to confirm
            confirmation = self._confirm(node)
            result.confirmations.append((node.id, confirmation))
            self.journal.record_confirmation(self.search_id, node.id, confirmation)
            if result.confirmation is None or confirmation.claimed:
                result.best, result.confirmation = node, confirmation
            if confirmation.claimed:
                result.improved = True
                # Exactly the text that was verified and confirmed (trimmed before, in `_step`).
                result.patched = node.source
                result.diff = unified_diff(self.task.source, result.patched, self.relative_path)
                break
        return result

    def _confirm(self, node: Node) -> Confirmation:
        screening = node.evaluation.speedup if node.evaluation is not None else None

        def report(line: str) -> None:
            if self.progress is not None:
                self.progress(Progress(self.search_id, self.tree.evaluated_count - 1, self.options.steps,
                                       screening, self.proposer.cost_usd, line, self.task.measured,
                                       time.monotonic() - self._started))

        report(f"confirming #{node.id} against the original in fresh workers "
               f"(screening said {screening or 0.0:.2f}×)")
        try:
            return self.evaluator.confirm(self.task.source, node.source, progress=lambda rounds, state: report(
                f"confirming #{node.id}: round {rounds}, {state.speedup:.2f}× so far ({state.interval()})"))
        except Exception as error:  # an evaluator bug: nothing is claimed, the search's tree stands
            return Confirmation(speedup=float("nan"), low=float("nan"), high=float("nan"), noise_floor=float("inf"),
                                rounds=0, claimed=False, stopped="failed", error=f"{type(error).__name__}: {error}")
