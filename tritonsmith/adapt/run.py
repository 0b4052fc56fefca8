"""`tritonsmith adapt run`: the adapt stage (AdaExplore's section 2, with the self-improvement
paper's experience memory): search a set of tasks one after another with the memory updated
after each, and report what was learned and whether first candidates got better.

    tasks (a folder, or synthesised: synthesize.py)
      └─ for each task, until --max-tasks / --time-limit / the spending cap:
           copy it into the run's folder in the workspace
           search it (`search.setup.open_search`, --steps candidates): the failure log records
             every failure, the experience memory every verified kernel, and the prompts get
             the workspace's pitfalls and demonstrations as they stand now
           offline induction over the failure log (`induce.induce`): learned rules
      └─ report: tasks, rules learned, pass@1 and fast_1 before and after

**The memory** is the workspace's `.tritonsmith/`: the failure log, the learned rule pack
(`rules.toml`) and the experience memory, all in `state.db` and `rules.toml`. Searches read it
when they open (pitfalls, demonstrations) and write to it as they go; induction runs after each
task. A later `tritonsmith optimize` (or the editor) in that workspace uses what was learned.

**Metrics** (per task, from its search tree; `search_outcome`):

- *first-candidate correctness*: node 1, the first candidate the proposer produced (node 0 is
  the starting kernel), verified correct. A step that produced no candidate (a malformed answer,
  a guardian drop) counts as not correct. **pass@1** = the share of tasks whose node 1 is
  correct.
- *fast*: some correct candidate beats the starting kernel by more than the timing spread (its
  lowest per-round speedup above both 1 and the start's highest; `SearchResult.improved`'s rule).
  **fast_1** = the share of tasks that are fast (AdaExplore's Fast@1: faster than the baseline).
- Tasks whose starting kernel fails verification are not searched and count in neither.

**Before and after** (`--compare`):

- `halves` (default, no extra cost): *before* = the first ⌊n/2⌋ tasks of the run, searched while
  the memory was still young; *after* = the remaining tasks, searched with everything the first
  half taught. Different tasks on each side, so a difference mixes memory and task difficulty.
- `baseline`: each task is first searched in a fresh, empty workspace of its own (no learned
  rules, no experience, the same steps and seed), then with the memory; *before* = the
  baseline searches, *after* = the memory searches, over the same tasks. Twice the cost.

With the offline proposer the prompts are not read, so the memory cannot change its first
candidates: the comparison means something with an LLM proposer (bench/adapt_ablation.py
measures it on held-out tasks).

Nothing here imports torch or triton: searches evaluate in the evaluator's workers.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..analysis import Document, index_module
from ..errors import TritonsmithError
from ..state.learned import load_learned
from .defaults import COMPARE_MODES, DEFAULT_STEPS
from .induce import Thresholds, induce

__all__ = [
    "COMPARE_MODES",
    "DEFAULT_STEPS",
    "Metrics",
    "RunOptions",
    "RunReport",
    "SearchOutcome",
    "TaskRecord",
    "adapt_run",
    "default_tasks_folder",
    "first_kernel",
    "metrics",
    "search_task",
    "task_files",
    "search_outcome",
    "workspace",
]



# -- metrics --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchOutcome:
    """What one search says about first-candidate correctness and speed."""

    searched: bool  # the starting kernel verified, so the search ran
    first: str | None  # node 1's outcome ("correct", "wrong", "not_compiled"), None without one
    first_correct: bool
    fast: bool  # a correct candidate beats the start by more than the timing spread
    best_speedup: float | None
    steps: int  # candidates evaluated, the start excluded


def search_outcome(result: Any) -> SearchOutcome:
    """The outcome of a `search.engine.SearchResult` (or anything with `.tree` and `.stopped`),
    computed from its tree: node 1 for pass@1, every correct node for fast."""
    from ..search.model import Outcome, StepKind

    nodes = [n for n in result.tree.evaluated() if n.evaluation is not None]
    root = next((n for n in nodes if n.kind is StepKind.ROOT), None)
    searched = (root is not None and root.evaluation is not None and root.evaluation.outcome is Outcome.CORRECT
                and result.stopped != "original-fails")
    first = next((n for n in nodes if n.id == 1), None)
    first_outcome = first.evaluation.outcome.value if first is not None and first.evaluation is not None else None
    root_high = 1.0
    if root is not None and root.evaluation is not None and root.evaluation.spread:
        root_high = root.evaluation.spread[1]
    fast, best = False, None
    for node in nodes:
        evaluation = node.evaluation
        if node.kind is StepKind.ROOT or evaluation.outcome is not Outcome.CORRECT or evaluation.speedup is None:
            continue
        best = evaluation.speedup if best is None else max(best, evaluation.speedup)
        low = evaluation.spread[0] if evaluation.spread else evaluation.speedup
        if low > max(1.0, root_high) and (root is None or node.source != root.source):
            fast = True
    steps = sum(1 for n in nodes if n.kind is not StepKind.ROOT)
    return SearchOutcome(searched=searched, first=first_outcome, first_correct=first_outcome == "correct",
                       fast=fast, best_speedup=best, steps=steps)


@dataclass(frozen=True)
class Metrics:
    """pass@1 and fast_1 over a set of searched tasks."""

    tasks: int
    first_correct: int
    fast: int

    @property
    def pass_at_1(self) -> float | None:
        return self.first_correct / self.tasks if self.tasks else None

    @property
    def fast_1(self) -> float | None:
        return self.fast / self.tasks if self.tasks else None

    def to_json(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "first_correct": self.first_correct, "fast": self.fast,
                "pass_at_1": self.pass_at_1, "fast_1": self.fast_1}

    def text(self) -> str:
        if not self.tasks:
            return "no tasks"
        return (f"pass@1 {_pct(self.pass_at_1)} ({self.first_correct}/{self.tasks}), "
                f"fast_1 {_pct(self.fast_1)} ({self.fast}/{self.tasks})")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def metrics(outcomes: Sequence[SearchOutcome | TaskRecord]) -> Metrics:
    """pass@1 and fast_1 over the searched tasks among `outcomes`."""
    searched = [o for o in outcomes if o.searched]
    return Metrics(tasks=len(searched), first_correct=sum(o.first_correct for o in searched),
                   fast=sum(o.fast for o in searched))


# -- the run --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunOptions:
    """What `tritonsmith adapt run` was asked for.

    Attributes:
        tasks: a folder of KernelBench-format tasks (each one file with `Model`, `get_inputs`,
            `get_init_inputs` and a Triton `ModelNew`); with `synthesize`, the seed problems.
        workspace: the workspace whose memory (`.tritonsmith/`) learns; the run's copies and
            synthesised tasks go under `.tritonsmith/adapt/<run id>/`.
        steps: candidates per search (AdaExplore's adapt run: 25).
        device: "interpreter" (CPU) or "gpu".
        proposer: auto | offline | anthropic | openai (as `tritonsmith optimize`).
        synthesize: ask the LLM for this many tasks instead of searching `tasks` themselves.
        max_tasks, time_limit_s: the run's budget (checked before each search; a search also
            gets the time left as its own limit).
        spending_cap_usd: for the whole run (synthesis and searches together).
        compare: "halves" or "baseline" (module docstring).
        induce: offline induction after each task (the memory updates on); off, the failure log
            and experience memory still record, but no rule is learned.
    """

    tasks: Path | None
    workspace: Path
    steps: int = DEFAULT_STEPS
    device: str = "interpreter"
    proposer: str = "auto"
    allow_upload: bool = False
    model: str | None = None
    base_url: str | None = None
    spending_cap_usd: float = 10.0
    synthesize: int = 0
    max_tasks: int | None = None
    time_limit_s: float | None = None
    compare: str = "halves"
    seed: int = 0
    concurrency: int = 1
    induce: bool = True
    thresholds: Thresholds = field(default_factory=Thresholds)


@dataclass
class TaskRecord:
    """One search of the run."""

    name: str  # the task file's name
    path: str  # the copy that was searched
    kernel: str
    memory: bool  # searched in the adapt workspace (False: a baseline search, empty workspace)
    stopped: str
    searched: bool
    first: str | None
    first_correct: bool
    fast: bool
    best_speedup: float | None
    steps: int
    seconds: float
    cost_usd: float
    search_id: str
    pitfalls: int = 0  # rule statements its prompts got
    demonstrations: int = 0  # verified kernels of other tasks its prompts got
    error: str = ""  # why it could not run, when it could not

    def line(self) -> str:
        if self.error:
            return f"{self.name}: not searched ({self.error})"
        if not self.searched:
            return f"{self.name}: the starting kernel does not verify ({self.stopped}); not searched"
        best = f"best {self.best_speedup:.2f}×" if self.best_speedup is not None else "no correct candidate"
        memory = f"; prompts had {self.pitfalls} pitfalls, {self.demonstrations} demonstrations" if self.memory else ""
        return (f"{self.name} ({self.kernel}): {self.steps} candidates, first {self.first or 'none'}, {best}"
                f"{', faster than the start' if self.fast else ''} [{self.stopped}, {self.seconds:.0f} s"
                f"{f', ${self.cost_usd:.2f}' if self.cost_usd else ''}]{memory}")


@dataclass
class RunReport:
    """What an adapt run did and learned."""

    run_id: str
    workspace: str
    options: dict[str, Any]
    tasks: list[TaskRecord] = field(default_factory=list)  # the searches with the memory, in order
    baseline: list[TaskRecord] = field(default_factory=list)  # --compare baseline: the fresh searches
    rules: list[dict[str, Any]] = field(default_factory=list)
    synthesized: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = "done"  # "done", "max-tasks", "time", "spending cap"
    seconds: float = 0.0
    cost_usd: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def compare(self) -> str:
        return str(self.options.get("compare", "halves"))

    def before_after(self) -> tuple[Metrics, Metrics]:
        """(before, after) as `--compare` defines them (module docstring)."""
        if self.compare == "baseline":
            return metrics(self.baseline), metrics(self.tasks)
        searched = [t for t in self.tasks if t.searched]
        half = len(searched) // 2
        return metrics(searched[:half]), metrics(searched[half:])

    def to_json(self) -> dict[str, Any]:
        before, after = self.before_after()
        return {
            "run_id": self.run_id, "workspace": self.workspace, "options": self.options, "stopped": self.stopped,
            "seconds": round(self.seconds, 1), "cost_usd": round(self.cost_usd, 4),
            "tasks_run": len(self.tasks), "tasks": [asdict(t) for t in self.tasks],
            "baseline": [asdict(t) for t in self.baseline], "rules": self.rules, "synthesized": self.synthesized,
            "compare": self.compare, "before": before.to_json(), "after": after.to_json(),
            "overall": metrics(self.tasks).to_json(), "notes": self.notes,
        }

    def text(self) -> str:
        before, after = self.before_after()
        lines = [f"adapt run {self.run_id} in {self.workspace}: {len(self.tasks)} task"
                 f"{'s' if len(self.tasks) != 1 else ''} ({self.stopped}, {self.seconds:.0f} s"
                 f"{f', ${self.cost_usd:.2f}' if self.cost_usd else ''})"]
        if self.synthesized:
            kept = sum(1 for s in self.synthesized if s["kept"])
            lines.append(f"synthesised {kept} of {len(self.synthesized)} tasks:")
            lines.extend(f"  {s['index']}: " + (f"kept {Path(s['path']).name}" if s["kept"]
                                                else f"dropped ({s['stage']}: {s['reason']})")
                         for s in self.synthesized)
        if self.baseline:
            lines.append("baseline (a fresh workspace each, no memory):")
            lines.extend("  " + r.line() for r in self.baseline)
        lines.append("with the memory:" if self.baseline else "tasks:")
        lines.extend("  " + r.line() for r in self.tasks)
        if self.rules:
            lines.append("rules learned or updated:")
            for rule in self.rules:
                state = rule["status"] + (f" (held: {rule['hold']})" if rule.get("hold") else "")
                lines.append(f"  {rule['code']} {state}: {rule['count']} failures in {rule['kernels']} kernels "
                             f"(+{rule['added']} this run)\n    {rule['statement']}")
        else:
            lines.append("rules learned: none (no failure recurred often enough)")
        how = ("baseline = the same tasks in a fresh workspace" if self.compare == "baseline"
               else "before = the first half of the tasks, after = the second")
        lines.append(f"before: {before.text()}")
        lines.append(f"after:  {after.text()}   ({how}; pass@1 = node 1 correct, "
                     "fast_1 = a correct candidate faster than the start)")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)


def default_tasks_folder(cwd: Path | None = None) -> Path | None:
    """bench/problems/ of the checkout the command runs in (or the one this package is
    installed from, in development), else None."""
    from ..settings import find_workspace_root

    here = find_workspace_root(cwd or Path.cwd())
    for folder in (here / "bench" / "problems", Path(__file__).resolve().parents[2] / "bench" / "problems"):
        if folder.is_dir() and any(folder.glob("*.py")):
            return folder
    return None


def first_kernel(source: str) -> str | None:
    """The kernel a task's search optimises: its first `@triton.jit` kernel."""
    kernels = index_module(Document(source).root).kernels
    return kernels[0].name if kernels else None


