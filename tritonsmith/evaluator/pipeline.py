"""The verification pipeline: the one place that decides what a check of a file says.

`tritonsmith verify` (cli/verify.py), the server's save job (server/jobs.py) and a search's
evaluator (search/evaluate.py) all run `Pipeline.run`, and differ only in where the options come
from and what they do with the answer:

1. **compile** every kernel for the targets in the compile workers (learned rules label the
   errors they match);
2. **blockers**: only a kernel that truly cannot launch stops the check (`correctness_blockers`;
   an error under assumed pointer types does not when there is a spec: the check records the
   real ones). A stopped check gives each spec the verdict stage `compile`;
3. **check** each spec against its reference (`verify.verify_spec`): syntax, the static checks,
   the device branches, the correctness trials in two sandboxed workers (the reference's worker
   loads only the reference's definitions), the odd-size trial, who computed the answer
   (policy.py, attribution.py, accounting.py) and, on a GPU, the timing;
4. **predict**, without a GPU, each verified spec's time on the first target (predicted.py);
5. **settle** the compile reports with what the check saw (kernels compiled again with the types
   and constexprs recorded at their launches), and turn a candidate failure raised inside
   Triton's interpreter, for a kernel that compiles for the targets, into the stage
   `interpreter`.

The pipeline writes no state: callers record what it returns (`state.record_checked`), so the
evaluator's imports keep flowing one way. It owns its worker pools and closes them however far
it got (a Ctrl-C, a cancel, an error); each pool removes its own temporary folder.

What a verdict says (`Stage`, `standing`) is decided in standing.py.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .standing import Stage

if TYPE_CHECKING:  # the machinery below imports verify.py, which reads the vocabulary (standing.py)
    from ..rules import Rule
    from .pool import WorkerPool
    from .predicted import PredictedTime
    from .reports import KernelReport
    from .verify import Spec, Verdict

__all__ = ["Checked", "Options", "Pipeline"]


@dataclass(frozen=True)
class Options:
    """How to check: the same fields whoever asks (the command line, the server, a search).

    `torch_ops` None follows the spec's own directive (`# tritonsmith: torch-ops = ...` in the
    file the search or the user opened); a directive in candidate-written text is never obeyed
    (verify.py). `predict`: without a GPU, predict each verified spec's time (predicted.py)."""

    targets: tuple[str, ...] = ("sm_90",)
    kernels: tuple[str, ...] | None = None
    mode: str = "interpreter"
    trials: int = 3
    tolerances: Mapping[str, float] | None = None
    torch_ops: str | None = None
    protocol: str = ""
    hang_s: float | None = None
    memory_mb: int | None = None
    time_it: bool = True
    rounds: int | None = None
    runs: int | None = None
    interpreter_timing: bool = False
    predict: bool = True
    import_folders: tuple[Path, ...] = ()

    @classmethod
    def from_settings(cls, settings: Any, root: Path | None, *, mode: str, **overrides: Any) -> Options:
        """Options from a workspace's settings (`[tool.tritonsmith]`, the editor's), with `overrides`."""
        values: dict[str, Any] = {
            "targets": tuple(settings.targets) or ("sm_90",),
            "mode": mode,
            "torch_ops": None if settings.torch_ops == "auto" else settings.torch_ops,
            "hang_s": settings.verify_timeout,
            "memory_mb": settings.memory_limit_mb,
            "import_folders": tuple(settings.import_folders(root)) if root is not None else (),
        }
        return cls(**{**values, **overrides})

    def env(self) -> dict[str, str]:
        """The verification workers' environment: the file's own modules on `PYTHONPATH`, and
        Triton's interpreter without a GPU."""
        from .sandbox import with_import_paths

        env = with_import_paths(os.environ, self.import_folders)
        if self.mode == "interpreter":
            env["TRITON_INTERPRET"] = "1"
        return env


@dataclass
class Checked:
    """What one run of the pipeline found: the compile reports (settled), each spec's verdict,
    and, without a GPU, each verified spec's predicted time (by spec name)."""

    path: str
    source: str
    reports: list[KernelReport]
    verdicts: list[Verdict] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    predicted: dict[str, PredictedTime] = field(default_factory=dict)
    first_reports: list[KernelReport] = field(default_factory=list)  # before settling, for the record
    cancelled: bool = False  # stopped by its `cancel` event: the verdicts so far judge nothing

    @property
    def compiled(self) -> bool:
        """Every kernel compiled (vacuously, when the file launches none)."""
        return all(r.ok for r in self.reports)

    @property
    def recompiled(self) -> list[KernelReport]:
        return [r for r in self.reports if r.recompiled]

    @property
    def ok(self) -> bool:
        """What the command line's exit status says: it compiled, and every spec verified."""
        if self.verdicts:
            return self.compiled and all(v.ok for v in self.verdicts)
        return bool(self.reports) and self.compiled


