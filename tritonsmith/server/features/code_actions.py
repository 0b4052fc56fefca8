"""`textDocument/codeAction`: quick fixes, "ignore this rule on this line",
`source.fixAll.tritonsmith` (every mechanical fix in the file, as `check --fix` does), and
"Create verification harness" on a launcher without one (docs/harness.md): a `refactor.rewrite`
action on the launcher, so that it shows in the lightbulb, and `source.createHarness.tritonsmith`
anywhere in the file; and "Optimize this kernel" (`refactor.rewrite.optimize.tritonsmith`, from
`optimize.py`: pygls takes one handler per method)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types

from ...analysis import Document
from ...rules import Finding, Span, SpanEdit
from ...rules.fixes import fix_edits
from ..convert import to_lsp_diagnostic, to_lsp_text_edit
from ..server import TritonsmithServer
from ..session import OpenDocument
from .optimize import OPTIMIZE_KIND, optimize_actions

if TYPE_CHECKING:
    from ...evaluator.scaffold import Scaffold

__all__ = ["CREATE_HARNESS_KIND", "CREATE_HARNESS_TITLE", "FIX_ALL_KIND", "ignore_edit", "register"]

FIX_ALL_KIND = "source.fixAll.tritonsmith"
CREATE_HARNESS_KIND = "source.createHarness.tritonsmith"
CREATE_HARNESS_TITLE = "Create verification harness"
_IGNORE_COMMENT = re.compile(rb"#\s*tritonsmith:\s*ignore\[([^\]]*)\]")


def ignore_edit(document: Document, finding: Finding) -> SpanEdit:
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
        return SpanEdit(span, ", ".join(codes))
    end_col = len(line.rstrip())
    span = Span((row, end_col), (row, len(line)), line_start + end_col, line_start + len(line))
    return SpanEdit(span, f"  # tritonsmith: ignore[{finding.code}]")


def _workspace_edit(ls: TritonsmithServer, state: OpenDocument, edits: list[SpanEdit]) -> types.WorkspaceEdit:
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


def _scaffold_edits(scaffold: Scaffold) -> list[SpanEdit]:
    return [SpanEdit(Span(i.point, i.point, i.offset, i.offset), i.text) for i in scaffold.insertions]


def _harness_actions(
    ls: TritonsmithServer, state: OpenDocument, params: types.CodeActionParams
) -> list[types.CodeAction]:
    """"Create verification harness": on the launcher under the range (`refactor.rewrite`, for
    the lightbulb) and, when source actions are asked for, for each launcher without a harness."""
    only = params.context.only
    rewrite = _wanted(only, types.CodeActionKind.RefactorRewrite)
    source = bool(only) and _wanted(only, CREATE_HARNESS_KIND)
    if not (rewrite or source):
        return []
    # Imported on the first such request, not at start-up (the evaluator package is ~40 ms).
    from ...evaluator.scaffold import find_launchers, launcher_at, scaffold_harness

    launchers = [found for found in find_launchers(state.document, index=state.index) if not found.has_harness]
    if not launchers:
        return []
    start = state.document.lsp_to_point(params.range.start.line, params.range.start.character)
    end = state.document.lsp_to_point(params.range.end.line, params.range.end.character)
    here = launcher_at(launchers, start, end)
    actions: list[types.CodeAction] = []
    if rewrite and here is not None:
        scaffold = scaffold_harness(state.document, here.name, index=state.index)
        if scaffold is not None:
            actions.append(types.CodeAction(
                title=CREATE_HARNESS_TITLE,
                kind=types.CodeActionKind.RefactorRewrite,
                edit=_workspace_edit(ls, state, _scaffold_edits(scaffold)),
            ))
    if source:
        for launcher in [here] if here is not None else launchers:
            scaffold = scaffold_harness(state.document, launcher.name, index=state.index)
            if scaffold is None:
                continue
            title = CREATE_HARNESS_TITLE if here is not None or len(launchers) == 1 \
                else f"{CREATE_HARNESS_TITLE} for {launcher.name}()"
            actions.append(types.CodeAction(
                title=title, kind=CREATE_HARNESS_KIND, edit=_workspace_edit(ls, state, _scaffold_edits(scaffold))
            ))
    return actions


def _wanted(only: Sequence[str] | None, kind: str) -> bool:
    if not only:
        return True
    return any(kind == k or kind.startswith(k + ".") for k in only)


def register(server: TritonsmithServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[
                types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite, FIX_ALL_KIND, CREATE_HARNESS_KIND,
                OPTIMIZE_KIND,
            ],
            resolve_provider=False,
        ),
    )
    def code_action(ls: TritonsmithServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        state = ls.session.documents.get(params.text_document.uri)
        if state is None:
            return None
        ls.session.current_index(state)
        only = params.context.only
        actions: list[types.CodeAction] = []
        if _wanted(only, types.CodeActionKind.QuickFix):
            start = state.document.lsp_to_point(params.range.start.line, params.range.start.character)
            end = state.document.lsp_to_point(params.range.end.line, params.range.end.character)
            for finding in ls.session.findings_near(state, start, end):
                diagnostic = to_lsp_diagnostic(state.uri, state.document, finding, href=ls.session.rule_pages.href(finding.code))
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
            # The lightbulb offers the file's other mechanical fixes too, not only Source Action
            # (once the whole file is checked: a lightbulb never waits for a long check).
            fixable = [] if state.dirty else [f for f in state.findings if f.fix is not None]
            if len(fixable) > 1 and any(a.is_preferred for a in actions):
                actions.append(
                    types.CodeAction(
                        title=f"Fix all tritonsmith problems in this file ({len(fixable)})",
                        kind=types.CodeActionKind.QuickFix,
                        edit=_workspace_edit(ls, state, fix_edits(state.findings)),
                    )
                )
        if only and _wanted(only, FIX_ALL_KIND) and any(k.startswith("source") for k in only):
            ls.session.ensure_checked(state)  # asked for by name: every finding of the file
            edits = fix_edits(state.findings)
            if edits:
                actions.append(
                    types.CodeAction(
                        title="Fix all tritonsmith problems",
                        kind=FIX_ALL_KIND,
                        edit=_workspace_edit(ls, state, edits),
                    )
                )
        actions += _harness_actions(ls, state, params)
        actions += optimize_actions(ls, state, params, _wanted(only, OPTIMIZE_KIND))
        return actions