def task_files(folder: Path) -> list[Path]:
    """The task files of a folder: its *.py files that define `ModelNew`, sorted by name."""
    return [p for p in sorted(folder.glob("*.py"))
            if not p.name.startswith("_") and "class ModelNew" in p.read_text(encoding="utf-8", errors="replace")]


def workspace(folder: Path) -> Path:
    """`folder`, made a workspace (a `.tritonsmith/` marks it) so searches of files below it
    find it and not a workspace further up."""
    folder = folder.resolve()
    (folder / ".tritonsmith").mkdir(parents=True, exist_ok=True)
    return folder


class _Budget:
    def __init__(self, options: RunOptions) -> None:
        self.started = time.monotonic()
        self.time_limit_s = options.time_limit_s
        self.cap = options.spending_cap_usd
        self.spent = 0.0

    def time_left(self) -> float | None:
        if self.time_limit_s is None:
            return None
        return self.time_limit_s - (time.monotonic() - self.started)

    def exhausted(self) -> str | None:
        left = self.time_left()
        if left is not None and left <= 0:
            return "time"
        if self.cap is not None and self.spent >= self.cap:
            return "spending cap"
        return None


def _search(options: RunOptions, path: Path, kernel: str, *, memory: bool, budget: _Budget,
            proposer_factory: Callable[[], Any] | None) -> TaskRecord:
    from ..search.setup import SearchRequest, open_search

    request = SearchRequest(path=path, kernel=kernel, device=options.device, proposer=options.proposer,
                            steps=options.steps, wall_time_s=budget.time_left(), concurrency=options.concurrency,
                            seed=options.seed, allow_upload=options.allow_upload, model=options.model,
                            base_url=options.base_url, spending_cap_usd=max(0.0, budget.cap - budget.spent))
    began = time.monotonic()
    with open_search(request) as opened:
        if proposer_factory is not None:  # tests and the recorded ablation: a proposer made here
            opened.search.proposer = proposer_factory()
        result = opened.search.run()
        search_options = opened.search.options
    outcome = search_outcome(result)
    budget.spent += result.cost_usd
    return TaskRecord(
        name=path.name, path=str(path), kernel=kernel, memory=memory, stopped=result.stopped,
        searched=outcome.searched, first=outcome.first, first_correct=outcome.first_correct, fast=outcome.fast,
        best_speedup=outcome.best_speedup, steps=outcome.steps, seconds=round(time.monotonic() - began, 1),
        cost_usd=round(result.cost_usd, 4), search_id=result.search_id, pitfalls=len(search_options.pitfalls),
        demonstrations=len(search_options.demonstrations))