SayProgress = Callable[[str], None]  # one line of what a check is doing, for a progress view


class Pipeline:
    """Compile, check, predict and settle, in worker pools kept warm between runs.

    The pools start on first use: a compile-only run never starts verification workers. Pass
    `compile_size` to compile kernels in parallel (`tritonsmith verify --jobs`). Close it (or use
    it as a context manager) to stop its workers and remove their temporary folders."""

    def __init__(self, options: Options, *, compile_size: int = 1) -> None:
        self.options = options
        self._compile_size = compile_size
        self._compile_pool: WorkerPool | None = None
        self._verify_pools: tuple[WorkerPool, WorkerPool] | None = None
        self._lock = threading.Lock()  # the server asks from threads

    def reconfigure(self, options: Options) -> None:
        """Check with `options` from now on; the verification workers restart when their
        environment changes (the `importPaths` setting, the mode), the compile workers never."""
        with self._lock:
            stale = self._verify_pools if options.env() != self.options.env() else None
            if stale is not None:
                self._verify_pools = None
            self.options = options
        for pool in stale or ():
            pool.close()

    @property
    def compile_pool(self) -> WorkerPool:
        from .pool import WorkerPool

        with self._lock:
            if self._compile_pool is None:
                self._compile_pool = WorkerPool(size=self._compile_size)
            return self._compile_pool

    @property
    def verify_pools(self) -> tuple[WorkerPool, WorkerPool]:
        """(reference, candidate) pools, made together; closed together if making them fails."""
        from .pool import CANDIDATE_WARM_MODULES, WorkerPool

        with self._lock:
            if self._verify_pools is None:
                env = self.options.env()
                opened: list[WorkerPool] = []
                try:
                    opened.append(WorkerPool(1, env=env))
                    opened.append(WorkerPool(1, env=env))
                except BaseException:
                    for pool in opened:
                        pool.close()
                    raise
                # Both workers import torch and Triton in the background at once (seconds), while
                # the compile stage runs and the reference's worker starts its job.
                opened[0].prestart()
                opened[1].prestart(CANDIDATE_WARM_MODULES)
                self._verify_pools = (opened[0], opened[1])
            return self._verify_pools

    def compile(self, source: str, *, path: str, kernels: Sequence[str] | None = None,
                rules: list[Rule] | None = None, cancel: threading.Event | None = None) -> list[KernelReport]:
        """Step 1 alone: compile `kernels` (default: the options' or all) for the targets."""
        from .reports import compile_file

        wanted = list(kernels) if kernels is not None else (list(self.options.kernels) if self.options.kernels else None)
        return compile_file(self.compile_pool, source, path=path, targets=list(self.options.targets),
                            kernels=wanted, cancel_event=cancel, rules=rules)

    def run(self, path: str, source: str, *, specs: Sequence[Spec] | None = None,
            candidate_source: str | None = None, rules: list[Rule] | None = None,
            cancel: threading.Event | None = None, progress: SayProgress | None = None) -> Checked:
        """Compile `source` (the file at `path`) and check each spec against its reference.

        Args:
            specs: the specs to check; None: those `source` holds (`detect_specs`); empty: compile only.
            candidate_source: check this text as the candidate against `specs` (a search's
                variant, whose specs come from the file the search started from); the kernels
                compiled are this text's.
            rules: learned rules that label the compile errors they match.
            cancel: set to stop; running workers are killed within the pools' poll.
            progress: called with one line before each long step.
        """
        checked = self._run(path, source, specs, candidate_source, rules, cancel, progress or (lambda _message: None))
        checked.cancelled = cancel is not None and cancel.is_set()  # its verdicts judge nothing
        return checked

    def _run(self, path: str, source: str, specs: Sequence[Spec] | None, candidate_source: str | None,
             rules: list[Rule] | None, cancel: threading.Event | None, said: SayProgress) -> Checked:
        from .reports import correctness_blockers, skipped_verdicts
        from .verify import RUNS_PER_ROUND, TIMING_ROUNDS, detect_specs, verify_spec

        options = self.options
        compiled_text = candidate_source if candidate_source is not None else source
        if specs is None:
            specs = detect_specs(Path(path), source)
        if specs:
            self.verify_pools  # noqa: B018 - started now, their imports overlap the compile stage
            if options.predict and options.mode == "interpreter":
                # The prediction compiles on every compile worker: they start (and compile once)
                # while the verification runs, not after it.
                from .predicted import PREDICTION_WARM_MODULES

                self.compile_pool.prestart(PREDICTION_WARM_MODULES, fill=True)
        said(f"compiling for {', '.join(options.targets)}")
        reports = self.compile(compiled_text, path=path, rules=rules, cancel=cancel)
        checked = Checked(path, compiled_text, reports, first_reports=list(reports))
        if options.kernels and not reports:
            return checked  # no kernel of that name: nothing to check
        checked.blockers = correctness_blockers(reports, has_spec=bool(specs))
        if checked.blockers:
            checked.verdicts = skipped_verdicts(list(specs), checked.blockers, options.mode)
            return checked
        for spec in specs:
            if cancel is not None and cancel.is_set():
                return checked
            said(f"checking {spec.name} against its reference")
            verdict = verify_spec(
                spec, mode=options.mode, trials=options.trials, tolerances=options.tolerances,
                torch_ops=options.torch_ops, protocol=options.protocol, hang_s=options.hang_s,
                memory_mb=options.memory_mb, time_it=options.time_it, interpreter_timing=options.interpreter_timing,
                pools=self.verify_pools, cancel=cancel, candidate_source=candidate_source,
                rounds=options.rounds or TIMING_ROUNDS, runs=options.runs or RUNS_PER_ROUND,
            )
            checked.verdicts.append(verdict)
            if verdict.ok and options.mode == "interpreter" and options.predict:
                said(f"predicting {spec.name}'s time on {options.targets[0]}")
                checked.predicted[spec.name] = self.predict(spec, compiled_text, path=path, cancel=cancel)
                verdict.details["predicted"] = checked.predicted[spec.name].to_json()
        if cancel is not None and cancel.is_set():
            return checked
        self._settle(checked, rules, cancel)
        return checked

    def predict(self, spec: Spec, source: str, *, path: str, cancel: threading.Event | None = None) -> PredictedTime:
        """Step 4 alone: `source`'s predicted time on the first target at `spec`'s inputs."""
        from .predicted import predict_spec

        return predict_spec(spec, source, path=path, target=self.options.targets[0], pools=self.verify_pools,
                            compile_pool=self.compile_pool, cancel=cancel)

    def _settle(self, checked: Checked, rules: list[Rule] | None, cancel: threading.Event | None) -> None:
        from .reports import settle_reports

        if checked.verdicts:
            checked.reports = settle_reports(checked.reports, checked.verdicts, source=checked.source,
                                             path=checked.path, targets=list(self.options.targets),
                                             pool=self.compile_pool, rules=rules, cancel_event=cancel)
        for verdict in checked.verdicts:
            _interpreter_limitation(verdict, checked.reports, checked.path)

    def close(self) -> None:
        with self._lock:
            pools = [p for p in (self._compile_pool, *(self._verify_pools or ())) if p is not None]
            self._compile_pool = None
            self._verify_pools = None
        for pool in pools:
            pool.close()

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _interpreter_limitation(verdict: Verdict, reports: list[KernelReport], path: str) -> None:
    """Turn a candidate failure raised inside Triton's interpreter, for a kernel that compiles
    for the targets, into the stage `interpreter` (NOT VERIFIED): Triton's interpreter failed,
    not the kernel. A kernel that does not compile either keeps its own failure."""
    from .reports import interpreter_failure

    if verdict.ok or verdict.mode != "interpreter" or verdict.stage not in (Stage.CANDIDATE, Stage.SHAPES):
        return
    by_name = {r.kernel: r for r in reports}
    for key, payload in verdict.details.items():
        if not key.endswith(".candidate") or not isinstance(payload, dict) or not payload.get("traceback"):
            continue
        found = interpreter_failure(str(payload["traceback"]), set(by_name))
        if found is None:
            continue
        kernel, error, file, line = found
        report = by_name[kernel]
        targets = sorted({str(e.get("target")) for e in report.results if e.get("ok")})
        if not report.ok or not targets:
            return
        shown = path if os.path.basename(file) == os.path.basename(path) else os.path.basename(file)
        verdict.stage = Stage.INTERPRETER
        verdict.message = (f"interpreter limitation: {error} (in {kernel}, {shown}:{line}); "
                           f"{kernel} compiles for {', '.join(targets)}, so this is Triton's interpreter, "
                           "not the kernel: verify it on a GPU")
        return
