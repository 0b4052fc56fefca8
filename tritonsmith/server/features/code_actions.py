"""`textDocument/codeAction`: quick fixes, "ignore this rule on this line", and
`source.fixAll.tritonsmith` (every mechanical fix in the file, as `check --fix` does)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from lsprotocol import types

from ...analysis import Document
from ...rules import Edit, Finding, Span
from ...rules.fixes import fix_edits
from ..convert import to_lsp_diagnostic, to_lsp_text_edit
from ..server import OpenDocument, TritonsmithServer

__all__ = ["FIX_ALL_KIND", "ignore_edit", "register"]

FIX_ALL_KIND = "source.fixAll.tritonsmith"
_IGNORE_COMMENT = re.compile(rb"#\s*tritonsmith:\s*ignore\[([^\]]*)\]")


def ignore_edit(document: Document, finding: Finding) -> Edit:
    """Add the rule's code to the line's `# tritonsmith: ignore[...]`, or append one."""
    row = finding.span.start[0]
    line = document.line(row)
    line_start = document.offset(row, 0)
    match = _IGNORE_COMMENT.search(line)
    if match is not None:
        codes = [c.strip() for c in match.group(1).decode().split(",") if c.strip()]
        codes.append(finding.code)
        start, end = match.span(1)
        span = Span((row, start), (row, end), line_start + start, line_start + end)
        return Edit(span, ", ".join(codes))
    end_col = len(line.rstrip())
    span = Span((row, end_col), (row, len(line)), line_start + end_col, line_start + len(line))
    return Edit(span, f"  # tritonsmith: ignore[{finding.code}]")


def _workspace_edit(ls: TritonsmithServer, state: OpenDocument, edits: list[Edit]) -> types.WorkspaceEdit:
    text_edits = [to_lsp_text_edit(state.document, e) for e in edits]
    caps = ls.client_capabilities.workspace
    document_changes = bool(caps and caps.workspace_edit and caps.workspace_edit.document_changes)
    if document_changes:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=state.uri, version=state.version),
                    edits=text_edits,
                )
            ]
        )
    return types.WorkspaceEdit(changes={state.uri: text_edits})


def _wanted(only: Sequence[str] | None, kind: str) -> bool:
    if not only:
        return True
    return any(kind == k or kind.startswith(k + ".") for k in only)


def register(server: TritonsmithServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=False
        ),
    )
    def code_action(ls: TritonsmithServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        state = ls.documents.get(params.text_document.uri)
        if state is None:
            return None
        ls.ensure_checked(state)
        only = params.context.only
        actions: list[types.CodeAction] = []
        if _wanted(only, types.CodeActionKind.QuickFix):
            start = state.document.lsp_to_point(params.range.start.line, params.range.start.character)
            end = state.document.lsp_to_point(params.range.end.line, params.range.end.character)
            for finding in state.findings:
                if finding.span.end < start or finding.span.start > end:
                    continue
                diagnostic = to_lsp_diagnostic(state.uri, state.document, finding)
                if finding.fix is not None:
                    actions.append(
                        types.CodeAction(
                            title=f"{finding.fix.title} ({finding.code})",
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=[diagnostic],
                            is_preferred=True,
                            edit=_workspace_edit(ls, state, list(finding.fix.edits)),
                        )
                    )
                actions.append(
                    types.CodeAction(
                        title=f"Ignore {finding.code} on this line",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        edit=_workspace_edit(ls, state, [ignore_edit(state.document, finding)]),
                    )
                )
        if only and _wanted(only, FIX_ALL_KIND) and any(k.startswith("source") for k in only):
            edits = fix_edits(state.findings)
            if edits:
                actions.append(
                    types.CodeAction(
                        title="Fix all tritonsmith problems",
                        kind=FIX_ALL_KIND,
                        edit=_workspace_edit(ls, state, edits),
                    )
                )
        return actions