def adapt_run(
    options: RunOptions,
    *,
    progress: Callable[[str], None] | None = None,
    synthesis_model: Any = None,
    proposer_factory: Callable[[], Any] | None = None,
) -> RunReport:
    """Run the adapt stage as `options` ask; see the module docstring.

    Args:
        progress: gets one line per event (a task started or finished, a rule learned).
        synthesis_model: the model for `synthesize` (default: Claude, `anthropic_synthesis_model`).
        proposer_factory: makes each search's proposer instead of `options.proposer` (tests).

    Raises:
        ValueError: the options ask for something impossible (no tasks, an unknown mode).
        SetupError: a search cannot start (no key for the proposer, no consent).
    """
    if options.compare not in COMPARE_MODES:
        raise ValueError(f"unknown --compare {options.compare!r} ({', '.join(COMPARE_MODES)})")
    if options.steps < 1:
        raise ValueError("--steps must be at least 1")
    say = progress or (lambda line: None)
    budget = _Budget(options)
    root = workspace(options.workspace)
    run_id = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S") + f"-{random.randrange(16**4):04x}"
    run_dir = root / ".tritonsmith" / "adapt" / run_id
    report = RunReport(run_id=run_id, workspace=str(root), options=_options_json(options))

    sources: list[Path]
    if options.synthesize:
        if options.tasks is None:
            raise ValueError("--synthesize needs seed problems: a tasks folder")
        from .synthesize import anthropic_synthesis_model, synthesize

        model = synthesis_model or anthropic_synthesis_model(model=options.model, spending_cap_usd=options.spending_cap_usd)
        made = synthesize(options.synthesize, model=model, seed_folder=options.tasks, out=run_dir / "synthesized",
                          rng=random.Random(options.seed), should_stop=lambda: budget.exhausted() is not None,
                          progress=say)
        budget.spent += float(getattr(model, "cost_usd", 0.0) or 0.0)
        report.synthesized = [item.to_json() for item in made]
        sources = [Path(item.path) for item in made if item.kept and item.path]
    else:
        if options.tasks is None or not options.tasks.is_dir():
            raise ValueError(f"{options.tasks}: not a folder of tasks")
        sources = task_files(options.tasks)
    if not sources:
        report.notes.append("no task to search" + (" (no synthesised task was kept)" if options.synthesize else ""))

    learned: dict[str, dict[str, Any]] = {}
    tasks_dir = run_dir / "tasks"
    for number, source_path in enumerate(sources, 1):
        if options.max_tasks is not None and len(report.tasks) >= options.max_tasks:
            report.stopped = "max-tasks"
            break
        if (why := budget.exhausted()) is not None:
            report.stopped = why
            break
        source = source_path.read_text(encoding="utf-8")
        kernel = first_kernel(source)
        name = source_path.name
        if kernel is None:
            report.notes.append(f"{name}: no @triton.jit kernel to optimise; skipped")
            continue
        say(f"[{number}/{len(sources)}] {name}: searching {kernel} ({options.steps} steps)")
        if options.compare == "baseline":
            fresh = workspace(run_dir / "baseline" / f"{number:02d}")
            copy = fresh / name
            shutil.copyfile(source_path, copy)
            report.baseline.append(search_task(options, copy, kernel=kernel, memory=False, budget=budget,
                                               proposer_factory=proposer_factory))
            say("  baseline: " + report.baseline[-1].line())
        tasks_dir.mkdir(parents=True, exist_ok=True)
        copy = tasks_dir / f"{number:02d}_{name}"
        shutil.copyfile(source_path, copy)
        record = search_task(options, copy, kernel=kernel, budget=budget, proposer_factory=proposer_factory)
        record.name = name
        report.tasks.append(record)
        say("  " + record.line())
        if options.induce:
            try:
                for item in induce(root, thresholds=options.thresholds):
                    entry = learned.setdefault(item.rule.code, {"new": item.new, "added": 0})
                    entry["added"] += item.added
                    say(f"  learned: {item.rule.code} ({'new' if item.new else 'updated'}, {item.rule.status}) "
                        f"{item.rule.statement}")
            except TritonsmithError as error:  # a malformed workspace pack: report, keep searching
                report.notes.append(f"induction after {name}: {error.user_message}")
    report.rules = _rules(root, learned)
    report.seconds = time.monotonic() - budget.started
    report.cost_usd = budget.spent
    return report


