"""How `tritonsmith bench` counts (issue 12, item 8): a task is correct only when a *new*
verified candidate exists (the unmodified start, or the start up to hints that cannot change the
time, does not count; whether the start verified is reported apart), and a speedup above the
start counts only when confirmed. The search runs for real (`engine.Search`, the offline or a
scripted proposer); its evaluator is made up, so this takes a second."""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tritonsmith.benchmark import runner
from tritonsmith.benchmark.report import write_report
from tritonsmith.evaluator.stats import Confirmation, RoundPolicy, confirm
from tritonsmith.search.engine import Search, SearchOptions
from tritonsmith.search.journal import Journal
from tritonsmith.search.model import Edit, Evaluation, Outcome, Proposer, StepContext, Task
from tritonsmith.search.proposers.offline import OfflineProposer

FIXTURES = Path(__file__).resolve().parents[1] / "search" / "fixtures"


class Evaluator:
    """Screening and confirmation with 3% noise; `kernel_ms(source)` is the true time."""

    def __init__(self, kernel_ms: Callable[[str], float]) -> None:
        self.kernel_ms = kernel_ms
        self.rng = random.Random(0)
        self.baseline_ms: float | None = None

    def evaluate(self, source: str) -> Evaluation:
        measured = self.kernel_ms(source) * self.rng.uniform(0.97, 1.03)
        if self.baseline_ms is None:
            self.baseline_ms = measured
        speedup = self.baseline_ms / measured
        return Evaluation(Outcome.CORRECT, speedup=speedup, spread=(speedup, speedup), time_ms=measured)

    def confirm(self, original: str, candidate: str, progress: Any = None) -> Confirmation:
        return confirm(lambda r, order: {side: self.kernel_ms(candidate if side == "candidate" else original)
                                         * self.rng.uniform(0.97, 1.03) for side in order}, RoundPolicy())


class Appender:
    """Appends a constant nothing reads (time-neutral); the third one marks the file FAST."""

    name = "appender"
    cost_usd = 0.0

    def __init__(self, fast: bool) -> None:
        self.count, self.fast = 0, fast

    def _next(self, base: str) -> str:
        self.count += 1
        return base + f"\nV{self.count} = {self.count}\n" + ("FAST = 1\n" if self.fast and self.count == 3 else "")

    def refine(self, context: StepContext) -> tuple[str, list[Edit]]:
        new = self._next(context.chain[-1][0])
        return new, [Edit(context.chain[-1][0], new)]

    def regenerate(self, context: StepContext) -> str:
        return self._next(context.task.source)


def _fake_open_search(proposer: Callable[[], Proposer], evaluator: Callable[[], Evaluator]) -> Any:
    @contextmanager
    def open_search(request: Any, cancel: Any = None) -> Iterator[Any]:
        source = request.path.read_text()
        task = Task(path=str(request.path), kernel=request.kernel, source=source, spec="harness:add",
                    device=request.device)
        journal = Journal(request.path.parent)

        class Opened:
            search = Search(task, proposer(), evaluator(), journal, SearchOptions(steps=request.steps, seed=0))

        yield Opened()
        journal.close()

    return open_search


@pytest.mark.parametrize(("case", "correct", "claimed"), [("hints", False, False), ("neutral", True, False),
                                                           ("faster", True, True)])
def test_only_a_new_verified_candidate_counts_and_only_a_confirmed_speedup_is_above_the_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, correct: bool, claimed: bool) -> None:
    problems = tmp_path / "problems"
    problems.mkdir()
    shutil.copy2(FIXTURES / "hints_only_add.py", problems / "hints_only_add.py")
    proposers: dict[str, Callable[[], Proposer]] = {
        "hints": lambda: OfflineProposer(random.Random(0)),
        "neutral": lambda: Appender(fast=False),
        "faster": lambda: Appender(fast=True),
    }
    monkeypatch.setattr(runner, "open_search", _fake_open_search(
        proposers[case], lambda: Evaluator(lambda s: 2.0 if "FAST = 1" in s else 10.0)))
    suite = runner.run_suite(problems, steps=6, device="interpreter")
    [problem] = suite.problems
    assert problem.start_ok and problem.start_speedup == 1.0 and not problem.error
    assert problem.correct is correct and problem.claimed is claimed and problem.candidates == 6
    if case == "hints":  # every candidate was the start up to hints: nothing new, not correct
        assert problem.new_verified == 0 and problem.set_aside > 0 and problem.speedup is None
        assert suite.metrics.accuracy == 0.0 and problem.result.startswith("no improvement (no new verified")
    elif case == "neutral":  # new and verified, but no faster: counts as the start's speed, not above
        assert problem.new_verified == 6 and problem.speedup is not None and problem.speedup <= 1.0
        assert suite.metrics.accuracy == 1.0 and suite.metrics.fast_1_2 == 0.0
        assert problem.result.startswith("no improvement (")
    else:
        assert problem.speedup is not None and 4.0 < problem.speedup < 6.0 and problem.confirmation is not None
        assert problem.confirmation["claimed"] and problem.result.startswith(f"{problem.speedup:.2f}× (95% CI ")
        assert suite.metrics.fast_2 == 1.0
    assert all(s >= 0.0 for s in problem.steps) and len(problem.steps) == 6
    files = write_report(suite, tmp_path / "report")
    markdown = files["markdown"].read_text()
    assert "| start verified |" in markdown and "1/1" in markdown and problem.result in markdown
