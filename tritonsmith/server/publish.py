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

from .convert import to_lsp_diagnostic

if TYPE_CHECKING:
    from .server import OpenDocument, TritonsmithServer

__all__ = ["clear", "diagnostics_of", "publish", "refresh"]


def diagnostics_of(state: OpenDocument) -> list[types.Diagnostic]:
    return [to_lsp_diagnostic(state.uri, state.document, f) for f in state.findings]


def publish(server: TritonsmithServer, state: OpenDocument) -> None:
    if server.pull_diagnostics:
        return
    server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=state.uri, version=state.version, diagnostics=diagnostics_of(state))
    )


def clear(server: TritonsmithServer, uri: str) -> None:
    if not server.pull_diagnostics:
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def refresh(server: TritonsmithServer) -> None:
    """After rules or settings changed: ask a pulling client to pull every document again."""
    if server.pull_diagnostics and server.supports_refresh:
        server.workspace_diagnostic_refresh(None)
