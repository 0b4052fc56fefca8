"""Failure-log rows from what the evaluator returns. The evaluator compiles and verifies and
returns reports and verdicts; whoever asked for them (the command line, the server's save job,
a search's evaluator) records the failures here, so the evaluator never writes state.

The evaluator's types are read through the protocols below (the attributes used, nothing
more), which keeps imports flowing one way: the state package sits under the evaluator.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..analysis import Document
from ..analysis.syntax import definition_name
from ..version import installed_triton_version
from .failure_log import FailureLog, kernel_hash

__all__ = ["record_checked", "record_compile", "record_verdict"]


class CompileReport(Protocol):
    """What `evaluator.reports.KernelReport` offers."""

    kernel: str
    results: list[dict[str, Any]]
    kernel_source: str | None  # the kernel's definition as compiled
    triton_version: str | None  # the worker's Triton


class _Rejection(Protocol):
    @property
    def line(self) -> int: ...


class CheckVerdict(Protocol):
    """What `evaluator.verify.Verdict` offers."""

    name: str
    ok: bool
    message: str
    mode: str

    @property
    def stage(self) -> str: ...  # a `standing.Stage`, which is a str

    @property
    def rejections(self) -> Sequence[_Rejection]: ...

    @property
    def standing(self) -> str: ...  # "verified", "NOT VERIFIED" or "FAILED"


class CheckedFile(Protocol):
    """What `evaluator.pipeline.Checked` offers."""

    path: str
    source: str
    cancelled: bool  # stopped before its end: its verdicts judge nothing

    @property
    def first_reports(self) -> Sequence[CompileReport]: ...  # the compile before the check

    @property
    def verdicts(self) -> Sequence[CheckVerdict]: ...

    @property
    def recompiled(self) -> Sequence[CompileReport]: ...  # compiled again with the launch types

    @property
    def compiled(self) -> bool: ...


def record_checked(log: FailureLog, checked: CheckedFile, *, root: Path | None = None, stage_prefix: str = "verify",
                   kernel: str | None = None) -> list[str]:
    """Everything one run of the verification pipeline teaches, recorded the same way whoever
    ran it (the command line, a save, a search): each compile failure (before and after the
    check), each FAILED verdict and, when every kernel compiled, the learned rules the file
    contradicts (`contradictions.py`; their codes are returned, corrected in `root`'s pack)."""
    record_compile(log, checked.path, checked.source, checked.first_reports)
    record_compile(log, checked.path, checked.source, checked.recompiled)
    if checked.cancelled:
        return []
    for verdict in checked.verdicts:
        record_verdict(log, checked.path, verdict, source=checked.source, stage_prefix=stage_prefix, kernel=kernel)
    if root is None or not checked.first_reports or not checked.compiled:
        return []
    from .contradictions import record_compiled

    return record_compiled(root, checked.source, checked.path)


def record_compile(log: FailureLog, path: str, source: str, reports: Iterable[CompileReport]) -> None:
    """Each failing compile entry of each report, with the source lines at the error, the
    kernel's hash and the Triton version it failed with."""
    document: Document | None = None
    for report in reports:
        digest = kernel_hash(report.kernel_source) if report.kernel_source is not None else None
        for entry in report.results:
            error = entry.get("error")
            if not error:
                continue
            if document is None:
                document = Document(source)
            where = error.get("range") or entry.get("origin")
            log.record(
                path=path, kernel=report.kernel, stage="compile", target=entry.get("target"),
                config=entry.get("config"),
                message=str(error.get("message") or error.get("text") or "compilation failed"),
                rules=list(error.get("rules") or []),
                snippet=_snippet(document, where["start"][0], where["end"][0]) if where else None,
                kernel_hash=digest, triton_version=report.triton_version or _installed_version(),
                source=document.text if where else None,
                error_at=(int(where["start"][0]), int(where["start"][1])) if where else None,
            )


def record_verdict(log: FailureLog, path: str, verdict: CheckVerdict, *, source: str | None = None,
                   stage_prefix: str = "verify", kernel: str | None = None) -> None:
    """A failed verification goes into the failure log too (stage "verify:<stage>"), for the
    adaptation work: which tricks and mistakes recur. `source` is the file as verified (read
    from `path` when not given), for the snippet and the hash of what was verified."""
    if verdict.standing != "FAILED":
        return  # verified, or NOT VERIFIED: a skipped check (its compile failure is logged), the
        # environment's or the interpreter's failure, or a run that could not cover the kernel
    if source is None:
        try:
            source = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            source = None
    snippet = digest = None
    if source is not None:
        document = Document(source)
        row = verdict.rejections[0].line - 1 if verdict.rejections else _definition_row(document, verdict.name)
        snippet = _snippet(document, row, row)
        # The hash of the kernel (or of what was verified): the top-level definition holding its name.
        name_row = _definition_row(document, kernel or verdict.name)
        node = next((n for n in document.root.named_children if n.start_point[0] <= name_row <= n.end_point[0]), None)
        digest = kernel_hash(node.text.decode("utf-8", "replace") if node is not None and node.text else source)
    log.record(path=path, kernel=kernel or verdict.name, stage=f"{stage_prefix}:{verdict.stage}",
               message=verdict.message, rules=[], target=verdict.mode, snippet=snippet, kernel_hash=digest,
               triton_version=_installed_version())


def _definition_row(document: Document, name: str) -> int:
    """The row of the module-level function or class `name` (0 when there is none)."""
    found = definition_name(document.root, name)
    return found.start_point[0] if found is not None else 0


def _installed_version() -> str | None:
    found = installed_triton_version()
    return f"{found[0]}.{found[1]}" if found else None


def _snippet(document: Document, first: int, last: int, limit: int = 6) -> str | None:
    """The source lines `first`..`last` (0-based rows), at most `limit` of them."""
    rows = range(max(first, 0), min(last, first + limit - 1, document.line_count - 1) + 1)
    text = "\n".join(document.line(r).decode("utf-8", "replace").rstrip("\r\n") for r in rows)
    return text if text.strip() else None
