"""What each statement of a kernel did when interpreted, kept across edits.

A keystroke in a kernel's body changes one statement, but the type inference (infer.py) runs
the whole body again: on a 300-line persistent kernel with 51 `if`s, half of the check.
Most statements read the same values as before and so do the same thing. A statement of the
kernel's own body (not a helper's) that cannot stop it, an expression statement (`x = ...`,
`acc += ...`, `tl.store(...)`) or an `if`, `for` or `while` with no `return` inside, depends
only on:

- its text;
- the values it reads from the environment: the names written in it (every name it can read,
  bind or drop is one of its identifiers; a helper's body runs with an environment of its own);
- for a name not bound yet, where the body last assigns it (`Interpreter.assigned`): before the
  statement, after it, or at which byte inside (what decides "is not defined here");
- what stays fixed for one memo: the module's imports (names' resolution) and the jit helpers'
  texts (a call interprets the helper), the interpreter's mode (issues only, top level).

(An `if` pushes and pops its own entry of the interpreter's constexpr-condition stack, and only a
`return` reads the entries below: hence no `return` inside.) So the memo keeps, per statement
text, what it read (those values, compared as values: a new parse gives equal, not identical,
ones), what it bound or dropped, the issues it raised (each node as a
path of child positions from the statement, found again in the new tree) and the statements it
cost the budget. A statement whose inputs all match is replayed instead of interpreted; any
other is interpreted and remembered. The owner (`rules/matcher.py`) keeps one memo per kernel,
module key and helper texts, so a memo never sees a change of what it takes as fixed.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tree_sitter import Node

if TYPE_CHECKING:
    from .infer import Interpreter

__all__ = ["StatementMemo"]

_IDENTIFIER = re.compile(rb"[A-Za-z_\x80-\xff][\w\x80-\xff]*")
_RETURN = re.compile(rb"\breturn\b")
_ABSENT = object()  # a name not bound
_MAY_STOP: tuple[str, ...] = ("return",)  # the names of a statement holding a `return` (by identity)
# Where a name not bound yet is last assigned, relative to the statement (see `_unbound`).
_NEVER, _BEFORE, _AFTER = -1, -2, -3
_PER_TEXT = 8  # entries kept for one statement text (scenarios, branches reading other values)
LIMIT = 20_000  # names read, summed over the entries, before a memo starts afresh
_TEXT_KEPT = 256  # a longer statement's text is kept as its digest


class _Remembered:
    __slots__ = ("inputs", "outputs", "issues", "cost")

    def __init__(self, inputs: tuple[Any, ...], outputs: tuple[tuple[str, Any], ...],
                 issues: tuple[tuple[str, tuple[int, ...], str, Any], ...], cost: int) -> None:
        self.inputs = inputs
        self.outputs = outputs  # (name, value or _ABSENT) for each name the statement rebound
        self.issues = issues  # (kind, path from the statement, message, since)
        self.cost = cost  # statements of the budget it used (helpers' included)


class StatementMemo:
    """Replays the statements of one kernel that read what they read before."""

    def __init__(self, ledger: list[int] | None = None) -> None:
        # The size of every memo sharing the ledger, summed (their owner evicts by it).
        self.ledger = ledger if ledger is not None else [0]
        self._names: dict[bytes, tuple[str, ...]] = {}
        self._entries: dict[bytes, list[_Remembered]] = {}
        # The texts met in this check of the kernel and in the one before: at the end of a check
        # the others go (an edit's old texts stay one check longer, for the undo that follows).
        self._met: set[bytes] = set()
        self._met_before: set[bytes] = set()
        self._size = 0
        self.hits = self.misses = 0

    def run(self, interpreter: Interpreter, node: Node, execute: Callable[[Node], None]) -> None:
        """Do what `execute(node)` would do to `interpreter` (its environment, its issues, its
        budget), from memory when the statement reads what it read before."""
        raw = node.text or b""
        # A loop around a whole body is kilobytes, and each edit inside it is a new text: kept
        # by digest, so that a long session's memo stays small.
        key = raw if len(raw) <= _TEXT_KEPT else hashlib.blake2b(raw, digest_size=20).digest()
        self._met.add(key)
        names = self._names.get(key)
        if names is None:
            # Each word decoded once, not once per use: an edit in a loop gives it and each `if`
            # around the edit a new text of hundreds of names.
            names = self._names[key] = _MAY_STOP if _RETURN.search(raw) is not None else tuple(dict.fromkeys(
                sys.intern(m.decode("utf-8", "replace")) for m in dict.fromkeys(_IDENTIFIER.findall(raw))))
        if names is _MAY_STOP:  # an `if` or loop holding a `return`: it may stop the body
            execute(node)
            return
        env, assigned = interpreter.env, interpreter.assigned
        start, end = node.start_byte, node.end_byte
        # Flat: a bound name's value and its constant's type (values compare field by field, and
        # Python has 1 == 1.0 == True), an unbound one's `_unbound` (an int, never equal to either).
        read: list[Any] = []
        for name in names:
            value = env.get(name)
            if value is not None:
                read += (value, type(value.const))
            else:
                read.append(_unbound(assigned.get(name), start, end))
        inputs = tuple(read)
        entries = self._entries.get(key)
        if entries is not None:
            for entry in entries:
                if entry.inputs == inputs and interpreter.budget[0] - entry.cost >= 0:
                    self.hits += 1
                    interpreter.budget[0] -= entry.cost
                    for name, value in entry.outputs:
                        if value is _ABSENT:
                            env.pop(name, None)
                        else:
                            env[name] = value
                    for kind, path, message, since in entry.issues:
                        interpreter.issue(kind, _node_at(node, path), message, since)
                    return
        self.misses += 1
        before = {name: env.get(name, _ABSENT) for name in names}
        bound_before, issues_before, budget_before = len(env), len(interpreter.out.issues), interpreter.budget[0]
        execute(node)  # an exception (over budget) leaves nothing remembered
        env = interpreter.env
        outputs = tuple((name, now) for name in names if (now := env.get(name, _ABSENT)) is not before[name])
        added = sum(1 for name, _ in outputs if before[name] is _ABSENT) - sum(1 for _, now in outputs if now is _ABSENT)
        if len(env) - bound_before != added:
            return  # it bound or dropped a name it does not spell (Python cannot): not one to replay
        paths = []
        for issue in interpreter.out.issues[issues_before:]:
            where = _path(node, issue.node)
            if where is None:
                return  # an issue outside the statement: not one to replay
            paths.append((issue.kind, where, issue.message, issue.since))
        if self._size >= LIMIT:
            self.clear()
            self._names[key] = names
        kept = self._entries.setdefault(key, [])
        weight = len(inputs) + 1
        if len(kept) >= _PER_TEXT:
            weight -= len(kept.pop(0).inputs) + 1
        kept.append(_Remembered(inputs, outputs, tuple(paths), budget_before - interpreter.budget[0]))
        self._size += weight
        self.ledger[0] += weight

    @property
    def size(self) -> int:
        """The names the entries read, summed: what a memo's size goes by."""
        return self._size

    def end_check(self) -> None:
        """One check of the kernel is over: forget the texts neither it nor the one before met."""
        keep = self._met | self._met_before
        for key in [key for key in self._entries if key not in keep]:
            dropped = sum(len(entry.inputs) + 1 for entry in self._entries.pop(key))
            self._size -= dropped
            self.ledger[0] -= dropped
        for key in [key for key in self._names if key not in keep]:
            del self._names[key]
        self._met_before, self._met = self._met, set()

    def clear(self) -> None:
        self._entries.clear()
        self._names.clear()
        self.ledger[0] -= self._size
        self._size = 0


def _unbound(last: int | None, start: int, end: int) -> int:
    if last is None:
        return _NEVER
    if last < start:
        return _BEFORE
    if last >= end:
        return _AFTER
    return last - start


def _path(statement: Node, node: Node) -> tuple[int, ...] | None:
    """`node`'s position under `statement`: the child index at each level down."""
    path: list[int] = []
    current: Node | None = node
    while current is not None and current != statement:
        parent = current.parent
        if parent is None:
            return None
        for i, child in enumerate(parent.children):
            if child == current:
                path.append(i)
                break
        else:
            return None
        current = parent
    if current is None:
        return None
    path.reverse()
    return tuple(path)


def _node_at(statement: Node, path: tuple[int, ...]) -> Node:
    node = statement
    for i in path:
        node = node.children[i]
    return node
