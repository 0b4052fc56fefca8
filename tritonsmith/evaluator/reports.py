"""Compile reports: run compile jobs for a file's kernels and turn the results into findings.

Shared by `tritonsmith verify` and the server's save handler. A worker returns, per kernel,
one entry per target × config (see `compile.handle_compile`); this module turns failing entries
into `Finding`s at the exact source range (with the matched rule's code when a rule's signature
matches the compiler's message), a Config that needs more shared memory than the target has
into an error on that Config (a warning when Triton's autotuner would skip it for another that
fits), spills into a warning, and successful entries into one-line resource summaries for code
lenses and the command line, naming the argument types the compile had to assume.

Around the check against the reference (verify.py): `correctness_blockers` says whether the
compile allows it (only a kernel that truly cannot launch stops it), `skipped_verdicts` says why
when it does not run, and `settle_reports` compiles again with the argument types recorded at
the launches and tells an interpreter limitation from a kernel bug.

Nothing here imports torch or triton: the work happens in the pool's workers.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..analysis import Document, Kernel, ModuleIndex, index_module
from ..analysis.syntax import definition_name
from ..rules import Finding, Rule, Severity, Span, parse_version
from ..rules.findings import Related
from .pool import WorkerPool
from .predict import format_seconds
from .protocol import Job
from .standing import Stage
from .tracebacks import chained_blocks, frames
from .verify import Verdict

__all__ = [
    "KernelReport",
    "as_written_for",
    "compile_file",
    "correctness_blockers",
    "failure_reason",
    "lens_details",
    "lens_title",
    "recorded_launch_types",
    "resource_summary",
    "settle_reports",
    "skipped_verdicts",
    "verdict_findings",
]

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
    # The type of a job-level error ("SyntaxError", "ExtractionError", "job" for a lost worker).
    error_type: str | None = None
    # Argument types the compile assumed because nothing in the file shows them
    # ("x_ptr: *fp32"), over every target and config; empty when all were seen or recorded.
    assumed: list[str] = field(default_factory=list)
    kernel_source: str | None = None  # the kernel's definition as compiled (for the failure log)
    triton_version: str | None = None  # the worker's Triton
    recompiled: bool = False  # compiled again by `settle_reports` with the types the check recorded

    @property
    def outcome(self) -> str:
        """"failed", "not compiled" (no config could be compiled: constexpr values known only
        at run time) or "compiled": the one answer the lens, the log and the command line give."""
        if not self.ok:
            return "failed"
        return "compiled" if any(e.get("ok") for e in self.results) else "not compiled"

    def status(self) -> str:
        """"compiled", "compiled, assuming x_ptr: *fp32", "FAILED (compiled assuming ...)" or
        "not compiled (...)": what the command line prints and the code lens shows."""
        if self.outcome == "not compiled":
            return "not compiled (constexpr values known only at run time)"
        state = "compiled" if self.ok else "FAILED"
        if self.assumed:
            state += (", assuming " if self.ok else " (compiled assuming ") + ", ".join(self.assumed) + \
                ("" if self.ok else ")")
        return state


def _assumed(results: list[dict[str, Any]]) -> list[str]:
    """The assumed argument types of a kernel's entries, each once, in parameter order."""
    out: list[str] = []
    for entry in results:
        out += [a for a in entry.get("assumed") or [] if a not in out]
    return out


@dataclass(frozen=True)
class PredictedLine:
    """A kernel's predicted time as the code lens shows it ("14.4 µs predicted on H100 SXM")."""

    gpu: str  # "H100 SXM"
    time: str  # "14.4 µs", or "38 µs (3 launches)"

    def __str__(self) -> str:
        return f"predicted {self.gpu} time {self.time}"