def search_task(options: RunOptions, path: Path, *, kernel: str | None = None, memory: bool = True,
                budget: _Budget | None = None, proposer_factory: Callable[[], Any] | None = None) -> TaskRecord:
    """Search one task file where it lies (its workspace's memory is the one read and written),
    as `options` ask, and sum it up; a failure to evaluate (a worker that cannot start) is
    recorded in the record, not raised. `kernel`: default its first kernel.

    Raises:
        SetupError: the search cannot start (no key, no consent, no kernel).
    """
    from ..search.setup import SetupError

    kernel = kernel or first_kernel(path.read_text(encoding="utf-8"))
    if kernel is None:
        raise SetupError(f"{path}: no @triton.jit kernel to optimise")
    budget = budget or _Budget(options)
    try:
        return _search(options, path, kernel, memory=memory, budget=budget, proposer_factory=proposer_factory)
    except SetupError:
        raise
    except TritonsmithError as error:
        return TaskRecord(name=path.name, path=str(path), kernel=kernel, memory=memory, stopped="error",
                          searched=False, first=None, first_correct=False, fast=False, best_speedup=None,
                          steps=0, seconds=0.0, cost_usd=0.0, search_id="", error=error.user_message)


def _rules(root: Path, learned: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The learned or updated rules of this run, as they stand in the workspace pack now."""
    out: list[dict[str, Any]] = []
    try:
        rules = load_learned(root)
    except TritonsmithError:
        return out
    for rule in rules:
        if rule.code not in learned:
            continue
        out.append({"code": rule.code, "name": rule.name, "statement": rule.statement, "status": rule.status,
                    "hold": rule.hold, "count": rule.count, "kernels": len(rule.kernels),
                    "new": learned[rule.code]["new"], "added": learned[rule.code]["added"],
                    "signatures": list(rule.signatures)})
    return out


def _options_json(options: RunOptions) -> dict[str, Any]:
    data = asdict(options)
    data["tasks"] = str(options.tasks) if options.tasks else None
    data["workspace"] = str(options.workspace)
    data["thresholds"] = asdict(options.thresholds)
    return data
