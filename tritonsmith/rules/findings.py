"""What a check reports: findings with their exact spans, related locations and fixes.

They are named tuples, not dataclasses: every cached finding below an edit is re-created with
its new position on each keystroke, and tuples are the cheapest immutable records Python has.

Spans are tree-sitter coordinates (rows and byte columns, plus byte offsets); the server and the
command line convert them at their edges. `Finding.shifted` moves a finding by whole rows and
bytes, which is how cached findings follow a kernel that moved because lines were inserted above
it.
"""

from __future__ import annotations

from typing import NamedTuple

from tree_sitter import Node

from .model import Severity

__all__ = ["SpanEdit", "Finding", "Fix", "Related", "Span"]


class Span(NamedTuple):
    start: tuple[int, int]
    end: tuple[int, int]
    start_byte: int
    end_byte: int

    @classmethod
    def of(cls, node: Node) -> Span:
        return cls(
            start=(node.start_point[0], node.start_point[1]),
            end=(node.end_point[0], node.end_point[1]),
            start_byte=node.start_byte,
            end_byte=node.end_byte,
        )

    @classmethod
    def between(cls, first: Node, last: Node) -> Span:
        return cls(
            start=(first.start_point[0], first.start_point[1]),
            end=(last.end_point[0], last.end_point[1]),
            start_byte=first.start_byte,
            end_byte=last.end_byte,
        )

    @classmethod
    def at(cls, node: Node, *, end: bool = False) -> Span:
        """An empty span at the start (or end) of a node: where an insertion goes."""
        point = node.end_point if end else node.start_point
        offset = node.end_byte if end else node.start_byte
        return cls(start=(point[0], point[1]), end=(point[0], point[1]), start_byte=offset, end_byte=offset)

    def shifted(self, rows: int, offset: int) -> Span:
        return Span(
            start=(self.start[0] + rows, self.start[1]),
            end=(self.end[0] + rows, self.end[1]),
            start_byte=self.start_byte + offset,
            end_byte=self.end_byte + offset,
        )


class SpanEdit(NamedTuple):
    """A fix's edit: the text of `span` becomes `new_text` (a search's edit is another thing,
    `search.model.Edit`: one occurrence of a string replaced)."""

    span: Span
    new_text: str

    def shifted(self, rows: int, offset: int) -> SpanEdit:
        return SpanEdit(self.span.shifted(rows, offset), self.new_text)


class Fix(NamedTuple):
    title: str
    edits: tuple[SpanEdit, ...]

    def shifted(self, rows: int, offset: int) -> Fix:
        return Fix(self.title, tuple(e.shifted(rows, offset) for e in self.edits))


class Related(NamedTuple):
    span: Span
    message: str


class Finding(NamedTuple):
    code: str
    name: str
    severity: Severity
    message: str
    span: Span
    related: tuple[Related, ...] = ()
    fix: Fix | None = None
    # The same mistake seen from a second place (the launch keyword behind a kernel's error,
    # pointing back at it): editors show it as a hint there, so the mistake is one problem.
    secondary: bool = False

    def shifted(self, rows: int, offset: int) -> Finding:
        if rows == 0 and offset == 0:
            return self
        # Called for every cached finding below an edit: construct directly (no `replace`).
        return Finding(
            self.code,
            self.name,
            self.severity,
            self.message,
            self.span.shifted(rows, offset),
            tuple(Related(r.span.shifted(rows, offset), r.message) for r in self.related) if self.related else (),
            self.fix.shifted(rows, offset) if self.fix else None,
            self.secondary,
        )