def predicted_for(verdicts: Sequence[Verdict], kernel: str) -> PredictedLine | None:
    """The kernel's launches' predicted time in the last check's forward pass
    (evaluator/predicted.py), or None when none was predicted."""
    for verdict in verdicts:
        predicted = verdict.details.get("predicted") or {}
        prediction = predicted.get("prediction") if isinstance(predicted, dict) else None
        if not prediction:
            continue
        launches = [launch for launch in prediction.get("launches") or [] if launch.get("kernel") == kernel]
        if launches:
            seconds = sum(float(launch.get("seconds") or 0.0) for launch in launches)
            calls = f" ({len(launches)} launches)" if len(launches) > 1 else ""
            return PredictedLine(str(prediction.get("gpu") or prediction.get("target")), f"{format_seconds(seconds)}{calls}")
    return None


LENS_REASON = 60
"""A lens's reason for a failed compile is cut here; its tooltip has the whole message."""


def lens_title(report: KernelReport, predicted: PredictedLine | None = None, as_written: Mapping[str, Any] | None = None,
               *, stale: bool = False) -> str:
    """The code lens above a kernel, short enough for one line of a laptop's editor: its status
    (with a failed compile's reason), the resources of its first compiled config (or, from
    `as_written`, of its launch at the sizes as written), and its predicted time ("compiled ·
    sm_90 · 24 regs, 0 spills, 48 KB smem, 2 blocks/SM · 14.4 µs predicted on H100 SXM"). The config, the
    assumed argument types and the rest are in `lens_details`, the lens's tooltip. `stale`:
    the kernel changed since this compile."""
    compiled = [e for e in report.results if e.get("ok")]
    if report.outcome == "failed":  # the reason alone: which config, and the others' resources, on hover
        return ("edited since · " if stale else "") + f"compile failed: {_short(failure_reason(report, where=False))}" + (
            " · types assumed" if report.assumed else "")
    title = "not compiled: constexpr values known only at run time" if report.outcome == "not compiled" else "compiled"
    if as_written is not None and report.ok:
        title += f" · {as_written.get('target')} · {_resources(as_written.get('resources') or {})}"
    elif compiled:
        title += f" · {compiled[0].get('target')} · {_resources(compiled[0].get('resources') or {})}"
        if len(compiled) > 1:
            title += f" (+{len(compiled) - 1} configs)"
    if predicted:
        title += f" · {predicted.time} predicted on {predicted.gpu}"
    if report.assumed:
        title += " · types assumed"
    return ("edited since · " if stale else "") + title


def lens_details(report: KernelReport, predicted: PredictedLine | None = None, as_written: Mapping[str, Any] | None = None,
                 *, stale: bool = False) -> str:
    """The lens's tooltip: every compiled config's resources, the whole error, the assumed
    types, where the sizes came from, the predicted time."""
    lines = []
    if stale:
        lines.append("The kernel changed since this compile: it is compiled again after a pause in typing, "
                     "or on save.")
    if not report.ok:
        lines.append(f"compile failed: {failure_reason(report)}")
    if as_written is not None:
        blocks = ", ".join(f"{k}={v}" for k, v in (as_written.get("constexprs") or {}).items())
        lines.append(f"at the sizes as written{f' ({blocks})' if blocks else ''}: {as_written.get('target')} · "
                     f"{_resources(as_written.get('resources') or {})}")
    for entry in report.results:
        if entry.get("ok"):
            line = resource_summary(entry)
            if "as launched in the check run" in str(entry.get("config")):
                line += " (the check run's sizes, scaled down under the interpreter)"
            lines.append(line)
    if predicted:
        lines.append(str(predicted))
    if report.assumed:
        lines.append(f"assuming {', '.join(report.assumed)} (nothing in the file shows these types; a check run "
                     "records them)")
    return "\n".join(lines)


def failure_reason(report: KernelReport, *, where: bool = True) -> str:
    """A failed compile's reason: the job's error, else the first failing config's (with the
    target and config it failed for, unless `where` is false)."""
    if report.error:
        return report.error.strip().splitlines()[0]
    for entry in report.results:
        error = entry.get("error")
        if not entry.get("ok") and error:
            text = str(error.get("message") or error.get("type") or "") if isinstance(error, dict) else str(error)
            message = next((line.strip() for line in reversed(text.strip().splitlines()) if line.strip()), "")
            return f"{message} ({entry.get('target')} · {entry.get('config')})" if where else message
    return "see the Problems panel"


