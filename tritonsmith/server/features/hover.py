"""`textDocument/hover` on a diagnostic: the rule's statement, how to fix it, and its examples."""

from __future__ import annotations

from lsprotocol import types

from ...rules.docs import rule_markdown
from ..convert import to_lsp_range
from ..server import TritonsmithServer

__all__ = ["register"]


def register(server: TritonsmithServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: TritonsmithServer, params: types.HoverParams) -> types.Hover | None:
        state = ls.documents.get(params.text_document.uri)
        if state is None:
            return None
        ls.ensure_checked(state)
        point = state.document.lsp_to_point(params.position.line, params.position.character)
        for finding in state.findings:
            if finding.span.start <= point <= finding.span.end:
                rule = ls.workspace_state.rules.get(finding.code)
                if rule is None:
                    continue
                body = f"**{finding.message}**\n\n---\n\n" + rule_markdown(rule).split("\n", 1)[1]
                body = f"### {rule.code} `{rule.name}`\n" + body
                return types.Hover(
                    contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=body),
                    range=to_lsp_range(state.document, finding.span),
                )
        return None
