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

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..adapt import FailureLog
from ..analysis import Document, index_module
from ..rules import Finding, Severity, Span
from ..rules.findings import Related
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


def log_verdict(log: FailureLog, path: str, verdict: Verdict) -> None:
    """A failed verification goes into the failure log too (stage "verify:<stage>"), for the
    adaptation work: which tricks and mistakes recur."""
    if not verdict.ok:
        log.record(path=path, kernel=verdict.name, stage=f"verify:{verdict.stage}",
                   message=verdict.message, rules=[], target=verdict.mode)


def _log_failures(log: FailureLog, path: str, kernel: str, results: list[dict[str, Any]]) -> None:
    for entry in results:
        error = entry.get("error")
        if not error:
            continue
        log.record(
            path=path, kernel=kernel, stage="compile", target=entry.get("target"), config=entry.get("config"),
            message=str(error.get("message") or error.get("text") or "compilation failed"),
            rules=list(error.get("rules") or []),
        )


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
) -> list[KernelReport]:
    """Compile every launched kernel of `source` (or the named ones) for every target; record
    each compiler failure in `failure_log` when one is given."""
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
                _log_failures(failure_log, path, kernel.name, report.results)
        reports.append(report)
    return reports
