"""The search loop with scripted proposers and evaluators (fast, no workers), and the offline
proposer end to end on the CPU interpreter (real workers)."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tritonsmith.evaluator.stats import Confirmation, RoundPolicy, confirm
from tritonsmith.search.engine import Search, SearchOptions, unified_diff
from tritonsmith.search.journal import Journal
from tritonsmith.search.model import (
    Edit,
    Evaluation,
    Outcome,
    ProposalError,
    ProposerStopped,
    StepContext,
    StepKind,
    Task,
)

FIXTURES = Path(__file__).parent / "fixtures"
ORIGINAL = "def kernel():\n    BLOCK = 16\n"


@dataclass
class ScriptedProposer:
    """Refines by bumping BLOCK; regenerates by writing BLOCK = 1024; can be told to fail."""

    name: str = "scripted"
    fail_refine: bool = False
    stop_after: int | None = None
    calls: list[str] = field(default_factory=list)

    @property
    def cost_usd(self) -> float:
        return 0.01 * len(self.calls)

    def _count(self, kind: str) -> None:
        self.calls.append(kind)
        if self.stop_after is not None and len(self.calls) > self.stop_after:
            raise ProposerStopped("spending cap of $0.05 reached ($0.06 spent)")

    def refine(self, context: StepContext) -> tuple[str, list[Edit]]:
        self._count("refine")
        if self.fail_refine:
            raise ProposalError("edit 1: the old text does not occur in the kernel")
        base = context.chain[-1][0]
        block = int(base.split("BLOCK = ")[1].split()[0])
        edit = Edit(f"BLOCK = {block}", f"BLOCK = {block * 2}")
        return base.replace(edit.old, edit.new), [edit]

    def regenerate(self, context: StepContext) -> str:
        self._count("regenerate")
        return f"def kernel():\n    BLOCK = {random.choice([256, 512, 1024])}\n"


class BlockEvaluator:
    """Time = 1 / BLOCK: bigger blocks are faster; BLOCK over 4096 does not compile. A
    confirmation re-times both sides with 3% noise through `stats.confirm` (no workers)."""

    def __init__(self) -> None:
        self.baseline_ms: float | None = None
        self.sources: list[str] = []
        self.confirmed: list[tuple[str, str]] = []

    def confirm(self, original: str, candidate: str, progress: Callable[[int, Confirmation], None] | None = None
                ) -> Confirmation:
        self.confirmed.append((original, candidate))
        times = {"original": 1000.0 / _block(original), "original_b": 1000.0 / _block(original),
                 "candidate": 1000.0 / _block(candidate)}
        noise = random.Random(len(self.confirmed))
        return confirm(lambda r, order: {side: t * noise.uniform(0.97, 1.03) for side, t in times.items()},
                       RoundPolicy(), progress=progress)

    def evaluate(self, source: str) -> Evaluation:
        self.sources.append(source)
        block = _block(source)
        if block > 4096:
            return Evaluation(Outcome.NOT_COMPILED, message="BLOCK too large")
        time_ms = 1000.0 / block
        if self.baseline_ms is None:
            self.baseline_ms = time_ms
        speedup = self.baseline_ms / time_ms
        return Evaluation(Outcome.CORRECT, speedup=speedup, spread=(speedup * 0.98, speedup * 1.02), time_ms=time_ms)


def _block(source: str) -> int:
    return int(source.split("BLOCK = ")[1].split()[0])


def _task(tmp_path: Path) -> Task:
    path = tmp_path / "k.py"
    path.write_text(ORIGINAL)
    return Task(path=str(path), kernel="kernel", source=ORIGINAL, spec="harness:k", device="interpreter")


def test_a_scripted_search_finds_the_bigger_block_and_returns_a_diff(tmp_path: Path) -> None:
    random.seed(0)
    journal = Journal(tmp_path)
    evaluator = BlockEvaluator()
    search = Search(_task(tmp_path), ScriptedProposer(), evaluator, journal, SearchOptions(steps=12, seed=1))
    result = search.run()
    assert result.stopped == "budget" and result.tree.evaluated_count == 13  # the original + 12 steps
    assert result.improved and result.speedup is not None and result.speedup >= 16
    assert result.confirmation is not None and result.confirmation.claimed
    assert result.confirmation.low > 1 + result.confirmation.noise_floor
    assert evaluator.confirmed == [(ORIGINAL, result.best.source)]  # the winner, against the original
    assert result.outcome_text().startswith(f"{result.speedup:.2f}× (95% CI ")
    assert [c.claimed for _, c in journal.confirmations(result.search_id)] == [True]
    assert result.diff.startswith("--- a/k.py\n+++ b/k.py\n") and "-    BLOCK = 16" in result.diff
    kinds = {n.kind for n in result.tree.evaluated()}
    assert {StepKind.ROOT, StepKind.REFINE, StepKind.REGENERATE} <= kinds
    # Every node went into the journal as it was evaluated.
    _, _, loaded = journal.load(result.search_id)
    assert loaded.evaluated_count == 13


def test_the_same_candidate_twice_is_evaluated_once(tmp_path: Path) -> None:
    evaluator = BlockEvaluator()
    search = Search(_task(tmp_path), ScriptedProposer(), evaluator, Journal(tmp_path), SearchOptions(steps=15, seed=2))
    search.run()
    assert len(evaluator.sources) == len(set(evaluator.sources))


def test_a_failing_step_kind_falls_back_to_the_other_and_failures_are_recorded(tmp_path: Path) -> None:
    proposer = ScriptedProposer(fail_refine=True)
    result = Search(_task(tmp_path), proposer, BlockEvaluator(), Journal(tmp_path), SearchOptions(steps=6, seed=3)).run()
    assert "refine" in proposer.calls and "regenerate" in proposer.calls
    assert all(n.kind is not StepKind.REFINE for n in result.tree.evaluated())  # refines fell back
    assert result.tree.evaluated_count == 7


def test_a_stopped_proposer_ends_the_search_with_its_reason(tmp_path: Path) -> None:
    proposer = ScriptedProposer(stop_after=3)
    result = Search(_task(tmp_path), proposer, BlockEvaluator(), Journal(tmp_path), SearchOptions(steps=20)).run()
    assert result.stopped.startswith("proposer stopped: spending cap of $0.05 reached")
    assert result.tree.evaluated_count < 21


def test_cancelling_stops_the_search_and_resuming_finishes_it_without_rerunning(tmp_path: Path) -> None:
    cancel = threading.Event()
    evaluator = BlockEvaluator()
    journal = Journal(tmp_path)

    def stop_after_three(progress: object) -> None:
        if len(evaluator.sources) >= 4:
            cancel.set()

    first = Search(_task(tmp_path), ScriptedProposer(), evaluator, journal, SearchOptions(steps=10),
                   progress=stop_after_three, cancel=cancel).run()
    assert first.stopped == "cancelled"
    done = first.tree.evaluated_count
    resumed_evaluator = BlockEvaluator()
    second = Search(_task(tmp_path), ScriptedProposer(), resumed_evaluator, journal, SearchOptions(steps=10),
                    resume=first.search_id).run()
    assert second.stopped == "budget" and second.tree.evaluated_count == 11
    assert done < 11
    assert not set(resumed_evaluator.sources) & set(evaluator.sources)  # nothing evaluated twice
    assert resumed_evaluator.baseline_ms == pytest.approx(1000.0 / 16)  # speedups stay against the original


def test_an_original_that_fails_verification_stops_at_once(tmp_path: Path) -> None:
    class Failing(BlockEvaluator):
        def evaluate(self, source: str) -> Evaluation:
            return Evaluation(Outcome.WRONG, message="trial 1: max abs error 3.2")

    result = Search(_task(tmp_path), ScriptedProposer(), Failing(), Journal(tmp_path), SearchOptions(steps=5)).run()
    assert result.stopped == "original-fails" and not result.improved


def test_unified_diff_marks_a_missing_final_newline() -> None:
    diff = unified_diff("a\nb", "a\nc", "x.py")
    assert diff.endswith("\\ No newline at end of file\n")


# -- the offline proposer on the CPU interpreter (real workers) -----------------------------


@pytest.mark.compiler
@pytest.mark.parametrize(("fixture", "kernel"), [("slow_add.py", "add_kernel"), ("slow_softmax.py", "softmax_kernel")])
def test_the_offline_search_finds_a_faster_verified_variant(tmp_path: Path, fixture: str, kernel: str) -> None:
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    from tritonsmith.search.setup import SearchRequest, open_search

    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / fixture
    path.write_text((FIXTURES / fixture).read_text())
    request = SearchRequest(path=path, kernel=kernel, device="interpreter", proposer="offline", steps=4, seed=0)
    with open_search(request) as opened:
        result = opened.search.run()
    assert result.improved, [(n.id, n.evaluation) for n in result.tree.evaluated()]
    assert result.speedup is not None and result.speedup > 1.5
    assert result.best is not None and result.best.evaluation is not None
    assert result.best.evaluation.outcome is Outcome.CORRECT
    assert "verified · interpreter" in result.best.evaluation.message
    assert "BLOCK_SIZE=16" not in result.best.source


@pytest.mark.parametrize(("mode", "kind"), [("refine", StepKind.REFINE), ("regenerate", StepKind.REGENERATE)])
def test_a_forced_mode_takes_only_that_step_kind(tmp_path: Path, mode: str, kind: StepKind) -> None:
    result = Search(_task(tmp_path), ScriptedProposer(), BlockEvaluator(), Journal(tmp_path),
                    SearchOptions(steps=8, mode=mode)).run()
    steps = [n.kind for n in result.tree.evaluated() if n.kind is not StepKind.ROOT]
    assert len(steps) == 8 and set(steps) == {kind}


def test_cancelling_while_the_original_is_evaluated_is_a_cancel_not_a_failure(tmp_path: Path) -> None:
    cancel = threading.Event()

    class Interrupted(BlockEvaluator):
        def evaluate(self, source: str) -> Evaluation:
            cancel.set()  # the user cancels while the original runs; its job is cut short
            return Evaluation(Outcome.NOT_COMPILED, message="compile job cancelled")

    journal = Journal(tmp_path)
    result = Search(_task(tmp_path), ScriptedProposer(), Interrupted(), journal, SearchOptions(steps=5),
                    cancel=cancel).run()
    assert result.stopped == "cancelled"
    assert [s.status for s in journal.searches()] == ["cancelled"]


def test_active_learned_rules_join_the_prompts_pitfalls(tmp_path: Path) -> None:
    """AdaExplore's memory in force: an active learned rule at the threshold is a pitfall; a
    pending one, or one below the threshold, is not."""
    from tritonsmith.rules import Rule, Severity
    from tritonsmith.search.setup import pitfalls
    from tritonsmith.settings import Settings
    from tritonsmith.state.learned import update_learned
    from tritonsmith.workspace import Workspace

    def learned(code: str, count: int, status: str) -> Rule:
        return Rule(code=code, name=f"learned-{code.lower()}", title="t", statement=f"You cannot do {code}.",
                    severity=Severity.WARNING, category="CompilationError", count=count, status=status,
                    kernels=("a", "b"), failures=(1, 2, 3))

    (tmp_path / "pyproject.toml").write_text("")
    update_learned(tmp_path, lambda rules: [learned("TSL001", 5, "active"), learned("TSL002", 9, "pending"),
                                            learned("TSL003", 2, "active"), learned("TSL004", 3, "active")])
    assert pitfalls(Workspace(tmp_path, Settings()), None) == ("You cannot do TSL001.", "You cannot do TSL004.")


class UnrollingProposer:
    """Regenerates by unrolling a one-trip loop and adding a hint the interpreter cannot see:
    the case where putting the old lines back (the loop's body at its old depth) keeps the
    canonical form and breaks the indentation."""

    name = "unrolling"
    cost_usd = 0.0

    def refine(self, context: StepContext) -> tuple[str, list[Edit]]:
        raise ProposalError("no refinement")

    def regenerate(self, context: StepContext) -> str:
        return UNROLLED


LOOPED = "def kernel(p):\n    BLOCK = 16\n    z = load(p)\n    for i in range(1):\n        x = i + z\n        y = x * 2\n"
UNROLLED = "def kernel(p):\n    BLOCK = 32\n    z = load(p, eviction_policy='evict_first')\n    i = 0\n    x = i + z\n    y = x * 2\n"


def test_what_is_offered_is_exactly_what_was_evaluated(tmp_path: Path) -> None:
    """Issue 34: the search trims what the measure cannot see before it evaluates, so the
    verified node, the confirmed text, the patched file and the diff are one text, and it
    parses; the text evaluated is never trimmed afterwards."""
    import ast

    path = tmp_path / "k.py"
    path.write_text(LOOPED)
    task = Task(path=str(path), kernel="kernel", source=LOOPED, spec="harness:k", device="interpreter")
    evaluator = BlockEvaluator()
    result = Search(task, UnrollingProposer(), evaluator, Journal(tmp_path), SearchOptions(steps=2, seed=0)).run()
    assert result.improved and result.best is not None
    assert result.patched == result.best.source and result.best.source in evaluator.sources
    assert evaluator.confirmed == [(LOOPED, result.patched)]
    ast.parse(result.patched)
    assert "eviction_policy" not in result.patched  # the hint the interpreter cannot see went, before the evaluation
    assert "\n    x = i + z\n" in result.patched  # the unrolled body stays at its new depth
    import subprocess

    (tmp_path / "p.patch").write_text(result.diff)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "apply", "p.patch"], cwd=tmp_path, check=True)
    assert path.read_text() == result.patched


class ListProposer:
    """Regenerates the given sources in turn (then the last again)."""

    name = "list"
    cost_usd = 0.0

    def __init__(self, sources: list[str]) -> None:
        self.sources = list(sources)

    def refine(self, context: StepContext) -> tuple[str, list[Edit]]:
        return self.regenerate(context), []

    def regenerate(self, context: StepContext) -> str:
        return self.sources.pop(0) if len(self.sources) > 1 else self.sources[0]


def test_a_search_stops_at_a_plateau_and_says_so(tmp_path: Path) -> None:
    """Issue 34: the default budget ran 5 minutes for a winner found at step 2. With patience
    3 the search stops once 3 candidates in a row found nothing faster than the best."""
    sources = [f"def kernel():\n    BLOCK = 64\n    pad = {i}\n" for i in range(20)]
    sources[1] = "def kernel():\n    BLOCK = 128\n"  # the winner, at step 2
    reports: list = []
    search = Search(_task(tmp_path), ListProposer(sources), BlockEvaluator(), Journal(tmp_path),
                    SearchOptions(steps=20, patience=3, seed=0), progress=reports.append)
    result = search.run()
    assert result.stopped == "plateau" and result.tree.evaluated_count - 1 == 5  # 2 steps, then 3 without better
    assert result.improved and "BLOCK = 128" in result.patched
    # Progress says how long it has run and how long it may still run (the plateau bounds it).
    steps = [r for r in reports if not r.last.startswith("confirming")]
    assert all(r.elapsed_s >= 0 for r in reports) and steps[-1].left_s is not None
    assert " elapsed" in steps[-1].message("interpreter") and "left" in steps[-1].message("interpreter")
    unbounded = Search(_task(tmp_path), ListProposer(sources), BlockEvaluator(), Journal(tmp_path),
                       SearchOptions(steps=8, patience=0, seed=0)).run()
    assert unbounded.stopped == "budget" and unbounded.tree.evaluated_count - 1 == 8


def test_tied_candidates_are_one_result_the_smallest_change_standing_for_them(tmp_path: Path) -> None:
    """Candidates whose screening figures tie are one result: the one changing the fewest
    lines is confirmed and offered, the others are counted as tied, not confirmed again."""
    busy = "def kernel():\n    BLOCK = 64\n    extra = 1\n    more = 2\n"
    plain = "def kernel():\n    BLOCK = 64\n"
    slower = "def kernel():\n    BLOCK = 32\n"
    evaluator = BlockEvaluator()
    result = Search(_task(tmp_path), ListProposer([busy, plain, slower]), evaluator, Journal(tmp_path),
                    SearchOptions(steps=3, seed=0, confirmations=2)).run()
    assert result.best is not None and result.best.source == plain == result.patched
    busy_node = next(n for n in result.tree.evaluated() if n.source == busy)
    assert result.tied == {result.best.id: [busy_node.id]}
    assert [c for c, _ in evaluator.confirmed].count(ORIGINAL) == 1 and evaluator.confirmed[0][1] == plain
    assert [n.id for n in result.leaders()] [:2] == [result.best.id, next(
        n.id for n in result.tree.evaluated() if n.source == slower)]
