"""Compile reports: run compile jobs for a file's kernels and turn the results into findings.

Shared by `tritonsmith verify` and the server's save handler. A worker returns, per kernel,
one entry per target × config (see `compile.handle_compile`); this module turns failing entries
into `Finding`s at the exact source range (with the matched rule's code when a rule's signature
matches the compiler's message), a Config that needs more shared memory than the target has
into an error on that Config, spills into a warning, and successful entries into one-line
resource summaries for code lenses and the command line.

Nothing here imports torch or triton: the work happens in the pool's workers.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..adapt import FailureLog
from ..adapt.failure_log import kernel_hash
from ..adapt.learned import active_learned
from ..analysis import Document, index_module
from ..rules import Finding, Rule, Severity, Span, parse_version
from ..rules.findings import Related
from ..version import installed_triton_version
from .pool import WorkerPool
from .protocol import Job
from .verify import Verdict

__all__ = ["COMPILE_SOURCE", "KernelReport", "compile_file", "log_verdict", "resource_summary", "verdict_findings"]

COMPILE_SOURCE = "tritonsmith-verify"
COMPILE_TIMEOUT_S = 300.0


@dataclass
class KernelReport:
    """The compile outcome of one kernel: the worker's answer plus derived findings."""

    kernel: str
    ok: bool
    error: str | None = None  # the job failed as a whole (worker lost, extraction failed, ...)
    results: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    row: int = 0  # the kernel's `def` line, where a code lens goes


def _span(document: Document, rng: dict[str, Any] | None) -> Span | None:
    if not rng:
        return None
    (r1, c1), (r2, c2) = rng["start"], rng["end"]
    return Span((r1, c1), (r2, c2), document.offset(r1, c1), document.offset(r2, c2))


def resource_summary(entry: dict[str, Any]) -> str:
    """"sm_90 · Config #1: 128 regs, 0 spills, 48 KB smem, 2 blocks/SM" for a compiled entry."""
    res = entry.get("resources") or {}
    parts = []
    if res.get("registers") is not None:
        parts.append(f"{res['registers']} regs")
    if res.get("spills") is not None:
        parts.append(f"{res['spills']} spills")
    if res.get("shared") is not None:
        parts.append(f"{round(res['shared'] / 1024)} KB smem")
    if res.get("blocks_per_sm") is not None:
        parts.append(f"{res['blocks_per_sm']} blocks/SM")
    return f"{entry.get('target')} · {entry.get('config')}: " + ", ".join(parts)


def _findings(document: Document, kernel: str, result: dict[str, Any], kernel_span: Span) -> list[Finding]:
    out: list[Finding] = []
    for entry in result.get("results", []):
        where = f"{entry.get('target')}, {entry.get('config')}"
        error = entry.get("error")
        if error:
            span = _span(document, error.get("range")) or _span(document, entry.get("origin")) or kernel_span
            rules = error.get("rules") or []
            message = (error.get("message") or "compilation failed").strip().splitlines()
            text = message[-1] if message else "compilation failed"
            # Inside a jit helper: the call sites that led there, outermost last.
            related = tuple(
                Related(found, str(r.get("message") or "called from here"))
                for r in error.get("related") or [] if (found := _span(document, r.get("range"))) is not None
            )
            out.append(
                Finding(
                    code=rules[0] if rules else "compile-error",
                    name="compile-error",
                    severity=Severity.ERROR,
                    message=f"Triton cannot compile {kernel} ({where}): {text}",
                    span=span,
                    related=related,
                )
            )
            continue
        resources = entry.get("resources") or {}
        origin = _span(document, entry.get("origin")) or kernel_span
        if entry.get("launch_error") or resources.get("exceeds_shared"):
            out.append(
                Finding(
                    code="shared-memory-exceeded",
                    name="shared-memory-exceeded",
                    severity=Severity.ERROR,
                    message=entry.get("launch_error")
                    or f"{where} needs {resources.get('shared')} bytes of shared memory, more than "
                    f"the target allows ({resources.get('shared_limit')}): it fails at launch",
                    span=origin,
                )
            )
        elif resources.get("spills"):
            out.append(
                Finding(
                    code="register-spills",
                    name="register-spills",
                    severity=Severity.WARNING,
                    message=f"{where} spills {resources['spills']} bytes of registers to local memory "
                    "(slow): use smaller tiles or fewer stages",
                    span=origin,
                )
            )
    return out