def _short(text: str) -> str:
    return text if len(text) <= LENS_REASON else text[:LENS_REASON - 1].rstrip() + "…"


def as_written_for(verdicts: Sequence[Verdict], kernel: str) -> Mapping[str, Any] | None:
    """The kernel's compile at the sizes as written, from the last check's predicted time
    (`PredictedTime.compiled`), when that profile ran at the sizes as written."""
    for verdict in verdicts:
        predicted = verdict.details.get("predicted") or {}
        if not isinstance(predicted, dict) or not predicted.get("compiled"):
            continue
        sizes = predicted.get("sizes") or {}
        if all(list(pair)[:1] == list(pair)[1:2] for pair in sizes.values()) and kernel in predicted["compiled"]:
            return predicted["compiled"][kernel]
    return None


def _span(document: Document, rng: dict[str, Any] | None) -> Span | None:
    if not rng:
        return None
    (r1, c1), (r2, c2) = rng["start"], rng["end"]
    return Span((r1, c1), (r2, c2), document.offset(r1, c1), document.offset(r2, c2))


def resource_summary(entry: dict[str, Any]) -> str:
    """"sm_90 · Config #1: 128 regs, 0 spills, 48 KB smem, 2 blocks/SM" for a compiled entry."""
    return f"{entry.get('target')} · {entry.get('config')}: " + _resources(entry.get("resources") or {})


def _resources(res: Mapping[str, Any]) -> str:
    """"128 regs, 0 spills, 48 KB smem, 2 blocks/SM"."""
    parts = []
    if res.get("registers") is not None:
        parts.append(f"{res['registers']} regs")
    if res.get("spills") is not None:
        parts.append(f"{res['spills']} spills")
    if res.get("shared") is not None:
        parts.append(f"{round(res['shared'] / 1024)} KB smem")
    if res.get("blocks_per_sm") is not None:
        parts.append(f"{res['blocks_per_sm']} blocks/SM")
    return ", ".join(parts)


_PRUNED_ERRORS = frozenset({"OutOfResources", "CompileTimeAssertionFailure", "PTXASError"})
"""What Triton's autotuner catches while benchmarking a Config: that Config is skipped."""


def pointer_assumptions(entry: dict[str, Any]) -> list[str]:
    """The pointer types one compile entry assumed ("x_ptr: *fp32")."""
    return [a for a in entry.get("assumed") or [] if ": *" in a]


def _prunable(entry: dict[str, Any], results: list[dict[str, Any]]) -> bool:
    """A Config that Triton's own autotuner would skip at run time (it needs more shared memory
    than the target has, or fails a static_assert or ptxas), while another Config of the same
    target compiles and fits: the launch goes ahead with that one."""
    if entry.get("config_index") is None or not str(entry.get("config") or "").startswith("Config"):
        return False
    error = entry.get("error")
    if error and not set(error.get("chain_types") or [error.get("type")]) & _PRUNED_ERRORS:
        return False
    return any(other is not entry and other.get("target") == entry.get("target") and other.get("ok")
               and not (other.get("resources") or {}).get("exceeds_shared")
               and str(other.get("config") or "").startswith("Config") for other in results)


def _blocks(entry: dict[str, Any], results: list[dict[str, Any]]) -> bool:
    """Whether an entry stops a launch: a compile error or a shared-memory overflow that no
    autotuner pruning avoids (a name only host code computes is the tool's limit, not this)."""
    error = entry.get("error")
    if error and error.get("unresolved"):
        return False
    failed = bool(error) or bool(entry.get("launch_error")) or bool((entry.get("resources") or {}).get("exceeds_shared"))
    return failed and not _prunable(entry, results)


