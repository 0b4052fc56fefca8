"""`tritonsmith`: the command line.

    tritonsmith check PATH... [--format text|json|sarif] [--select ...] [--ignore ...] [--fix]
    tritonsmith rules list | show ID | import FILE | docs [--check] | review [--accept|--reject CODE]
    tritonsmith adapt induce [PATH] | graduate CODE | run [TASKS] [--steps N] [--synthesize N] ...
    tritonsmith verify FILE [--device auto|gpu|cpu] ...
    tritonsmith optimize FILE --kernel NAME [--steps N] [--proposer ...] [--resume ID] [--out PATCH]
    tritonsmith serve [--tcp HOST:PORT]

`check` exits 0 when clean, 1 with findings, 2 on a usage error (argparse's convention).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .errors import TritonsmithError, UsageError
from .settings import Settings, find_workspace_root, read_pyproject

# The rules, the report and the workspace are imported where they are used: commands that need
# none of them (`--help`, `verify`, `serve`'s start) do not wait 0.1 s for the rules to import.
if TYPE_CHECKING:
    from .check_cache import CheckCache
    from .report import FileFindings
    from .rules import Rule
    from .workspace import Workspace

__all__ = ["main"]

_SKIP_DIRS = {".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", "build", "dist", ".tox",
              ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tritonsmith"}


def _python_files(paths: Sequence[str]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise UsageError(f"{raw}: no such file or directory")
        if path.is_file():
            yield path
            continue
        for folder, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                if name.endswith((".py", ".pyi")):
                    yield Path(folder) / name


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _settings(args: argparse.Namespace, root: Path, warnings: list[str]) -> Settings:
    flags: dict[str, object] = {}
    if getattr(args, "triton_version", None):
        flags["triton_version"] = args.triton_version
    if getattr(args, "select", None):
        flags["select"] = [c for v in args.select for c in _csv(v)]
    if getattr(args, "ignore", None):
        flags["ignore"] = [c for v in args.ignore for c in _csv(v)]
    if getattr(args, "rule_pack", None):
        flags["rule_packs"] = args.rule_pack
    if getattr(args, "timeout", None) is not None:
        flags["verify_timeout"] = args.timeout
    if getattr(args, "memory_mb", None) is not None:
        flags["memory_limit_mb"] = args.memory_mb
    return Settings.merged(read_pyproject(root, warnings=warnings), flags, warnings=warnings)


def _workspace(args: argparse.Namespace, first_path: str | None = None) -> Workspace:
    from .workspace import Workspace

    root = find_workspace_root(Path(first_path or "."))
    warnings: list[str] = []
    settings = _settings(args, root, warnings)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if settings.triton_version is None and getattr(args, "triton_version", None):
        raise UsageError(f"--triton-version {args.triton_version!r} is not MAJOR.MINOR (e.g. 3.6)")
    workspace = Workspace(root, settings)
    for error in workspace.pack_errors:
        print(f"error: {error.user_message} (this pack is skipped)", file=sys.stderr)
    return workspace


def _write_atomic(path: Path, content: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cmd_check(args: argparse.Namespace) -> int:
    from .report import to_json, to_sarif, to_text

    workspace = _workspace(args, args.paths[0])
    base = Path.cwd()
    paths = list(_python_files(args.paths))
    results: list[FileFindings] = []
    fixed_total = 0
    cache = None if args.no_cache else _check_cache(workspace)
    for outcome in _cached_check_files(workspace, paths, fix=args.fix, jobs=args.jobs, cache=cache):
        if isinstance(outcome, str):
            print(outcome, file=sys.stderr)
            continue
        result, fixed = outcome
        results.append(result)
        fixed_total += fixed
    if args.format == "json":
        print(to_json(results, base=base))
    elif args.format == "sarif":
        print(to_sarif(results, workspace.rules, base=base))
    else:
        print(to_text(results, base=base, fixed=fixed_total))
    # A secondary finding (a note) is another place of a problem counted where it is reported.
    problems = any(not f.secondary for r in results for f in r.findings)
    return 1 if problems and not args.exit_zero else 0


def _check_cache(workspace: Workspace) -> CheckCache | None:
    """The workspace's result cache for this run's rules and settings (check_cache.py)."""
    from .check_cache import CheckCache, run_key

    if workspace.root is None:
        return None
    key = run_key(workspace.rules.rules, version=workspace.version, select=workspace.settings.select,
                  ignore=workspace.settings.ignore, targets=workspace.settings.targets)
    return CheckCache(workspace.root / ".tritonsmith" / "cache" / "check", key)


def _cached_check_files(workspace: Workspace, paths: list[Path], *, fix: bool, jobs: int | None,
                        cache: CheckCache | None) -> Iterator[tuple[FileFindings, int] | str]:
    """`_check_files` for the files `cache` does not answer, in `paths` order. A file whose stored
    findings hold a fix is checked again under `--fix` (the fix rewrites it)."""
    from .report import FileFindings

    if cache is None:
        files_at_once, per_file = _jobs(jobs, paths)
        yield from _check_files(workspace, paths, fix=fix, jobs=files_at_once, per_file=per_file)
        return
    answered: dict[int, tuple[FileFindings, int] | str] = {}
    missed: list[int] = []
    for index, path in enumerate(paths):
        try:
            source = path.read_bytes()
        except OSError as error:
            answered[index] = f"error: {path}: cannot read: {error.strerror}"
            continue
        found = cache.get(source)
        if found is None or (fix and any(f.fix for f in found)):
            missed.append(index)
        else:
            answered[index] = (FileFindings(path, source, found), 0)
    if missed:
        files_at_once, per_file = _jobs(jobs, [paths[i] for i in missed])
        checked = _check_files(workspace, [paths[i] for i in missed], fix=fix, jobs=files_at_once, per_file=per_file)
        for index, outcome in zip(missed, checked, strict=True):
            if not isinstance(outcome, str):
                cache.put(outcome[0].source, outcome[0].findings)
            answered[index] = outcome
        cache.prune(checked=len(paths))
    for index in range(len(paths)):
        yield answered[index]


# Below this much source, one process checks everything: starting others would cost more.
PARALLEL_MIN_BYTES = 256 * 1024


def _jobs(requested: int | None, paths: list[Path]) -> tuple[int, int]:
    """How many processes check `paths`, as (files at once, processes sharing one file's
    kernels): `--jobs`, else one per core for a large enough input. Several files are split by
    file; a single file by kernel. Only where `fork` exists (the children inherit the loaded
    rules, and a file's children its parsed tree; nothing is read twice)."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods() or not paths:
        return 1, 1
    size = 0
    for path in paths:
        with contextlib.suppress(OSError):
            size += path.stat().st_size
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    wanted = requested if requested is not None else (1 if size < PARALLEL_MIN_BYTES else cores)
    wanted = max(1, wanted)
    if len(paths) == 1:
        return 1, wanted
    return min(wanted, len(paths)), 1


_WORKSPACE: Workspace | None = None  # the parent's, inherited by forked checkers


def _check_files(workspace: Workspace, paths: list[Path], *, fix: bool, jobs: int,
                 per_file: int = 1) -> Iterator[tuple[FileFindings, int] | str]:
    """Each file's findings (and how many `--fix` removed), in `paths` order, or an error line.
    `jobs` files at once, or one at a time with its kernels split between `per_file` processes."""
    global _WORKSPACE
    if jobs <= 1:
        for path in paths:
            yield _check_one(workspace, path, fix, per_file)
        return
    import multiprocessing

    _WORKSPACE = workspace
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            yield from pool.imap(_check_inherited, [(path, fix) for path in paths])  # one file at a time: balanced
    finally:
        _WORKSPACE = None


def _check_inherited(item: tuple[Path, bool]) -> tuple[FileFindings, int] | str:
    assert _WORKSPACE is not None
    return _check_one(_WORKSPACE, *item)


def _check_one(workspace: Workspace, path: Path, fix: bool, jobs: int = 1) -> tuple[FileFindings, int] | str:
    from .report import FileFindings
    from .rules.fixes import apply_fixes

    try:
        source = path.read_bytes()
    except OSError as error:
        return f"error: {path}: cannot read: {error.strerror}"
    findings = workspace.check_source(source, jobs=jobs)
    fixed = 0
    if fix and any(f.fix for f in findings):
        original, before = source, _problems(findings)
        for _ in range(5):  # fixes can uncover or unblock others; stop when nothing changes
            fixable = [f for f in findings if f.fix]
            if not fixable:
                break
            updated = apply_fixes(source, fixable)
            if updated == source:
                break
            source = updated
            findings = workspace.check_source(source)
        if source != original:
            _write_atomic(path, source)
            fixed = max(before - _problems(findings), 0)
    return FileFindings(path, source, findings), fixed


def _problems(findings: list[Any]) -> int:
    """Findings as the summary counts them: a secondary one is a note on another."""
    return sum(1 for f in findings if not f.secondary)


def _rule_summary(rule: Rule) -> str:
    return f"{rule.code:7} {rule.severity.value:11} {rule.name}: {rule.title}"


def cmd_rules(args: argparse.Namespace) -> int:
    if args.rules_command == "import":
        return _rules_import(args)
    if args.rules_command == "docs":
        from .rules.docs import check_docs, write_docs

        out = Path(args.output)
        if args.check:
            stale = check_docs(out)
            for name in stale:
                print(f"out of date: {out / name}", file=sys.stderr)
            if stale:
                print("run `tritonsmith rules docs` to regenerate", file=sys.stderr)
            return 1 if stale else 0
        written = write_docs(out)
        print(f"wrote {len(written)} files to {out}")
        return 0
    workspace = _workspace(args)
    if args.rules_command == "list":
        rules = sorted(workspace.rules, key=lambda r: r.code)
        if args.format == "json":
            print(json.dumps([
                {"code": r.code, "name": r.name, "severity": r.severity.value, "category": r.category,
                 "title": r.title, "statement": r.statement, "triton": str(r.triton),
                 "source": r.source, "advisory": r.advisory, "count": r.count}
                for r in rules
            ], indent=2))
        else:
            for rule in rules:
                print(_rule_summary(rule))
        return 0
    rule = workspace.rules.get(args.id)
    if rule is None:
        raise UsageError(f"no rule {args.id!r}; `tritonsmith rules list` shows them all")
    from .rules.docs import rule_markdown

    print(rule_markdown(rule))
    return 0


def _read_text(path: Path) -> str:
    """A file named on the command line, or a usage error saying why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"{path}: cannot read: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None


def _rules_import(args: argparse.Namespace) -> int:
    from .rules import import_adaexplore, load_pack
    from .rules.pack import user_rules_dir, write_pack_atomic

    source = Path(args.file)
    text = _read_text(source)
    if args.user:
        target = user_rules_dir() / "imported.toml"
    else:
        target = find_workspace_root(Path(".")) / ".tritonsmith" / "imported.toml"
    existing = load_pack(target) if target.exists() else []
    known = {r.statement for r in existing}
    number = 1 + max((int(r.code[3:]) for r in existing if r.code.startswith("TSA")), default=0)
    new = [r for r in import_adaexplore(text, source=str(source), first_number=number) if r.statement not in known]
    # Renumber after dropping duplicates so codes stay dense and stable.
    from dataclasses import replace

    new = [replace(r, code=f"TSA{number + i:03d}") for i, r in enumerate(new)]
    write_pack_atomic(target, existing + new)
    if target.parent.name == ".tritonsmith":
        from .state import state_dir

        state_dir(target.parent.parent)
    print(f"imported {len(new)} rule(s) from {source} into {target}"
          + (f" ({len(existing)} already there)" if existing else ""))
    return 0


def _tolerances(values: list[str]) -> dict[str, float]:
    """`--tolerance float32=1e-3` (repeatable, comma-separated) -> {"float32": 0.001}."""
    out = {}
    for item in (t for value in values for t in _csv(value)):
        dtype, _, number = item.partition("=")
        try:
            out[dtype.strip().removeprefix("torch.")] = float(number)
        except ValueError:
            raise UsageError(f"--tolerance {item!r}: expected DTYPE=NUMBER, e.g. float32=1e-3") from None
    return out


def cmd_verify(args: argparse.Namespace) -> int:
    """Compile each kernel for each target in sandboxed workers and report per config; then
    check each spec in the file (KernelBench problem or in-file harness) against its reference,
    and on a GPU time it (evaluator/pipeline.py, as a save and a search do)."""
    from .evaluator.pipeline import Options, Pipeline
    from .evaluator.pool import compile_workers
    from .evaluator.reports import resource_summary
    from .evaluator.verify import mode_for_device
    from .state import FailureLog, active_learned, record_checked

    path = Path(args.file)
    source = _read_text(path)
    root = find_workspace_root(path)
    warnings: list[str] = []  # --timeout, --memory-mb over [tool.tritonsmith]
    settings = _settings(args, root, warnings)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    tolerances = _tolerances(args.tolerance or [])
    overrides: dict[str, object] = {"trials": args.trials, "tolerances": tolerances, "time_it": not args.no_timing,
                                    "rounds": args.rounds, "predict": not args.no_predict}
    if args.target:
        overrides["targets"] = tuple(t for value in args.target for t in _csv(value))
    if args.kernel:
        overrides["kernels"] = tuple(k for value in args.kernel for k in _csv(value))
    if args.torch_ops:
        overrides["torch_ops"] = args.torch_ops
    if args.protocol:  # a published gate, so a published result is judged as its authors judged it
        from .benchmark.runner import PROTOCOLS

        chosen = PROTOCOLS[args.protocol]
        overrides.update(protocol=args.protocol, tolerances={**chosen.tolerances, **tolerances},
                         trials=max(args.trials, chosen.trials))
    options = Options.from_settings(settings, root, mode=mode_for_device(args.device), **overrides)
    failure_log = FailureLog(root)
    learned = active_learned(root)  # their codes label the errors they match
    with Pipeline(options, compile_size=args.jobs or compile_workers()) as pipeline:
        checked = pipeline.run(str(path), source, rules=learned)
    for code in record_checked(failure_log, checked, root=root):
        print(f"note: learned rule {code} flagged this file, which compiled: it is demoted "
              "(its matcher is retracted after a second such file)", file=sys.stderr)
    failure_log.close()
    if options.kernels and not checked.first_reports:
        raise UsageError(f"no kernel named {', '.join(options.kernels)} in {args.file}")
    reports, verdicts = checked.reports, checked.verdicts  # one verdict per spec the file holds
    if args.format == "json":
        listing = [
            {"kernel": r.kernel, "ok": r.ok, "status": r.status(), "assumed": r.assumed, "error": r.error,
             "results": r.results, "skipped": r.skipped,
             "findings": [{"code": f.code, "severity": f.severity.value, "message": f.message,
                           "line": f.span.start[0] + 1, "column": f.span.start[1] + 1} for f in r.findings]}
            for r in reports
        ]
        if not verdicts:
            print(json.dumps(listing, indent=2))
        else:  # files with a spec: the kernels plus each verdict
            print(json.dumps({"kernels": listing, "verification": [v.to_json() for v in verdicts]}, indent=2))
    else:
        shown = path.as_posix()
        for report in reports:
            print(f"{shown}: {report.kernel}: {report.status()}")
            for entry in report.results:
                if entry.get("ok"):
                    print(f"  {resource_summary(entry)}")
            for skipped in report.skipped:
                print(f"  {skipped.get('target')} · {skipped.get('config')}: skipped ({skipped.get('reason')})")
            for finding in report.findings:
                print(f"  {shown}:{finding.span.start[0] + 1}:{finding.span.start[1] + 1}: "
                      f"{finding.code} [{finding.severity.value}] {finding.message}")
        for verdict in verdicts:
            if verdict.rejections:
                print(f"{shown}: {verdict.name}: REJECTED by static checks, not run:")
                for rejection in verdict.rejections:
                    print(f"  {shown}:{rejection.line}: {rejection.describe()}")
            else:
                print(f"{shown}: {verdict.name}: {verdict.summary()}")
            for note in verdict.notes:
                print(f"  note: {note}")
        if not verdicts:
            print("Correctness against a reference is not checked: this file has no spec (a KernelBench "
                  "problem, or a launcher with <name>_inputs and <name>_reference; see docs/harness.md, "
                  "or use the code action \"Create verification harness\").")
    return 0 if checked.ok else 1


def cmd_predict(args: argparse.Namespace) -> int:
    """The predicted GPU time of a file's forward pass (evaluator/predicted.py), per launch and in
    total, on the GPU modelled for the target; verified or not, and it says which."""
    from .evaluator.pipeline import Options, Pipeline
    from .evaluator.pool import compile_workers
    from .evaluator.predict import format_seconds, gpu_model
    from .evaluator.verify import detect_specs

    path = Path(args.file)
    source = _read_text(path)
    settings, root = _file_settings(args, path)
    overrides: dict[str, object] = {"time_it": False, "predict": True}
    if args.target:
        overrides["targets"] = (args.target,)
    options = Options.from_settings(settings, root, mode="interpreter", **overrides)
    if not re.fullmatch(r"sm_?\d+[a-z]?", options.targets[0]):
        raise UsageError(f"unknown target {options.targets[0]!r}: predict knows NVIDIA targets "
                         "(sm_80, sm_86, sm_89, sm_90, sm_100)")
    specs = detect_specs(path, source)
    if not specs:
        raise UsageError(f"{args.file}: no forward pass to predict: the file has no spec (a KernelBench problem, "
                         "or a launcher with <name>_inputs and <name>_reference; see docs/harness.md)")
    results: list[dict[str, Any]] = []
    with Pipeline(options, compile_size=compile_workers()) as pipeline:
        verdicts = {v.name: v for v in pipeline.run(str(path), source).verdicts} if args.verify else {}
        for spec in specs:
            verdict = verdicts.get(spec.name)
            if verdict is not None and "predicted" in verdict.details:  # predicted after it verified
                predicted = verdict.details["predicted"]
            else:
                predicted = pipeline.predict(spec, source, path=str(path)).to_json()
            prediction = predicted.get("prediction") or {}
            seconds = prediction.get("seconds")
            results.append({
                "file": path.as_posix(), "name": spec.name, "target": options.targets[0],
                "gpu": gpu_model(options.targets[0]).name,
                "seconds": seconds if seconds is None or seconds != float("inf") else None,
                "cannot_launch": seconds == float("inf"),
                "launches": prediction.get("launches") or [], "torch_seconds": prediction.get("torch_seconds"),
                "device_seconds": prediction.get("device_seconds"), "host_seconds": prediction.get("host_seconds"),
                "host_ops": prediction.get("host_ops"),
                "sizes": predicted.get("sizes") or {}, "profiled": predicted.get("profiled"),
                "notes": prediction.get("notes") or [],
                "error": predicted.get("error"), "summary": predicted.get("summary"),
                "elapsed_s": predicted.get("elapsed_s"),
                "verified": None if verdict is None else verdict.ok,
                "verdict": None if verdict is None else verdict.summary(),
            })
    if args.format == "json":
        print(json.dumps({**results[0], "predictions": results}, indent=2, default=str))
    else:
        for result in results:
            checked = ("not verified (`tritonsmith verify` or `--verify` checks it)" if result["verified"] is None
                       else "verified" if result["verified"] else f"verification: {result['verdict']}")
            print(f"{result['file']}: {result['name']}: {result['summary']} · {checked}")
            for launch in result["launches"]:
                shown = "cannot launch" if launch.get("seconds") == float("inf") else format_seconds(float(launch["seconds"]))
                print(f"  {launch.get('kernel')}: {shown} · {launch.get('bound')}-bound · {launch.get('programs')} "
                      f"programs, {launch.get('blocks_per_sm')} blocks/SM")
            if result["torch_seconds"]:
                print(f"  PyTorch operators: {format_seconds(float(result['torch_seconds']))}")
            for note in result["notes"]:
                print(f"  note: {note}")
    return 0 if all(r["seconds"] is not None or r["cannot_launch"] for r in results) else 1


def _file_settings(args: argparse.Namespace, path: Path) -> tuple[Settings, Path]:
    """The settings of the file's workspace (`[tool.tritonsmith]` under the flags) and its root."""
    root = find_workspace_root(path.resolve())
    warnings: list[str] = []
    settings = _settings(args, root, warnings)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return settings, root


def cmd_optimize(args: argparse.Namespace) -> int:
    """Search for a faster verified variant of one kernel; write the best as a patch."""
    import signal
    import threading

    from rich.console import Console
    from rich.table import Table

    from .evaluator.predict import predicted_label
    from .evaluator.verify import mode_for_device
    from .search.engine import Progress
    from .search.setup import SearchRequest, SetupError, open_search

    mode = mode_for_device(args.device)
    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"{args.file}: no such file")
    settings, root = _file_settings(args, path)
    patience = args.patience if args.patience is not None else settings.patience
    request = SearchRequest(
        path=path, kernel=args.kernel, device=mode, proposer=args.proposer, steps=args.steps, patience=patience,
        wall_time_s=args.time_limit, concurrency=args.concurrency, seed=args.seed, allow_upload=args.allow_upload,
        model=args.model, base_url=args.base_url, spending_cap_usd=args.spending_cap, target=args.target,
        ray_address=args.ray, objective=args.objective, import_paths=tuple(settings.import_folders(root)),
    )
    console = Console(stderr=True, highlight=False)
    cancel = threading.Event()

    def stop(signum: int, frame: object) -> None:
        """Ctrl-C or SIGTERM: stop cleanly (the journal keeps the search, resumable); again: at once."""
        if cancel.is_set():
            raise KeyboardInterrupt
        cancel.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    predicted = mode != "gpu" and args.objective != "interpreter" and not args.ray
    unit = "GPU time" if mode == "gpu" else (
        predicted_label(args.target) if predicted else "interpreter time (not a GPU figure)")
    try:
        status = console.status("starting: evaluating the original kernel")
        with status:
            def progress(update: Progress) -> None:
                status.update(update.message(mode))
                console.print(f"  {update.last}")

            try:
                opened = open_search(request, resume=args.resume, progress=progress, cancel=cancel)
            except SetupError as error:
                raise UsageError(error.user_message) from None
            with opened:
                console.print(f"search {opened.search.search_id}: {args.kernel} in {path}, {request.steps} steps, "
                              f"proposer {opened.search.proposer.name}, {unit}")
                result = opened.search.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    leaders = result.leaders()
    table = Table(title=f"fastest verified candidates in screening ({unit}; unconfirmed, a few calls each)")
    columns = ("node", "step", "screening", "spread") + (("predicted µs",) if predicted else ()) + (
        ("interpreter ms" if mode != "gpu" else "ms"), "proposer")
    for column in columns:
        table.add_column(column)
    for node in leaders:
        ev = node.evaluation
        assert ev is not None
        spread = f"{ev.spread[0]:.2f}–{ev.spread[1]:.2f}" if ev.spread else ""
        tied = len(result.tied.get(node.id, ()))
        cells = [str(node.id) + (f" (+{tied} tied)" if tied else ""), node.kind.value, f"{ev.speedup:.2f}×", spread]
        if predicted:
            cells.append(f"{ev.predicted_s * 1e6:.4g}" if ev.predicted_s is not None else "")
        cells += [f"{ev.time_ms:.4g}" if ev.time_ms is not None else "", node.proposer or "original"]
        table.add_row(*cells)
    if args.format == "text":
        console.print(table)
    aside = result.set_aside
    why = (f"plateau ({patience} candidates in a row found nothing faster)" if result.stopped == "plateau"
           else result.stopped)
    console.print(f"stopped: {why}; {max(0, result.tree.evaluated_count - 1)} candidates"
                  + (f" ({aside} set aside: the same kernel as an evaluated one once hints that cannot change "
                     "the measured time are ignored; not re-timed)" if aside else "")
                  + (f"; ${result.cost_usd:.2f} spent" if result.cost_usd else "")
                  + f"; resume with --resume {result.search_id}" * (result.stopped in ("cancelled", "time")))
    for node_id, confirmation in result.confirmations:
        console.print(f"confirmation of #{node_id} against the original: {confirmation.text()}; {confirmation.how()}")
    out: Path | None = None
    if result.improved:
        from .settings import find_workspace_root

        out = Path(args.out) if args.out else find_workspace_root(path.resolve()) / ".tritonsmith" / f"{result.search_id}.patch"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(result.diff, encoding="utf-8")
    if args.format == "json":
        best = result.best
        print(json.dumps({
            "searchId": result.search_id, "stopped": result.stopped, "improved": result.improved,
            "measuredOn": mode, "measured": result.task.measured, "result": result.outcome_text(),
            "speedup": result.speedup,
            "confirmation": result.confirmation.to_json() if result.confirmation is not None else None,
            "confirmations": [{"node": n, **c.to_json()} for n, c in result.confirmations],
            "best": best.id if best is not None else None, "candidates": result.tree.evaluated_count - 1,
            "setAside": aside, "patch": str(out) if out is not None else None, "costUsd": result.cost_usd,
            "tied": result.tied.get(best.id, []) if best is not None else [],
            "screening": [{"node": n.id, "kind": n.kind.value, "speedup": n.evaluation.speedup if n.evaluation else None,
                           "timeMs": n.evaluation.time_ms if n.evaluation else None,
                           "predictedS": n.evaluation.predicted_s if n.evaluation else None} for n in leaders],
        }, indent=2))
    if not result.improved or out is None:
        console.print(f"{result.outcome_text()} ({unit}): no patch written")
        return 130 if cancel.is_set() else 1  # 130: interrupted, as a shell reports Ctrl-C
    assert result.best is not None
    others = result.tied.get(result.best.id, [])
    ties = (f" ({len(others)} other candidates tie with it in screening; it changes the fewest lines)" if others else "")
    console.print(f"best: #{result.best.id}, {result.outcome_text()} faster ({unit}){ties}; patch written to {out} "
                  f"(git apply {out})")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the search on every problem of a folder; write JSON, Markdown, plots and HTML."""
    from .benchmark.report import write_report
    from .benchmark.runner import find_problems, run_suite
    from .evaluator.verify import mode_for_device

    folder = Path(args.problems)
    if not folder.is_dir():
        raise UsageError(f"{args.problems}: not a folder of problems")
    if not find_problems(folder):
        raise UsageError(f"{args.problems}: no KernelBench-format problem or harnessed kernel in it")
    mode = mode_for_device(args.device)

    def progress(problem: object) -> None:
        from .benchmark.runner import ProblemResult

        assert isinstance(problem, ProblemResult)
        start = "start verified" if problem.start_ok else "start FAILED"
        found = problem.result if problem.correct else "no new verified candidate"
        print(f"{problem.name}: {problem.error or found} ({start}; {problem.new_verified} new verified of "
              f"{problem.candidates} candidates, {problem.seconds} s)", file=sys.stderr, flush=True)

    suite = run_suite(folder, steps=args.steps, device=mode, proposer=args.proposer, protocol=args.protocol,
                      seed=args.seed, max_problems=args.max_problems, allow_upload=args.allow_upload,
                      progress=progress, ray_address=args.ray, objective=args.objective)
    files = write_report(suite, Path(args.out))
    m = suite.metrics
    ran = [p for p in suite.problems if not p.error]
    print(f"start verified on {sum(p.start_ok for p in ran)}/{len(ran)} (not counted as correct) · "
          f"confirmed faster on {sum(p.claimed for p in ran)}/{len(ran)}")
    print(f"{len(suite.problems)} problems · accuracy {m.accuracy:.0%} (new verified candidate) · "
          f"mean speedup {m.mean_speedup:.2f}x "
          f"(10x cap, incorrect = 0) · Fast@1.2 {m.fast_1_2:.0%} · Fast@2 {m.fast_2:.0%} · GM(10) {m.gm10:.2f}x "
          f"· speedups {suite.unit}")
    print(f"report: {files['html']}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from .server import serve

    return serve(tcp=args.tcp, log_file=args.log_file)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tritonsmith", description="Triton kernel linter and language server.")
    parser.add_argument("--version", action="version", version=f"tritonsmith {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    def common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--triton-version", metavar="X.Y", help="check against this Triton version")
        sub.add_argument("--select", action="append", metavar="CODES", help="only these rules (codes, prefixes or names; comma-separated)")
        sub.add_argument("--ignore", action="append", metavar="CODES", help="never these rules")
        sub.add_argument("--rule-pack", action="append", metavar="PATH", help="an extra rule-pack file or folder")

    check = commands.add_parser("check", help="check Python files for Triton rule violations")
    check.add_argument("paths", nargs="+", metavar="PATH")
    check.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    check.add_argument("--fix", action="store_true", help="apply the mechanical fixes in place")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("--jobs", "-j", type=int, metavar="N",
                       help="processes checking at once: files, or a single file's kernels (default: one per core for large inputs)")
    check.add_argument("--no-cache", action="store_true",
                       help="check every file again, neither reading nor writing .tritonsmith/cache")
    common(check)
    check.set_defaults(handler=cmd_check)

    rules = commands.add_parser("rules", help="list, show, import or document rules")
    rules_commands = rules.add_subparsers(dest="rules_command", required=True)
    listing = rules_commands.add_parser("list", help="list the rules in force")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    common(listing)
    show = rules_commands.add_parser("show", help="show one rule with its examples")
    show.add_argument("id", metavar="ID", help="rule code or name")
    common(show)
    importing = rules_commands.add_parser("import", help="import an AdaExplore memory file (rule||count per line)")
    importing.add_argument("file", metavar="FILE")
    importing.add_argument("--user", action="store_true", help="into the user pack instead of the workspace's")
    docs = rules_commands.add_parser("docs", help="write docs/rules/<ID>.md for every builtin rule")
    docs.add_argument("--output", default="docs/rules")
    docs.add_argument("--check", action="store_true", help="exit 1 if the docs are out of date")
    rules.set_defaults(handler=cmd_rules)
    from .adapt.cli import register as register_adapt  # `adapt induce`, `rules review`

    register_adapt(commands, rules_commands)

    verify = commands.add_parser("verify", help="compile kernels for GPU targets, verify them against their reference, time them on a GPU")
    verify.add_argument("file", metavar="FILE")
    verify.add_argument("--kernel", action="append", metavar="NAME", help="only these kernels")
    verify.add_argument("--target", action="append", metavar="TARGETS",
                        help="comma-separated targets, e.g. sm_80,sm_90,gfx942 (default sm_90)")
    verify.add_argument("--format", choices=("text", "json"), default="text")
    verify.add_argument("--trials", type=int, default=3, help="correctness trials (at least 3)")
    verify.add_argument("--device", choices=("auto", "gpu", "cpu"), default="auto",
                        help="where to run the checks: a GPU, or the CPU under Triton's interpreter "
                        "(auto: the GPU when there is one)")
    verify.add_argument("--rounds", type=int, default=10, help="GPU timing rounds (10 timed runs each)")
    verify.add_argument("--no-timing", action="store_true", help="check correctness only, even on a GPU")
    verify.add_argument("--no-predict", action="store_true",
                        help="without a GPU, skip the predicted time on the first target (a profiled run and a compile)")
    verify.add_argument("--torch-ops", metavar="POLICY",
                        help="PyTorch compute allowed on the inputs: auto (default: none for a single-operator "
                             "task, any for a fusion task), none, any, or operators, e.g. convolution,addmm")
    verify.add_argument("--tolerance", action="append", metavar="DTYPE=TOL",
                        help="atol = rtol for outputs of a dtype, e.g. float32=1e-3 (default: float32 1e-4, "
                        "float16/bfloat16 1e-2, as KernelBench)")
    verify.add_argument("--protocol", choices=("kernelbench", "kernelbench-v0", "adaexplore"),
                        help="judge as a published benchmark does (its tolerances and trials; the verdict names it): "
                             "kernelbench 1e-4 fp32 / 1e-2 half, kernelbench-v0 1e-2, adaexplore 5e-2")
    verify.add_argument("--jobs", type=int, metavar="N", help="compile jobs at once (default: 2, or 1 on one core)")
    verify.add_argument("--timeout", type=int, metavar="SECONDS",
                        help="report a kernel as hung when one forward pass runs longer than this "
                             "(default: max(30, 20x the reference's own forward pass))")
    verify.add_argument("--memory-mb", type=int, metavar="MB",
                        help="memory limit of each worker (default: a quarter of the available memory, 1-32 GB)")
    verify.set_defaults(handler=cmd_verify)

    predict = commands.add_parser("predict", help="the predicted GPU time of a file's forward pass, without a GPU")
    predict.add_argument("file", metavar="FILE")
    predict.add_argument("--target", metavar="TARGET",
                         help="the GPU to predict for: sm_80 (A100), sm_86 (RTX A6000), sm_89 (L40S), sm_90 (H100 SXM), "
                              "sm_100 (B200) (default: the first of the targets setting, sm_90)")
    predict.add_argument("--verify", action="store_true", help="verify the file first and say whether it verified")
    predict.add_argument("--format", choices=("text", "json"), default="text")
    predict.add_argument("--timeout", type=int, metavar="SECONDS", help="hang limit of one forward pass")
    predict.add_argument("--memory-mb", type=int, metavar="MB", help="memory limit of each worker")
    predict.set_defaults(handler=cmd_predict)

    optimize = commands.add_parser("optimize", help="search for a faster verified variant of a kernel")
    optimize.add_argument("file", metavar="FILE")
    optimize.add_argument("--kernel", required=True, metavar="NAME", help="the @triton.jit kernel to optimise")
    optimize.add_argument("--steps", type=int, default=100, help="candidates to evaluate (default 100)")
    optimize.add_argument("--patience", type=int, metavar="N",
                          help=f"stop once N candidates in a row find nothing faster than the best so far "
                               f"(default: patience in [tool.tritonsmith], else {Settings.patience}; 0: run every step)")
    optimize.add_argument("--time-limit", type=float, metavar="SECONDS",
                          help="stop searching after this long (the confirmation of the best comes after)")
    optimize.add_argument("--proposer", choices=("auto", "offline", "anthropic", "openai"), default="auto",
                          help="who writes candidates (auto: a model when a key is set and --allow-upload is given, "
                          "else offline)")
    optimize.add_argument("--allow-upload", action="store_true",
                          help="consent to sending the kernel to the model's provider")
    optimize.add_argument("--model", help="the model (anthropic, or the OpenAI-compatible server's)")
    optimize.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    optimize.add_argument("--spending-cap", type=float, default=10.0, metavar="USD", help="stop spending above this")
    optimize.add_argument("--device", choices=("auto", "gpu", "cpu"), default="auto")
    optimize.add_argument("--target", default="sm_90", help="the GPU target candidates compile for")
    optimize.add_argument("--objective", choices=("auto", "predicted", "interpreter"), default="auto",
                          help="without a GPU, what candidates are ranked by: their predicted time on --target "
                          "(auto, predicted) or interpreter time; with a GPU, always GPU time")
    optimize.add_argument("--concurrency", type=int, default=1, help="candidates evaluated at once")
    optimize.add_argument("--seed", type=int, default=0)
    optimize.add_argument("--resume", metavar="ID", help="continue a search from its journal")
    optimize.add_argument("--ray", metavar="ADDRESS", help="evaluate on a Ray cluster, one actor per GPU "
                          "(e.g. auto or ray://head:10001; needs tritonsmith[ray])")
    optimize.add_argument("--out", metavar="PATCH", help="where to write the patch (default .tritonsmith/<id>.patch)")
    optimize.add_argument("--format", choices=("text", "json"), default="text",
                          help="json: the result, its confirmation interval and the patch's path on stdout")
    optimize.set_defaults(handler=cmd_optimize)

    bench = commands.add_parser("bench", help="run the search on a folder of KernelBench-format problems")
    bench.add_argument("problems", metavar="PROBLEMS_DIR")
    bench.add_argument("--steps", type=int, default=10, help="candidates per problem (default 10)")
    bench.add_argument("--proposer", choices=("auto", "offline", "anthropic", "openai"), default="offline")
    bench.add_argument("--allow-upload", action="store_true", help="consent to sending kernels to a model")
    bench.add_argument("--device", choices=("auto", "gpu", "cpu"), default="auto")
    bench.add_argument("--protocol", choices=("tritonsmith", "kernelbench", "adaexplore"), default="tritonsmith",
                       help="verification tolerances, trials and timing to match a published protocol")
    bench.add_argument("--objective", choices=("auto", "predicted", "interpreter"), default="auto",
                       help="without a GPU, what candidates are ranked and claimed by (as for optimize)")
    bench.add_argument("--max-problems", type=int, metavar="N")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--ray", metavar="ADDRESS", help="evaluate on a Ray cluster, one actor per GPU (needs tritonsmith[ray])")
    bench.add_argument("--out", default="bench-report", metavar="DIR", help="where the report goes")
    bench.set_defaults(handler=cmd_bench)

    serve = commands.add_parser("serve", help="run the language server (stdio by default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    serve.add_argument("--log-file", metavar="FILE", help="write the log here instead of stderr")
    # vscode-languageclient appends --stdio when told the transport explicitly.
    serve.add_argument("--stdio", action="store_true", help="use stdio (the default)")
    serve.set_defaults(handler=cmd_serve)
    return parser


def _exit_without_teardown(code: int) -> None:
    """End `check` without the interpreter's teardown: freeing a large file's tree, index and
    findings object by object took 0.17-0.25 s of a 2 s check of 55,000 lines, and nothing is
    left to run by then (forked children are reaped, output is written). mypy does the same."""
    import logging

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    logging.shutdown()
    os._exit(code)


def _terminate_as_interrupt() -> None:
    """SIGTERM (a killed editor, `kill`, a CI timeout) unwinds like Ctrl-C, so every worker pool
    closes and removes its folder; Python's default would end the process on the spot, leaving
    them in the temporary directory."""
    import signal

    owner = os.getpid()

    def interrupt(signum: int, frame: object) -> None:
        if os.getpid() != owner:  # a forked checker (`check --jobs`): end as SIGTERM asks, quietly
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise KeyboardInterrupt

    with contextlib.suppress(ValueError):  # not the main thread
        signal.signal(signal.SIGTERM, interrupt)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if argv is None:  # run as the `tritonsmith` program, not called from someone's code
        from ._runtime import tune_gc

        tune_gc()
        _terminate_as_interrupt()
    try:
        code = int(args.handler(args))
        if argv is None and args.handler is cmd_check:
            _exit_without_teardown(code)
        return code
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM: the pools have closed and removed their folders
        print("tritonsmith: interrupted", file=sys.stderr)
        return 130
    except UsageError as error:
        print(f"tritonsmith: error: {error.user_message}", file=sys.stderr)
        return 2
    except TritonsmithError as error:
        print(f"tritonsmith: error: {error.user_message}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