def verdict_findings(document: Document, verdict: Verdict) -> list[Finding]:
    """A failed check against the reference as findings: each static rejection at its line,
    any other failure on the name of what was verified (`ModelNew` or the launcher)."""
    findings = []
    for rejection in verdict.rejections:
        row = max(rejection.line - 1, 0)
        line = document.line(row)
        start = len(line) - len(line.lstrip())
        span = Span((row, start), (row, len(line)), document.offset(row, start), document.offset(row, len(line)))
        findings.append(Finding("verification-rejected", "verification-rejected", Severity.ERROR,
                                f"rejected: {rejection.describe()}", span))
    if not verdict.rejections:
        findings.append(Finding("verification-failed", "verification-failed", Severity.ERROR,
                                f"{verdict.name} failed verification ({verdict.mode}, {verdict.stage}): {verdict.message}",
                                _definition_name(document, verdict.name)))
    return findings


def _definition_name(document: Document, name: str) -> Span:
    for node in document.root.named_children:
        definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
        if definition is None or definition.type not in ("class_definition", "function_definition"):
            continue
        found = definition.child_by_field_name("name")
        if found is not None and found.text == name.encode():
            return Span.of(found)
    return Span((0, 0), (0, 0), 0, 0)


def log_verdict(log: FailureLog, path: str, verdict: Verdict, *, source: str | None = None,
                stage_prefix: str = "verify", kernel: str | None = None) -> None:
    """A failed verification goes into the failure log too (stage "verify:<stage>"), for the
    adaptation work: which tricks and mistakes recur. `source` is the file as verified (read
    from `path` when not given), for the snippet and the hash of what was verified."""
    if verdict.ok:
        return
    if source is None:
        try:
            source = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            source = None
    snippet = digest = None
    if source is not None:
        document = Document(source)
        row = verdict.rejections[0].line - 1 if verdict.rejections else _definition_name(document, verdict.name).start[0]
        snippet = _snippet(document, row, row)
        # The hash of the kernel (or of what was verified): the top-level definition holding its name.
        name_row = _definition_name(document, kernel or verdict.name).start[0]
        node = next((n for n in document.root.named_children if n.start_point[0] <= name_row <= n.end_point[0]), None)
        digest = kernel_hash(node.text.decode("utf-8", "replace") if node is not None and node.text else source)
    log.record(path=path, kernel=kernel or verdict.name, stage=f"{stage_prefix}:{verdict.stage}",
               message=verdict.message, rules=[], target=verdict.mode, snippet=snippet, kernel_hash=digest,
               triton_version=_installed_version())


def _installed_version() -> str | None:
    found = installed_triton_version()
    return f"{found[0]}.{found[1]}" if found else None


def _snippet(document: Document, first: int, last: int, limit: int = 6) -> str | None:
    """The source lines `first`..`last` (0-based rows), at most `limit` of them."""
    rows = range(max(first, 0), min(last, first + limit - 1, document.line_count - 1) + 1)
    text = "\n".join(document.line(r).decode("utf-8", "replace").rstrip("\r\n") for r in rows)
    return text if text.strip() else None


def _log_failures(log: FailureLog, path: str, kernel: str, results: list[dict[str, Any]], *,
                  document: Document | None = None, kernel_source: str | None = None,
                  triton_version: str | None = None) -> None:
    """Each failing entry, with the source lines at the error, the kernel's hash and the Triton
    version it failed with."""
    digest = kernel_hash(kernel_source) if kernel_source is not None else None
    for entry in results:
        error = entry.get("error")
        if not error:
            continue
        where = error.get("range") or entry.get("origin")
        snippet = _snippet(document, where["start"][0], where["end"][0]) if document is not None and where else None
        log.record(
            path=path, kernel=kernel, stage="compile", target=entry.get("target"), config=entry.get("config"),
            message=str(error.get("message") or error.get("text") or "compilation failed"),
            rules=list(error.get("rules") or []), snippet=snippet, kernel_hash=digest,
            triton_version=triton_version or _installed_version(),
        )


