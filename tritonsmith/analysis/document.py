"""A parsed Python document that re-parses incrementally on every edit.

`Document` owns the source text and its tree-sitter tree. Edits arrive as (range, text) pairs in
LSP terms (line and UTF-16 column); each is applied to the text and to the old tree with
`Tree.edit`, and the new tree is parsed with the old one as a hint, so an edit costs the
parser time proportional to what changed, not to the file.

Positions inside tritonsmith are tree-sitter points: (row, byte column). Conversion to LSP's
UTF-16 columns happens only at the edges (`utf16_col`, `byte_col`).
"""

from __future__ import annotations

import bisect

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Tree

__all__ = ["PY_LANGUAGE", "Document", "byte_col", "from_lsp_col", "to_lsp_col", "utf16_col"]

PY_LANGUAGE = Language(tree_sitter_python.language())


def to_lsp_col(line: bytes, byte_column: int, encoding: str = "utf-16") -> int:
    """The column of `byte_column` in the client's position encoding."""
    if encoding == "utf-8":
        return byte_column
    if encoding == "utf-32":
        return len(line[:byte_column].decode("utf-8", errors="replace"))
    return utf16_col(line, byte_column)


def from_lsp_col(line: bytes, column: int, encoding: str = "utf-16") -> int:
    """The byte column of a column in the client's position encoding (clamped to the line)."""
    if encoding == "utf-8":
        return min(column, len(line))
    if encoding == "utf-32":
        return len(line.decode("utf-8", errors="replace")[:column].encode("utf-8"))
    return byte_col(line, column)


def utf16_col(line: bytes, byte_column: int) -> int:
    """The UTF-16 column of `byte_column` in a UTF-8 encoded `line`."""
    prefix = line[:byte_column]
    if prefix.isascii():
        return len(prefix)
    text = prefix.decode("utf-8", errors="replace")
    return len(text.encode("utf-16-le")) // 2


def byte_col(line: bytes, utf16_column: int) -> int:
    """The byte column of a UTF-16 column in a UTF-8 encoded `line` (clamped to the line)."""
    if line.isascii():
        return min(utf16_column, len(line))
    text = line.decode("utf-8", errors="replace")
    units = 0
    for index, char in enumerate(text):
        if units >= utf16_column:
            return len(text[:index].encode("utf-8"))
        units += 2 if ord(char) > 0xFFFF else 1
    return len(line)


class Document:
    """Source text plus its syntax tree, kept in step by incremental edits."""

    def __init__(self, source: str | bytes, *, encoding: str = "utf-16") -> None:
        self.encoding = encoding  # the LSP position encoding of `edit` and `*_lsp` positions
        self._parser = Parser(PY_LANGUAGE)
        self.source = source.encode("utf-8") if isinstance(source, str) else source
        self._line_starts = _line_starts(self.source)
        self.tree: Tree = self._parser.parse(self.source)

    @property
    def root(self) -> Node:
        return self.tree.root_node

    @property
    def text(self) -> str:
        return self.source.decode("utf-8", errors="replace")

    def line(self, row: int) -> bytes:
        """The bytes of line `row`, without its line break."""
        if row < 0 or row >= len(self._line_starts):
            return b""
        start = self._line_starts[row]
        end = self._line_starts[row + 1] - 1 if row + 1 < len(self._line_starts) else len(self.source)
        line = self.source[start:end]
        return line[:-1] if line.endswith(b"\r") else line

    @property
    def line_count(self) -> int:
        return len(self._line_starts)

    def offset(self, row: int, column: int) -> int:
        """The byte offset of a (row, byte column) point, clamped to the document."""
        if row >= len(self._line_starts):
            return len(self.source)
        return min(self._line_starts[max(row, 0)] + column, len(self.source))

    def point(self, offset: int) -> tuple[int, int]:
        """The (row, byte column) point of a byte offset."""
        row = bisect.bisect_right(self._line_starts, offset) - 1
        return row, offset - self._line_starts[row]

    def lsp_to_point(self, line: int, character: int) -> tuple[int, int]:
        """An LSP (line, character) position as a (row, byte column) point."""
        if line >= len(self._line_starts):
            return self.point(len(self.source))
        return line, from_lsp_col(self.line(line), character, self.encoding)

    def point_to_lsp(self, row: int, column: int) -> tuple[int, int]:
        return row, to_lsp_col(self.line(row), column, self.encoding)

    def edit(self, start: tuple[int, int], end: tuple[int, int], new_text: str) -> None:
        """Replace the text between two LSP positions and re-parse incrementally."""
        start_point = self.lsp_to_point(*start)
        old_end_point = self.lsp_to_point(*end)
        start_byte = self.offset(*start_point)
        old_end_byte = max(self.offset(*old_end_point), start_byte)
        inserted = new_text.encode("utf-8")
        self.source = self.source[:start_byte] + inserted + self.source[old_end_byte:]
        new_end_byte = start_byte + len(inserted)
        self._relines(start_byte, old_end_byte, inserted)
        self.tree.edit(
            start_byte=start_byte,
            old_end_byte=old_end_byte,
            new_end_byte=new_end_byte,
            start_point=start_point,
            old_end_point=old_end_point,
            new_end_point=self.point(new_end_byte),
        )
        self.tree = self._parser.parse(self.source, self.tree)

    def replace(self, source: str | bytes) -> None:
        """Replace the whole text (a full-document sync) and parse from scratch."""
        self.source = source.encode("utf-8") if isinstance(source, str) else source
        self._line_starts = _line_starts(self.source)
        self.tree = self._parser.parse(self.source)

    def _relines(self, start_byte: int, old_end_byte: int, inserted: bytes) -> None:
        """Update the line-start table for an edit without rescanning the whole text."""
        starts = self._line_starts
        keep = bisect.bisect_right(starts, start_byte)
        after = bisect.bisect_right(starts, old_end_byte)
        delta = len(inserted) - (old_end_byte - start_byte)
        added = [start_byte + i + 1 for i, byte in enumerate(inserted) if byte == 10]
        self._line_starts = starts[:keep] + added + [s + delta for s in starts[after:]]


def _line_starts(source: bytes) -> list[int]:
    starts = [0]
    find = source.find
    index = find(b"\n")
    while index != -1:
        starts.append(index + 1)
        index = find(b"\n", index + 1)
    return starts
