"""A parsed Python document that re-parses incrementally on every edit.

`Document` owns the source text and its tree-sitter tree. Edits arrive as (range, text) pairs in
LSP terms (line and UTF-16 column); each is applied to the text and to the old tree with
`Tree.edit`, and the new tree is parsed with the old one as a hint, so an edit costs the
parser time proportional to what changed, not to the file.

Positions inside tritonsmith are tree-sitter points: (row, byte column). Conversion to LSP's
UTF-16 columns happens only at the edges (`utf16_col`, `byte_col`).

The LSP lets a client end lines with LF, CRLF or a lone CR; tree-sitter-python and the line
table know only LF. `source` (what is parsed and checked) is the client's text with every lone
CR turned into LF, which keeps every byte offset and column; `raw` is the client's text as it
is, and `text` decodes it. A lone UTF-16 surrogate (which UTF-8 cannot hold) becomes U+FFFD,
one UTF-16 unit for one, so columns stay in step with the client's.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Tree

__all__ = ["PY_LANGUAGE", "Document", "byte_col", "encode", "from_lsp_col", "lf_lines", "to_lsp_col", "utf16_col"]

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
        width = 2 if ord(char) > 0xFFFF else 1
        if units + width > utf16_column:  # a column inside a surrogate pair: the character's start
            return len(text[:index].encode("utf-8"))
        units += width
    return len(line)


_LONE_CR = re.compile(rb"\r(?!\n)")
_SURROGATE = re.compile("[\ud800-\udfff]")


def encode(text: str) -> bytes:
    """`text` as UTF-8, a lone surrogate (valid in the client's UTF-16, not in UTF-8) as U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


def lf_lines(data: bytes) -> bytes:
    """`data` with every lone CR as LF (same length): the line breaks tree-sitter knows."""
    return _LONE_CR.sub(b"\n", data) if b"\r" in data else data


@dataclass(frozen=True)
class Window:
    """Edits in a row as one replaced range: the old text's bytes `start:old_end` are the new
    text's `start:new_end`; before it nothing moved, after it every byte moved by `shift`."""

    start: int
    old_end: int
    new_end: int

    @property
    def shift(self) -> int:
        return self.new_end - self.old_end

    def then(self, start: int, old_end: int, new_end: int) -> Window:
        """This window followed by one more edit (given in the text as it is after this one)."""
        end = max(self.new_end, old_end)
        return Window(min(self.start, start), end - self.shift, end + (new_end - old_end))

    def moves(self, start: int, end: int) -> tuple[int, int] | None:
        """Where an old range the edits did not reach into is now; None if they did."""
        if end <= self.start:
            return start, end
        if start >= self.old_end:
            return start + self.shift, end + self.shift
        return None


class Document:
    """Source text plus its syntax tree, kept in step by incremental edits."""

    def __init__(self, source: str | bytes, *, encoding: str = "utf-16") -> None:
        self.encoding = encoding  # the LSP position encoding of `edit` and `*_lsp` positions
        self._parser = Parser(PY_LANGUAGE)
        self.raw = encode(source) if isinstance(source, str) else source
        self.source = lf_lines(self.raw)
        self._set_line_starts(_line_starts(self.source))
        self._tree: Tree = self._parser.parse(self.source)
        self._edited = False  # edits given to the old tree, not parsed yet
        # The edits since `take_window` as one range; None after none, or after a replace.
        self._window: Window | None = None
        self._replaced = False

    @property
    def tree(self) -> Tree:
        """The syntax tree of the current text. Edits are parsed when the tree is next asked for:
        a burst of edits (queued keystrokes, a multi-change didChange) costs one re-parse."""
        if self._edited:
            self._tree = self._parser.parse(self.source, self._tree)
            self._edited = False
        return self._tree

    def prepare_for_edits(self) -> None:
        """Re-parse once with nothing edited. Tree-sitter's first re-parse of a freshly parsed
        tree costs nearly a full parse (50 ms on a 2 MB file), every later one a few
        milliseconds: an editor pays it when it opens the file, not on the first keystroke."""
        self._tree = self._parser.parse(self.source, self.tree)

    @property
    def root(self) -> Node:
        return self.tree.root_node

    @property
    def text(self) -> str:
        """The client's text (its own line endings)."""
        return self.raw.decode("utf-8", errors="replace")

    # Where each line starts: `_starts[row]`, plus `_delta` from row `_cut` on. An edit moves
    # every later line; shifting 55,000 numbers on each keystroke cost 4 ms, so the shift is
    # kept pending for the lines after the last edit and applied only between two edits' places.

    def _set_line_starts(self, starts: list[int]) -> None:
        self._starts, self._cut, self._delta = starts, len(starts), 0

    @property
    def _line_starts(self) -> list[int]:
        """Every line's start (a copy: for tests and one-off readers)."""
        cut, delta = self._cut, self._delta
        return self._starts[:cut] + [s + delta for s in self._starts[cut:]]

    def _start(self, row: int) -> int:
        return self._starts[row] + (self._delta if row >= self._cut else 0)

    def _row(self, offset: int) -> int:
        """The row of the line holding a byte offset (the last line starting at or before it)."""
        starts, cut = self._starts, self._cut
        if cut < len(starts) and offset >= starts[cut] + self._delta:
            return bisect.bisect_right(starts, offset - self._delta, cut) - 1
        return bisect.bisect_right(starts, offset, 0, cut) - 1

    def line(self, row: int) -> bytes:
        """The bytes of line `row`, without its line break."""
        if row < 0 or row >= len(self._starts):
            return b""
        start = self._start(row)
        end = self._start(row + 1) - 1 if row + 1 < len(self._starts) else len(self.source)
        line = self.source[start:end]
        return line[:-1] if line.endswith(b"\r") else line

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def offset(self, row: int, column: int) -> int:
        """The byte offset of a (row, byte column) point, clamped to the document."""
        if row >= len(self._starts):
            return len(self.source)
        return min(self._start(max(row, 0)) + column, len(self.source))

    def point(self, offset: int) -> tuple[int, int]:
        """The (row, byte column) point of a byte offset."""
        row = self._row(offset)
        return row, offset - self._start(row)

    def lsp_to_point(self, line: int, character: int) -> tuple[int, int]:
        """An LSP (line, character) position as a (row, byte column) point, clamped to the text."""
        line, character = max(line, 0), max(character, 0)
        if line >= len(self._starts):
            return self.point(len(self.source))
        return line, from_lsp_col(self.line(line), character, self.encoding)

    def point_to_lsp(self, row: int, column: int) -> tuple[int, int]:
        return row, to_lsp_col(self.line(row), column, self.encoding)

    def edit(self, start: tuple[int, int], end: tuple[int, int], new_text: str) -> None:
        """Replace the text between two LSP positions; the tree is re-parsed incrementally when
        next read. Positions out of the document (a negative or huge line or column) are clamped
        to it."""
        start_byte = self.offset(*self.lsp_to_point(*start))
        old_end_byte = max(self.offset(*self.lsp_to_point(*end)), start_byte)
        inserted = encode(new_text)
        self.raw = b"".join((self.raw[:start_byte], inserted, self.raw[old_end_byte:]))  # one copy, not two
        # A CR just before the edit, or in the inserted text, may gain or lose the LF after it:
        # the parsed text then changes from one byte before the edit (lengths never change).
        new_end_raw = start_byte + len(inserted)
        if start_byte > 0 and self.raw[start_byte - 1:start_byte] == b"\r":
            start_byte -= 1
        if b"\r" in self.raw[start_byte:new_end_raw]:
            replacement = lf_lines(self.raw[start_byte:new_end_raw + 1])[: new_end_raw - start_byte]
        else:
            replacement = self.raw[start_byte:new_end_raw]
        start_point, old_end_point = self.point(start_byte), self.point(old_end_byte)
        self.source = b"".join((self.source[:start_byte], replacement, self.source[old_end_byte:]))
        new_end_byte = start_byte + len(replacement)
        self._relines(start_byte, old_end_byte, replacement)
        self._tree.edit(
            start_byte=start_byte,
            old_end_byte=old_end_byte,
            new_end_byte=new_end_byte,
            start_point=start_point,
            old_end_point=old_end_point,
            new_end_point=self.point(new_end_byte),
        )
        self._edited = True
        window = self._window
        self._window = Window(start_byte, old_end_byte, new_end_byte) if window is None \
            else window.then(start_byte, old_end_byte, new_end_byte)

    def take_window(self) -> Window | None:
        """Every edit since the last call as one replaced range (the `source` bytes), and start
        again; None when there was none, or the whole text was replaced."""
        window = None if self._replaced else self._window
        self._window, self._replaced = None, False
        return window

    def replace(self, source: str | bytes) -> None:
        """Replace the whole text (a full-document sync) and parse from scratch."""
        self.raw = encode(source) if isinstance(source, str) else source
        self.source = lf_lines(self.raw)
        self._set_line_starts(_line_starts(self.source))
        self._tree = self._parser.parse(self.source)
        self._edited = False
        self._replaced = True

    def _relines(self, start_byte: int, old_end_byte: int, inserted: bytes) -> None:
        """Update the line-start table for an edit: the lines inside the edit replaced, those
        after it moved by the pending shift (see `_starts`)."""
        starts, cut, pending = self._starts, self._cut, self._delta
        keep = self._row(start_byte) + 1  # lines starting at or before the edit stay
        after = self._row(old_end_byte) + 1  # lines starting after its end move
        delta = len(inserted) - (old_end_byte - start_byte)
        added = [start_byte + i + 1 for i, byte in enumerate(inserted) if byte == 10]
        # One pending shift from the first moved line on: `pending + delta`. Lines before the
        # edit that were pending get theirs now; lines after it that were not get `-pending`,
        # so that adding the new shift gives them `delta` alone.
        if cut < keep:
            starts[cut:keep] = [s + pending for s in starts[cut:keep]]
        elif after < cut:
            starts[after:cut] = [s - pending for s in starts[after:cut]]
        starts[keep:after] = added
        self._cut, self._delta = keep + len(added), pending + delta


def _line_starts(source: bytes) -> list[int]:
    starts = [0]
    find = source.find
    index = find(b"\n")
    while index != -1:
        starts.append(index + 1)
        index = find(b"\n", index + 1)
    return starts
