"""Conversions between tritonsmith's findings and LSP types (the only place that maps them)."""

from __future__ import annotations

from lsprotocol import types

from ..analysis import Document
from ..rules import Finding, Severity, Span, SpanEdit

__all__ = ["to_lsp_diagnostic", "to_lsp_range", "to_lsp_text_edit"]

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFORMATION: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


def to_lsp_range(document: Document, span: Span) -> types.Range:
    start = document.point_to_lsp(*span.start)
    end = document.point_to_lsp(*span.end)
    return types.Range(types.Position(*start), types.Position(*end))


def to_lsp_text_edit(document: Document, edit: SpanEdit) -> types.TextEdit:
    return types.TextEdit(range=to_lsp_range(document, edit.span), new_text=edit.new_text)


def to_lsp_diagnostic(
    uri: str, document: Document, finding: Finding, *, source: str = "tritonsmith", href: str | None = None
) -> types.Diagnostic:
    """`href`: the rule's page (`rule_pages.RulePages`), linked from the code. A secondary
    finding (the launch value behind a kernel's error) is a hint: shown in the editor, where
    its quick fixes are, but not a second entry for one mistake in the Problems panel."""
    return types.Diagnostic(
        range=to_lsp_range(document, finding.span),
        severity=types.DiagnosticSeverity.Hint if finding.secondary else _SEVERITY[finding.severity],
        code=finding.code,
        code_description=types.CodeDescription(href=href) if href else None,
        source=source,
        message=finding.message,
        related_information=[
            types.DiagnosticRelatedInformation(
                location=types.Location(uri=uri, range=to_lsp_range(document, r.span)), message=r.message
            )
            for r in finding.related
        ]
        or None,
        data={"name": finding.name, "fixable": finding.fix is not None},
    )
