"""`tritonsmith check PATH...`: the findings of the rules in force, as text, JSON or SARIF, with
`--fix` applying the mechanical fixes in place. Files the result cache (check_cache.py) answers
are not checked again; the others are checked in one process, or several forked ones for a large
input (`--jobs`).

`check` exits 0 when clean, 1 with findings, 2 on a usage error (argparse's convention).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .common import add_rule_options, open_workspace

# The rules, the report and the workspace are imported where they are used: commands that need
# none of them (`--help`, `verify`, `serve`'s start) do not wait 0.1 s for the rules to import,
# and a check the cache answers does not import the matcher.
if TYPE_CHECKING:
    from ..check_cache import CheckCache
    from ..report import FileFindings
    from ..workspace import Workspace


def register(commands: Any) -> None:
    check = commands.add_parser("check", help="check Python files for Triton rule violations")
    check.add_argument("paths", nargs="+", metavar="PATH")
    check.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    check.add_argument("--fix", action="store_true", help="apply the mechanical fixes in place")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("--jobs", "-j", type=int, metavar="N",
                       help="processes checking at once: files, or a single file's kernels (default: one per core for large inputs)")
    check.add_argument("--no-cache", action="store_true",
                       help="check every file again, neither reading nor writing .tritonsmith/cache")
    add_rule_options(check)
    check.set_defaults(handler=cmd_check)


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
    from ..report import to_json, to_sarif, to_text

    workspace = open_workspace(args, args.paths[0])
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
    from ..check_cache import CheckCache, run_key

    if workspace.root is None:
        return None
    key = run_key(workspace.rules.rules, version=workspace.version, select=workspace.settings.select,
                  ignore=workspace.settings.ignore, targets=workspace.settings.targets)
    return CheckCache(workspace.root / ".tritonsmith" / "cache" / "check", key)


def _cached_check_files(workspace: Workspace, paths: list[Path], *, fix: bool, jobs: int | None,
                        cache: CheckCache | None) -> Iterator[tuple[FileFindings, int] | str]:
    """`_check_files` for the files `cache` does not answer, in `paths` order. A file whose stored
    findings hold a fix is checked again under `--fix` (the fix rewrites it)."""
    from ..report import FileFindings

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
    from ..report import FileFindings
    from ..rules.fixes import apply_fixes

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
