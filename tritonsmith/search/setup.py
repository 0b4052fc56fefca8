"""Putting a search together from what a user asked for: the file and kernel, the spec it is
verified against, the proposer, the evaluator, the guardian and the journal. Shared by
`tritonsmith optimize` and the language server's "Optimize this kernel".

Nothing here imports torch or triton; LLM clients are imported only when asked for.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..analysis import Document, index_module
from ..errors import TritonsmithError
from ..evaluator.specs import HarnessSpec, Spec, detect_specs
from ..settings import Settings, find_workspace_root
from ..state import ExperienceMemory, FailureLog
from ..workspace import Workspace
from .engine import Progress, Search, SearchOptions
from .evaluate import CandidateEvaluator
from .guardian import RuleGuardian
from .journal import Journal
from .model import Proposer, Task
from .tree import TreeSettings

if TYPE_CHECKING:  # ray is imported only when a cluster address is given
    from .distributed import RayEvaluator

__all__ = ["PITFALL_THRESHOLD", "SearchRequest", "SetupError", "open_search", "pick_spec", "pitfalls"]

PITFALL_THRESHOLD = 3
"""A rule joins the prompts' "common pitfalls" once it has been hit this often (AdaExplore's
`knowledge_1_threshold`)."""


class SetupError(TritonsmithError):
    """The search cannot start: the message says why and what to do."""


@dataclass(frozen=True)
class SearchRequest:
    """What the user asked for (command-line flags, or the code action and settings)."""

    path: Path
    kernel: str
    device: str  # "gpu" | "interpreter"
    proposer: str = "auto"  # auto | offline | anthropic | openai
    steps: int = 100
    patience: int | None = None  # stop after this many candidates in a row find nothing faster (SearchOptions)
    wall_time_s: float | None = None
    concurrency: int = 1
    mode: str = "auto"  # auto | refine | regenerate
    seed: int = 0
    allow_upload: bool = False  # the user consented to sending the kernel to a hosted model
    model: str | None = None
    base_url: str | None = None
    spending_cap_usd: float | None = 10.0
    target: str = "sm_90"
    objective: str = "auto"  # auto | predicted | interpreter: what a search without a GPU ranks by
    source: str | None = None  # the buffer's text, when it differs from the file on disk
    import_paths: tuple[Path, ...] = ()  # folders the workers import the file's own modules from (importPaths)
    # The verification and timing protocol (tritonsmith bench can match a published one).
    trials: int = 3
    tolerances: dict[str, float] | None = None
    rounds: int | None = None
    runs: int | None = None
    # A Ray cluster: evaluations run on its actors, one per GPU (search/distributed.py); the
    # concurrency is then the number of actors unless set above 1.
    ray_address: str | None = None


def pick_spec(path: Path, source: str, kernel: str) -> Spec:
    """The spec whose candidate launches `kernel`: its KernelBench problem, or the harness of a
    launcher that launches it."""
    index = index_module(Document(source).root)
    found = index.kernel(kernel)
    if found is None:
        names = ", ".join(k.name for k in index.kernels) or "none"
        raise SetupError(f"no @triton.jit kernel named {kernel} in {path} (kernels: {names})")
    specs = detect_specs(path, source)
    for spec in specs:
        if not isinstance(spec, HarnessSpec):
            return spec
        launcher = index.functions.get(spec.launcher)
        if launcher is not None and kernel.encode() in (launcher.text or b""):
            return spec
    if specs:
        return specs[0]
    raise SetupError(
        f"{path} has nothing to verify {kernel} against: add a harness next to its launcher "
        "(<launcher>_inputs and <launcher>_reference; the code action \"Create verification harness\" "
        "writes one; docs/harness.md) or make it a KernelBench problem"
    )


def pitfalls(workspace: Workspace, log: FailureLog | None, threshold: int = PITFALL_THRESHOLD) -> tuple[str, ...]:
    """Statements of the rules hit at least `threshold` times, most hit first: builtin rules by
    the failures their signatures matched, and the active learned (`TSL`) and imported (`TSA`)
    rules by the count they carry (AdaExplore's memory, now in force)."""
    counts: dict[str, int] = dict(log.rule_counts()) if log is not None else {}
    for rule in workspace.rules:
        if rule.code.startswith(("TSL", "TSA")) and rule.active:
            counts[rule.code] = max(counts.get(rule.code, 0), int(rule.count))
    ranked = sorted(((n, code) for code, n in counts.items() if n >= threshold), reverse=True)
    rules = [workspace.rules.get(code) for _, code in ranked]
    return tuple(rule.statement for rule in rules if rule is not None)


def _proposer(request: SearchRequest, rng: random.Random) -> tuple[Proposer, Callable[[str, list[str]], str] | None]:
    choice = request.proposer
    if choice == "auto":
        if os.environ.get("ANTHROPIC_API_KEY") and request.allow_upload:
            choice = "anthropic"
        elif request.base_url and request.allow_upload:
            choice = "openai"
        else:
            choice = "offline"
    if choice == "offline":
        from .proposers.offline import OfflineProposer

        return OfflineProposer(rng), None
    if not request.allow_upload:
        raise SetupError(f"the {choice} proposer sends your kernel to a model: consent with --allow-upload "
                         "(in the editor: the one-time question per workspace), or use --proposer offline")
    if choice == "anthropic":
        from .proposers.anthropic_proposer import AnthropicProposer

        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise SetupError("no Anthropic API key: set ANTHROPIC_API_KEY (in VS Code: Tritonsmith: Set API key)")
        if request.model:
            anthropic = AnthropicProposer(model=request.model, spending_cap_usd=request.spending_cap_usd)
        else:
            anthropic = AnthropicProposer(spending_cap_usd=request.spending_cap_usd)
        return anthropic, anthropic.repair
    if choice == "openai":
        from .proposers.openai_proposer import OpenAICompatibleProposer

        if not request.base_url or not request.model:
            raise SetupError("the openai proposer needs --base-url and --model (e.g. a local vLLM or Ollama server)")
        openai = OpenAICompatibleProposer(request.base_url, request.model, spending_cap_usd=request.spending_cap_usd)
        return openai, openai.repair
    raise SetupError(f"unknown proposer {choice!r} (auto, offline, anthropic, openai)")


class OpenSearch:
    """A ready search and what it holds open; close it (or use `with`) when done."""

    def __init__(self, search: Search, evaluator: CandidateEvaluator | RayEvaluator, journal: Journal, log: FailureLog,
                 memory: ExperienceMemory | None = None) -> None:
        self.search, self.evaluator, self.journal, self.log = search, evaluator, journal, log
        self.memory = memory

    def close(self) -> None:
        self.evaluator.close()
        self.journal.close()
        self.log.close()
        if self.memory is not None:
            self.memory.close()

    def __enter__(self) -> OpenSearch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_search(request: SearchRequest, *, resume: str | None = None,
                progress: Callable[[Progress], None] | None = None,
                cancel: threading.Event | None = None) -> OpenSearch:
    """A search ready to `run()`, for a new request or resuming `resume` from the journal."""
    path = request.path.resolve()
    root = find_workspace_root(path)
    journal = Journal(root)
    if resume is not None:
        task, _, _ = journal.load(resume)
        source = task.source
    else:
        source = request.source if request.source is not None else path.read_text(encoding="utf-8")
    spec = pick_spec(path, source, request.kernel)
    kind = f"harness:{spec.launcher}" if isinstance(spec, HarnessSpec) else "kernelbench"
    objective = "predicted" if (request.device != "gpu" and request.ray_address is None
                                and request.objective in ("auto", "predicted")) else "time"
    task = Task(path=str(path), kernel=request.kernel, source=source, spec=kind, device=request.device,
                target=request.target, objective=objective)
    rng = random.Random(request.seed)
    proposer, repair = _proposer(request, rng)
    log = FailureLog(root)
    workspace = Workspace(root, Settings())
    # Experience memory: verified kernels of other tasks become the prompts' demonstrations,
    # and this search's outcomes are recorded into it (engine.Search._finish).
    memory = ExperienceMemory(root)
    evaluator: CandidateEvaluator | RayEvaluator
    concurrency = request.concurrency
    if request.ray_address is not None:
        from .distributed import RayEvaluator, RayUnavailable

        try:
            evaluator = RayEvaluator(task, spec, address=request.ray_address, failure_log=log, cancel=cancel,
                                     actors=concurrency if concurrency > 1 else None, trials=request.trials,
                                     tolerances=request.tolerances, rounds=request.rounds, runs=request.runs)
        except RayUnavailable as error:
            raise SetupError(error.user_message) from error
        concurrency = evaluator.size
    else:
        evaluator = CandidateEvaluator(task, spec, failure_log=log, cancel=cancel, trials=request.trials,
                                       tolerances=request.tolerances, rounds=request.rounds, runs=request.runs,
                                       import_paths=request.import_paths)
    options = SearchOptions(steps=request.steps, patience=request.patience, wall_time_s=request.wall_time_s, concurrency=concurrency,
                            mode=request.mode, seed=request.seed, tree=TreeSettings(), pitfalls=pitfalls(workspace, log),
                            demonstrations=tuple(memory.demonstrations(exclude_task=task)))
    try:
        relative = str(path.relative_to(root))
    except ValueError:
        relative = path.name
    search = Search(task, proposer, evaluator, journal, options, guardian=RuleGuardian(workspace, repair),
                    progress=progress, cancel=cancel, resume=resume, relative_path=relative, memory=memory)
    return OpenSearch(search, evaluator, journal, log, memory)
