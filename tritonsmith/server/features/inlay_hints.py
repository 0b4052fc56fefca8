"""`textDocument/inlayHint`: each assignment's inferred type and shape inside kernels, like
Pylance's inferred types (`acc = tl.zeros(...)  : fp32[BLOCK_M=64, BLOCK_N=128]`). Off by
default (the `inlayHints` setting); the types are those of the kernel's first launch site or
Config (rules/types_at.py)."""

from __future__ import annotations

from lsprotocol import types

from ...rules.types_at import assignment_types
from ..convert import to_lsp_range
from ..server import TritonsmithServer

__all__ = ["register"]


def register(server: TritonsmithServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
    def inlay_hints(ls: TritonsmithServer, params: types.InlayHintParams) -> list[types.InlayHint]:
        if not ls.session.workspace.settings.inlay_hints:
            return []
        state = ls.session.documents.get(params.text_document.uri)
        if state is None:
            return []
        ls.session.current_index(state)  # kernels and types only: no need to wait for the rules
        if state.index is None:
            return []
        rows = (params.range.start.line, params.range.end.line)
        try:
            found = assignment_types(state.document.root, state.document.source, state.index, rows,
                                     ls.session.workspace.version)
        except Exception:  # noqa: BLE001 - hints never take the server down
            return []
        return [types.InlayHint(position=to_lsp_range(state.document, span).end, label=f": {render}",
                                kind=types.InlayHintKind.Type, padding_left=False)
                for span, render in found]