def _match_learned(results: list[dict[str, Any]], rules: list[Rule], version: str | None) -> None:
    """Add the codes of the workspace's learned rules whose signatures match each error."""
    if not rules:
        return
    from .compile import match_rules

    parsed = None
    with contextlib.suppress(ValueError):
        parsed = parse_version(version) if version else None
    for entry in results:
        error = entry.get("error")
        if not error:
            continue
        text = f"{error.get('message') or ''}\n{error.get('text') or ''}"
        codes = list(error.get("rules") or [])
        error["rules"] = codes + [c for c in match_rules(text, parsed, rules=rules) if c not in codes]


def compile_file(
    pool: WorkerPool,
    source: str,
    *,
    path: str,
    targets: list[str],
    kernels: list[str] | None = None,
    timeout_s: float = COMPILE_TIMEOUT_S,
    cancel_event: Any = None,
    failure_log: FailureLog | None = None,
    rules: list[Rule] | None = None,
) -> list[KernelReport]:
    """Compile every launched kernel of `source` (or the named ones) for every target; record
    each compiler failure in `failure_log` when one is given. Errors are labelled with the codes
    of the builtin rules whose signatures match (in the worker) and of `rules`, the workspace's
    learned rules (by default those of the failure log's workspace, `.tritonsmith/rules.toml`)."""
    if rules is None and failure_log is not None:
        rules = active_learned(failure_log.root)
    document = Document(source)
    index = index_module(document.root)
    chosen = [k for k in index.kernels if (k.name in kernels if kernels else k.launches or k.autotune)]
    if not chosen and not kernels:
        # No launch in this file: every kernel that no other jit function calls is an entry.
        callees = index.jit_callees()
        chosen = [k for k in index.kernels if k.name not in callees]
    jobs = [
        (kernel, Job(kind="compile", timeout_s=timeout_s,
                     payload={"source": source, "path": path, "kernel": kernel.name, "targets": targets}))
        for kernel in chosen
    ]
    # One job per kernel, as many at once as the pool has workers (compiles are independent).
    with ThreadPoolExecutor(max_workers=max(1, min(pool.size, len(jobs)))) as executor:
        results = list(executor.map(lambda pair: pool.run(pair[1], cancel_event=cancel_event), jobs))
    reports: list[KernelReport] = []
    for (kernel, _), result in zip(jobs, results, strict=True):
        name_node = kernel.node.child_by_field_name("name") or kernel.node
        kernel_span = Span.of(name_node)
        report = KernelReport(kernel=kernel.name, ok=False, row=kernel.node.start_point[0])
        if not result.ok:
            report.error = result.error or "the compile job failed"
            report.findings = [
                Finding("compile-error", "compile-error", Severity.ERROR,
                        f"could not compile {kernel.name}: {report.error}", kernel_span)
            ]
        else:
            payload = result.payload
            report.results = list(payload.get("results", []))
            _match_learned(report.results, rules or [], payload.get("triton_version"))
            report.skipped = list(payload.get("skipped", []))
            report.findings = _findings(document, kernel.name, payload, kernel_span)
            if payload.get("error"):  # failed before compiling: extraction, import of the cut module
                error = payload["error"]
                report.error = str(error.get("message") if isinstance(error, dict) else error)
                span = _span(document, error.get("range")) if isinstance(error, dict) else None
                report.findings.append(
                    Finding("compile-error", "compile-error", Severity.ERROR,
                            f"could not compile {kernel.name}: {report.error}", span or kernel_span)
                )
            report.ok = bool(payload.get("ok")) and not report.findings
            if failure_log is not None:
                _log_failures(failure_log, path, kernel.name, report.results, document=document,
                              kernel_source=kernel.outer.text.decode("utf-8", "replace") if kernel.outer.text else None,
                              triton_version=payload.get("triton_version"))
        reports.append(report)
    return reports
