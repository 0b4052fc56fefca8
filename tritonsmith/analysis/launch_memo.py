"""Launch-site argument types kept across edits, for as long as an edit cannot have changed them.

Typing the arguments of every launch in a file (analysis/argtypes.py) costs about a millisecond a
launch: on a 55,000-line file with 1,267 launches, over a second, far too long to repeat on every
keystroke. Each launch's answer depends on little: its own top-level statement (the launcher), its
kernel's parameter list (not the kernel's body: typing in a kernel re-types nothing), and whatever the typer followed out of the launcher, which it records
(`argtypes.Reads`): the module-level statements it looked into (a caller, a helper's returns, a
constant) and the names it looked up, whose definitions or callers could appear elsewhere.

On each new version of the file, `LaunchTypeMemo.advance` lines up the module's top-level
statements with the previous version's by their text (difflib; an edit changes one or a few)
and keeps each answer whose statements all matched and whose names
appear nowhere in the changed text as identifiers, moved to where its launch is now. Anything that touches the
whole file (an import, `torch.set_default_dtype`) forgets everything.

A launch whose typing ran out of the typer's budget (argtypes.py) is kept too, with what it had
read, but only across edits that keep every launch's answer. The typer shares what it finds
between a file's launches, and an answer taken from there costs no budget, so whether a launch
runs out depends on the launches typed before it in the same version. While every launch is kept,
that is as it was; once any is typed again, every one that gave up is typed again too, so the
answers stay those of typing them afresh in each version (`advance` here, `_carry_launch_types`
in analysis/rebase.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, NamedTuple

from tree_sitter import Node

if TYPE_CHECKING:
    from .argtypes import Reads

__all__ = ["IDENTIFIER", "LaunchTypeMemo", "TypedLaunch"]

IDENTIFIER = re.compile(rb"[A-Za-z_\x80-\xff][\w\x80-\xff]*")

_WHOLE_FILE = (b"import", b"set_default_dtype")
"""Text whose change can alter any launch's types: the imports qualify every name, and the
default dtype types every factory without a dtype."""


class TypedLaunch(NamedTuple):
    """One launch's argument types in an index (`rules.context.launch_param_types`), and what
    typing them read: the start bytes of the top-level statements (None: unknown, as when the
    typer gave up) and the names looked up. `epoch`: how many edits the index had been carried
    across when they were read (`ModuleIndex.windows`), which says what text the bytes are of;
    `analysis/rebase.py` keeps an answer across an edit in a host function that none of it read."""

    types: dict[str, str]
    statements: frozenset[int] | None
    names: frozenset[str]
    epoch: int
    gave_up: bool = False  # the typer's budget ran out (see the module's text)


@dataclass(frozen=True)
class _Statements:
    """A version of the file, as its module-level statements: where each starts and ends, and
    a hash of its text."""

    source: bytes
    starts: list[int]
    ends: list[int]
    hashes: list[int]

    @classmethod
    def of(cls, root: Node, source: bytes) -> _Statements:
        starts = [child.start_byte for child in root.children]
        ends = [child.end_byte for child in root.children]
        return cls(source, starts, ends, [hash(source[a:b]) for a, b in zip(starts, ends, strict=True)])


@dataclass(frozen=True)
class _Entry:
    types: dict[str, str]
    statement: int  # start byte of the launch's statement
    launch: int  # start byte of the launch
    kernel: str  # the kernel launched, and its parameter list: they name the arguments
    parameters: bytes
    statements: frozenset[int]  # start bytes of every statement read
    names: frozenset[str]
    gave_up: bool = False


class LaunchTypeMemo:
    """One document's launch types, by launch start byte and kernel name, kept across edits
    (`advance`) while the kernel's parameter list reads the same. The language server keeps one
    per open document."""

    def __init__(self) -> None:
        self._version: _Statements | None = None
        self._entries: dict[tuple[int, str], _Entry] = {}

    def advance(self, root: Node, source: bytes) -> None:
        """Move to the file as it is now (`root`, parsed from `source`)."""
        old, new = self._version, _Statements.of(root, source)
        self._version = new
        if old is None or not self._entries:
            self._entries = {}
            return
        # Line the statements up by their text (an edit changes one or a few; several when
        # edits in different places come together): each matched one may have moved. The
        # unchanged runs at the start and the end are found first, since difflib over 2,600
        # statements costs 8 ms and over the few between them nothing.
        n_old, n_new = len(old.hashes), len(new.hashes)
        head = 0
        while head < min(n_old, n_new) and old.hashes[head] == new.hashes[head]:
            head += 1
        tail = 0
        while tail < min(n_old, n_new) - head and old.hashes[n_old - 1 - tail] == new.hashes[n_new - 1 - tail]:
            tail += 1
        middle = SequenceMatcher(None, old.hashes[head:n_old - tail], new.hashes[head:n_new - tail],
                                 autojunk=False).get_matching_blocks()
        blocks = [(0, 0, head)] + [(head + i, head + j, size) for i, j, size in middle if size] + \
            [(n_old - tail, n_new - tail, tail)]
        moved: dict[int, int] = {}
        changed: list[bytes] = []
        at_old = at_new = 0
        for i, j, size in blocks:
            if at_old < i:
                changed.append(old.source[old.starts[at_old]:old.ends[i - 1]])
            if at_new < j:
                changed.append(source[new.starts[at_new]:new.ends[j - 1]])
            moved.update({old.starts[i + k]: new.starts[j + k] for k in range(size)})
            at_old, at_new = i + size, j + size
        if any(word in text for text in changed for word in _WHOLE_FILE):
            self._entries = {}
            return
        # A name matters where it is written as a whole identifier (`add_1` is not in `add_10`).
        written = {m.decode("utf-8", "replace") for text in changed for m in IDENTIFIER.findall(text)}
        kept: dict[tuple[int, str], _Entry] = {}
        for entry in self._entries.values():
            if entry.statement not in moved or not all(s in moved for s in entry.statements) \
                    or not written.isdisjoint(entry.names):
                continue
            statement = moved[entry.statement]
            launch = entry.launch - entry.statement + statement
            kept[(launch, entry.kernel)] = _Entry(entry.types, statement, launch, entry.kernel, entry.parameters,
                                                  frozenset(moved[s] for s in entry.statements), entry.names,
                                                  entry.gave_up)
        if len(kept) < len(self._entries):  # some launch is typed again: so is every one that gave up
            kept = {key: entry for key, entry in kept.items() if not entry.gave_up}
        self._entries = kept

    def get(self, launch: int, kernel: str, parameters: bytes, epoch: int) -> TypedLaunch | None:
        """The types at the launch starting at byte `launch`, if kept, and what they read."""
        found = self._entries.get((launch, kernel))
        if found is None or found.parameters != parameters:
            return None
        return TypedLaunch(found.types, found.statements, found.names, epoch, found.gave_up)

    def put(self, launch: int, kernel: str, parameters: bytes, types: dict[str, str], reads: Reads,
            gave_up: bool = False) -> None:
        self._entries[(launch, kernel)] = _Entry(
            types, reads.own, launch, kernel, parameters, frozenset(reads.statements), frozenset(reads.names),
            gave_up)
