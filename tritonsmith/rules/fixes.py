"""Applying fixes to source text: what `check --fix` and `source.fixAll` do."""

from __future__ import annotations

from collections.abc import Iterable

from .findings import Finding, SpanEdit

__all__ = ["apply_edits", "apply_fixes", "fix_edits"]


def apply_edits(source: bytes, edits: Iterable[SpanEdit]) -> bytes:
    """Apply non-overlapping edits; an edit that overlaps one already taken is skipped."""
    taken: list[SpanEdit] = []
    for edit in sorted(edits, key=lambda e: (e.span.start_byte, e.span.end_byte)):
        if taken and edit.span.start_byte < taken[-1].span.end_byte:
            continue
        if taken and edit.span == taken[-1].span and edit.new_text == taken[-1].new_text:
            continue
        taken.append(edit)
    out = source
    for edit in reversed(taken):
        out = out[: edit.span.start_byte] + edit.new_text.encode("utf-8") + out[edit.span.end_byte :]
    return out


def fix_edits(findings: Iterable[Finding]) -> list[SpanEdit]:
    """The edits of every finding's fix that does not collide with an earlier fix."""
    edits: list[SpanEdit] = []
    taken: list[tuple[int, int]] = []
    for finding in findings:
        if finding.fix is None:
            continue
        spans = [(e.span.start_byte, e.span.end_byte) for e in finding.fix.edits]
        if any(_overlap(span, other) for span in spans for other in taken):
            continue
        taken += spans
        edits.extend(finding.fix.edits)
    return edits


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    if a == b:
        return True
    return a[0] < b[1] and b[0] < a[1]


def apply_fixes(source: bytes, findings: Iterable[Finding]) -> bytes:
    """Apply every finding's fix whose edits do not collide with an earlier one."""
    return apply_edits(source, fix_edits(findings))
