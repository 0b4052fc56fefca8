"""The one publisher of diagnostics: push (`publishDiagnostics`) or pull, chosen at initialize.

With pull (the client advertises `textDocument/diagnostic`), the client pulls after each edit
and the pull handler in `features/diagnostics.py` serves the findings, checking first if the
document is dirty; only a change of rules or settings asks it to pull again
(`workspace/diagnostic/refresh`). Without pull, every check pushes. Never both: clients would
show each diagnostic twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from .compile_findings import COMPILE_SOURCE, live, merge
from .convert import to_lsp_diagnostic

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from .session import OpenDocument, Session

__all__ = ["BOTH_SOURCES", "clear", "diagnostics_of", "publish", "refresh"]

BOTH_SOURCES = f"tritonsmith, {COMPILE_SOURCE}"  # a rule's finding the compiler confirmed


def diagnostics_of(session: Session, state: OpenDocument) -> list[types.Diagnostic]:
    """Static findings and the last save's compile findings (source `tritonsmith-verify`) that
    are still true of the text (`compile_findings.live`); a compile finding a static one
    already reports (same rule, same line) is that one entry, naming both sources."""
    settings = session.workspace.settings
    now = live(state.compile_findings, state.document.source, state.index)
    compiled, both = merge(state.findings, [f for f in now if wanted(f.code, f.name, settings.select, settings.ignore)])
    href = session.rule_pages.href
    static = [to_lsp_diagnostic(state.uri, state.document, f, source=BOTH_SOURCES if i in both else "tritonsmith",
                                href=href(f.code)) for i, f in enumerate(state.findings)]
    return static + [to_lsp_diagnostic(state.uri, state.document, f, source=COMPILE_SOURCE, href=href(f.code))
                     for f in compiled]


def wanted(code: str, name: str, select: tuple[str, ...], ignore: tuple[str, ...]) -> bool:
    """Selection applies to compile findings matched to a rule as it does to static ones."""
    if not code.startswith("TS"):
        return True  # compiler findings with no rule (spills, shared memory) always show
    picked = lambda patterns: any(code.startswith(p) or name == p for p in patterns)  # noqa: E731
    return (not select or picked(select)) and not (ignore and picked(ignore))


def publish(session: Session, client: LanguageServer, state: OpenDocument) -> None:
    if session.pull_diagnostics:
        return
    client.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=state.uri, version=state.version, diagnostics=diagnostics_of(session, state))
    )


def clear(session: Session, client: LanguageServer, uri: str) -> None:
    if not session.pull_diagnostics:
        client.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def refresh(session: Session, client: LanguageServer) -> None:
    """After rules or settings changed: ask a pulling client to pull every document again."""
    if session.pull_diagnostics and session.supports_refresh:
        client.workspace_diagnostic_refresh(None)