def _findings(document: Document, kernel: str, result: dict[str, Any], kernel_span: Span) -> list[Finding]:
    out: list[Finding] = []
    results = result.get("results", [])
    for entry in results:
        where = f"{entry.get('target')}, {entry.get('config')}"
        error = entry.get("error")
        assumed = pointer_assumptions(entry)
        # An error under guessed pointer types may be the guess's: say so.
        hedge = f" (compiled assuming {', '.join(assumed)}: no dtype is visible at the launch)" if assumed else ""
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
            if error.get("unresolved"):
                out.append(Finding("compile-incomplete", "compile-incomplete", Severity.WARNING,
                                   f"{kernel} ({where}): {text}; it is checked when it runs", span, related=related))
            elif _prunable(entry, results):
                out.append(Finding(rules[0] if rules else "config-pruned", "config-pruned", Severity.WARNING,
                                   f"{kernel} ({where}) does not compile: {text}. Triton's autotuner skips this "
                                   "Config at run time and uses the others", span, related=related))
            else:
                out.append(
                    Finding(
                        code=rules[0] if rules else "compile-error",
                        name="compile-error",
                        severity=Severity.ERROR,
                        message=f"Triton cannot compile {kernel} ({where}): {text}{hedge}",
                        span=span,
                        related=related,
                    )
                )
            continue
        resources = entry.get("resources") or {}
        origin = _span(document, entry.get("origin")) or kernel_span
        if entry.get("launch_error") or resources.get("exceeds_shared"):
            message = entry.get("launch_error") or (
                f"{where} needs {resources.get('shared')} bytes of shared memory, more than "
                f"the target allows ({resources.get('shared_limit')}): it fails at launch")
            pruned = _prunable(entry, results)
            if pruned:
                message = message.replace("so the launch would fail (OutOfResources)",
                                          "so Triton's autotuner skips it at run time (OutOfResources) and "
                                          "uses the other Configs")
            out.append(
                Finding(
                    code="shared-memory-exceeded",
                    name="shared-memory-exceeded",
                    severity=Severity.WARNING if pruned else Severity.ERROR,
                    message=message + ("" if pruned else hedge),
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


def correctness_blockers(reports: list[KernelReport], *, has_spec: bool = True) -> list[str]:
    """Why the check against the reference must not run, one line per kernel (empty: it may).

    A kernel blocks when it truly cannot launch: a compile error or a shared-memory overflow at a
    launch site, or at every Config (Triton's autotuner skips the others), a syntax error, or a
    compile that crashed or hung its worker. Warnings never block (register spills, a Config the
    autotuner prunes, a name only host code computes), nor does a cut-out module the tool could
    not import (its limit, not the kernel's), nor a compile that ran past its time limit when the
    file has a spec (the check still runs), and neither does an error under assumed pointer types when
    the file has a spec: the check records the real types at the launch, and the kernel is
    compiled again with them (`settle_reports`)."""
    out: list[str] = []
    for report in reports:
        if report.error is not None and not report.results:
            if report.error_type in ("SyntaxError", "IndentationError", "TabError"):
                out.append(f"{report.kernel}: {report.error}")
            elif report.error_type == "job" and not (has_spec and "timeout" in report.error):
                out.append(f"{report.kernel} could not be compiled: {report.error}")  # it crashed its worker
            # A compile that ran out of time (eight 256×512 Configs take minutes on two cores) says
            # nothing against the kernel: the check runs, and the compile is reported unfinished.
            continue
        for entry in report.results:
            if not _blocks(entry, report.results) or (has_spec and pointer_assumptions(entry)):
                continue
            error = entry.get("error")
            text = ((error.get("message") or "compilation failed").strip().splitlines() or [""])[-1] \
                if error else str(entry.get("launch_error") or "it needs more shared memory than the target has")
            out.append(f"{report.kernel} does not compile for {entry.get('target')} ({entry.get('config')}): {text}")
            break
    return out


def skipped_verdicts(specs: list[Any], reasons: list[str], mode: str) -> list[Verdict]:
    """The verdict of each spec whose check did not run because a kernel does not compile:
    stage "compile", with why (so `--format json` never has an empty `verification`)."""
    why = "; ".join(reasons)
    return [Verdict(ok=False, mode=mode, trials=0, name=spec.name, row=getattr(spec, "row", 0), stage=Stage.COMPILE,
                    message=f"correctness not checked: {why}") for spec in specs]


def verdict_findings(document: Document, verdict: Verdict) -> list[Finding]:
    """A failed check against the reference as findings: each static rejection at its line,
    any other failure on the name of what was verified (`ModelNew` or the launcher). A check
    skipped because a kernel does not compile adds nothing (the compile error is there); an
    interpreter limitation is a warning, not the kernel's error."""
    if verdict.ok or verdict.stage == "compile":
        return []
    if verdict.stage == "interpreter":
        return [Finding("interpreter-limitation", "interpreter-limitation", Severity.WARNING,
                        f"{verdict.name} not verified: {verdict.message}", _definition_name(document, verdict.name))]
    syntax = verdict.details.get("syntax")
    if verdict.stage == "syntax" and isinstance(syntax, dict):
        row = min(max(int(syntax.get("line", 1)) - 1, 0), max(document.line_count - 1, 0))
        line = document.line(row)
        col = min(max(int(syntax.get("column", 1)) - 1, 0), len(line))
        span = Span((row, col), (row, len(line)), document.offset(row, col), document.offset(row, len(line)))
        return [Finding("syntax-error", "syntax-error", Severity.ERROR, verdict.message, span)]
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
    found = definition_name(document.root, name)
    return Span.of(found) if found is not None else Span((0, 0), (0, 0), 0, 0)


def _match_learned(results: list[dict[str, Any]], rules: list[Rule], version: str | None) -> None:
    """Add the codes of the workspace's learned rules whose signatures match each error."""
    if not rules:
        return
    from ..rules import match_rules

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


def kernels_to_compile(index: ModuleIndex, names: Sequence[str] | None) -> list[Kernel]:
    """The named kernels; else the launched or autotuned ones; else, in a file that launches
    nothing, every jit function that no other one calls (the entries)."""
    if names:
        return [k for k in index.kernels if k.name in names]
    chosen = [k for k in index.kernels if k.launches or k.autotune]
    if not chosen:
        callees = index.jit_callees()
        chosen = [k for k in index.kernels if k.name not in callees]
    return chosen


def compile_file(
    pool: WorkerPool,
    source: str,
    *,
    path: str,
    targets: list[str],
    kernels: list[str] | None = None,
    timeout_s: float = COMPILE_TIMEOUT_S,
    cancel_event: Any = None,
    rules: list[Rule] | None = None,
    launch_types: dict[str, dict[str, str]] | None = None,
    launch_constexprs: dict[str, dict[str, Any]] | None = None,
    frontend_only: bool = False,
    profiled: dict[str, list[dict[str, Any]]] | None = None,
) -> list[KernelReport]:
    """Compile every launched kernel of `source` (or the named ones) for every target. Errors
    are labelled with the codes of the builtin rules whose signatures match (in the worker) and
    of `rules` (the workspace's learned rules, `state.learned.active_learned`). Nothing is
    recorded here: callers log the failures (`state.record.record_compile`).
    `launch_types` (kernel -> parameter -> type, as recorded at the launches of a check run)
    override the types read from the source; `launch_constexprs` (kernel -> name -> value, as
    recorded there) fill the constexprs the source does not settle. `frontend_only`: Triton's
    code generator only (the type, shape and constexpr errors, in a fraction of a compile's
    time; no binary, so no resources): what the editor runs while the user types. `profiled`
    (kernel -> launches, `predict.launches_to_compile`) compiles exactly those launches, each
    result carrying its `launch_key`, for the predicted time."""
    document = Document(source)
    index = index_module(document.root)
    chosen = kernels_to_compile(index, kernels)
    jobs = [
        (kernel, Job(kind="compile", timeout_s=timeout_s,
                     payload={"source": source, "path": path, "kernel": kernel.name, "targets": targets,
                              **({"frontend_only": True} if frontend_only else {}),
                              **({"arg_types": launch_types[kernel.name]}
                                 if launch_types and kernel.name in launch_types else {}),
                              **({"constexpr_values": launch_constexprs[kernel.name]}
                                 if launch_constexprs and kernel.name in launch_constexprs else {}),
                              **({"launches": profiled[kernel.name],
                                  "arg_types": profiled[kernel.name][0].get("types") or {}}
                                 if profiled and kernel.name in profiled else {})}))
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
            report.error_type = "job"
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
                report.error_type = str(error.get("type") or "") if isinstance(error, dict) else "job"
                span = _span(document, error.get("range")) if isinstance(error, dict) else None
                report.findings.append(
                    Finding("compile-error", "compile-error", Severity.ERROR,
                            f"could not compile {kernel.name}: {report.error}", span or kernel_span)
                )
            # Warnings (spills, a Config the autotuner skips) leave the kernel compiled.
            report.ok = bool(report.results or report.skipped) and not report.error and \
                not any(f.severity is Severity.ERROR for f in report.findings) and \
                all(s.get("config") is not None for s in report.skipped)  # an unknown target
            report.assumed = _assumed(report.results)
            report.kernel_source = kernel.outer.text.decode("utf-8", "replace") if kernel.outer.text else None
            report.triton_version = payload.get("triton_version")
        reports.append(report)
    return reports


# -- after the check: the types recorded at the launches, and the interpreter's limits --------


def recorded_launch_types(verdicts: list[Verdict]) -> dict[str, dict[str, str]]:
    """Kernel -> parameter -> signature type, as recorded at the launches while the candidate
    ran (the candidate worker's `launch_types`; the first record of a kernel wins). An integer's
    width recorded at scaled-down sizes says nothing of the sizes as written (`n` may need i64
    there), so integers are taken only from a run at the sizes as written."""
    out: dict[str, dict[str, str]] = {}
    for verdict in verdicts:
        scaled = any(written != used for written, used in verdict.sizes.values())
        for key, payload in verdict.details.items():
            if not key.endswith(".candidate") or not isinstance(payload, dict):
                continue
            for kernel, types in (payload.get("launch_types") or {}).items():
                if isinstance(types, dict):
                    out.setdefault(str(kernel), {str(k): str(v) for k, v in types.items()
                                                 if not (scaled and str(v) in ("i32", "i64", "u64"))})
    return out


def recorded_launch_constexprs(verdicts: list[Verdict]) -> dict[str, dict[str, Any]]:
    """Kernel -> constexpr parameter -> value, as recorded at the first launch while the
    candidate ran: the values a kernel computed at run time (`BLOCK=triton.next_power_of_2(n)`)
    that the source alone cannot give the compile."""
    out: dict[str, dict[str, Any]] = {}
    for verdict in verdicts:
        for key, payload in verdict.details.items():
            if not key.endswith(".candidate") or not isinstance(payload, dict):
                continue
            for kernel, values in (payload.get("launch_constexprs") or {}).items():
                if isinstance(values, dict) and values:
                    out.setdefault(str(kernel), dict(values))
    return out


def _unknown_constexprs(report: KernelReport, values: dict[str, Any]) -> bool:
    """Whether `report` skipped a Config for constexprs unknown statically that `values` gives."""
    return any(skipped.get("missing") and all(name in values for name in skipped["missing"])
               for skipped in report.skipped)


def _retyped(report: KernelReport, types: dict[str, str]) -> bool | None:
    """None when `types` cannot improve the report; False when every compiled signature already
    has the recorded types (only the word "assumed" goes); True when a type differs."""
    if not report.results:
        return None
    differs = False
    assumed = False
    for entry in report.results:
        signature = entry.get("signature") or {}
        for name, kind in types.items():
            if name in signature and signature[name] != "constexpr" and signature[name] != kind:
                differs = True
        assumed = assumed or bool(entry.get("assumed"))
    return True if differs else (False if assumed else None)


def settle_reports(
    reports: list[KernelReport],
    verdicts: list[Verdict],
    *,
    source: str,
    path: str,
    targets: list[str],
    pool: WorkerPool | None = None,
    rules: list[Rule] | None = None,
    cancel_event: Any = None,
    timeout_s: float = COMPILE_TIMEOUT_S,
) -> list[KernelReport]:
    """The compile reports once the check against the reference has run:

    - each kernel whose compile assumed types is compiled again with the types recorded at its
      launches in the check, when they differ (an int32 buffer is `*i32`, not the `*fp32` guess),
      or loses the word "assumed" when they agree;
    - a kernel whose constexprs only the run settled is compiled with the values recorded there.

    `pool` runs the new compiles (a fresh one-worker pool when None), labelling errors with
    `rules` as `compile_file` does; the reports compiled again are marked `recompiled`."""
    recorded = recorded_launch_types(verdicts)
    constexprs = recorded_launch_constexprs(verdicts)
    redo: list[str] = []
    for report in reports:
        types = recorded.get(report.kernel)
        change = _retyped(report, types) if types else None
        if change or _unknown_constexprs(report, constexprs.get(report.kernel) or {}):
            redo.append(report.kernel)
        elif change is False and types:
            for entry in report.results:
                for name in list(entry.get("typed_from") or {}):
                    if name in types:
                        entry["typed_from"][name] = "recorded at the launch in the check run"
                entry["assumed"] = [a for a in entry.get("assumed") or [] if a.split(":", 1)[0] not in types]
            report.assumed = _assumed(report.results)
            report.findings = [_unhedged(f) for f in report.findings]
    if redo:
        own = pool is None
        active = pool if pool is not None else WorkerPool(1)
        try:
            again = compile_file(active, source, path=path, targets=targets, kernels=redo, timeout_s=timeout_s,
                                 cancel_event=cancel_event, rules=rules, launch_types=recorded,
                                 launch_constexprs=constexprs)
        finally:
            if own:
                active.close()
        for report in again:
            report.recompiled = True
        by_name = {r.kernel: r for r in again if r.results or not r.error}
        reports = [by_name.get(r.kernel, r) for r in reports]
    return reports


def _unhedged(finding: Finding) -> Finding:
    """`finding` without the note that its types were assumed (they were confirmed)."""
    marker = " (compiled assuming "
    if marker not in finding.message:
        return finding
    return finding._replace(message=finding.message.split(marker, 1)[0])


_TRITON_LIBRARY = re.compile(r"[/\\]triton[/\\](?:runtime|language|compiler|backends|_utils|tools)\b")


def _library(path: str) -> bool:
    """A frame of Python, an installed package or tritonsmith, not of the user's code."""
    if path.startswith("<") or "site-packages" in path or "dist-packages" in path:
        return True
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    return any(p and path.startswith(p + os.sep) for p in prefixes) or \
        f"{os.sep}tritonsmith{os.sep}evaluator{os.sep}" in path


def interpreter_failure(traceback_text: str, kernels: set[str]) -> tuple[str, str, str, int] | None:
    """(kernel, error, file, line) when a worker's traceback shows an error raised inside
    Triton's own interpreter or language code while it ran one of `kernels` (the error's root
    cause, not the user's own `raise`); None otherwise."""
    for block in chained_blocks(traceback_text):
        stack = frames(block)
        user = [i for i, (path, _, _) in enumerate(stack) if not _library(path)]
        launched = [i for i in user if stack[i][2] in kernels]
        if not launched:
            continue
        after = stack[user[-1] + 1:]
        if not after or not all(_TRITON_LIBRARY.search(path) for path, _, _ in after):
            return None
        lines = [line for line in block.strip().splitlines() if line.strip()]
        error = lines[-1].strip() if lines else "error"
        path, line, _ = stack[user[-1]]
        return stack[launched[0]][2], error, path, line
    return None
