"""The kernel index carried across an edit inside one kernel's body, without indexing the file
again.

Indexing a 55,000-line file costs about 40 ms: far more than the 50 ms a keystroke may take in
all. Most keystrokes land inside a kernel's body, and such an edit changes nothing the index
reads at module level: no import, no other statement, no launch site, no kernel's name or
parameters. `rebase` checks that this is so and then builds the new index from the old one:

- the edited kernel is read again from the new tree (`index.kernel_of`);
- every other kernel, and the module's functions and globals, are *relocated*: kept as where
  the old node was (its type and bytes, not the node, which would keep its tree alive), moved
  by the edit, and found in the new tree only when something reads them (a check, a hover, a
  code lens). A kernel nothing reads costs one small object per edit.

Whatever does not fit (the edit reaches outside one body, the module's top-level statements
change, a `jit` appears or disappears, kernels made by assignment) returns None, and the caller
indexes the file in full. Only the positions of nodes the edit did not touch are read from the
old tree: tree-sitter may rewrite, in place, the nodes around an edit, never the others.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tree_sitter import Node

from .document import Window
from .index import Kernel, LaunchSite, ModuleIndex, callee_names, kernel_of

__all__ = ["Rebased", "RelocatedKernel", "RelocatedNodes", "rebase"]


MAX_REBASES = 64
"""Rebased this many times in a row, the index is built in full: every relocated node keeps the
edits since its index was built, and resolving one walks them all."""


def _moved(windows: tuple[Window, ...], start: int, end: int) -> tuple[int, int] | None:
    for window in windows:
        moved = window.moves(start, end)
        if moved is None:
            return None
        start, end = moved
    return start, end


def _find(root: Node, kind: str, start: int, end: int) -> Node:
    """The node of a type exactly at a byte range of the new tree."""
    node: Node | None = root.descendant_for_byte_range(start, end)
    while node is not None and node.start_byte == start and node.end_byte == end:
        if node.type == kind:
            return node
        node = node.parent
    raise LookupError(f"no {kind} at bytes {start}-{end}")


_Place = tuple[str, int, int]
"""Where a node was: its type and byte range. Kept instead of the node, which would keep its
whole tree (and that version's text) alive for as long as the index lives."""


def _place(node: Node) -> _Place:
    return node.type, node.start_byte, node.end_byte


def _resolve(place: _Place, windows: tuple[Window, ...], root: Node) -> Node:
    """The node that was at `place`, in the new tree after the edits `windows`."""
    kind, start, end = place
    moved = _moved(windows, start, end)
    if moved is None:
        raise LookupError("an edit reached a relocated node")
    return _find(root, kind, *moved)


class RelocatedNodes(Mapping[str, Node]):
    """The module's functions or globals (name to node), found in the new tree on first read:
    each entry is a node of the last full index, or an edited kernel's statement, and the edits
    made since (`Window`s)."""

    def __init__(self, old: Mapping[str, Node], window: Window, root: Node) -> None:
        self._entries: dict[str, tuple[_Place, tuple[Window, ...]]] = {}  # names whose origin differs
        if isinstance(old, RelocatedNodes):  # rebased again: from the first index's table
            self._entries = {name: (place, windows + (window,)) for name, (place, windows) in old._entries.items()}
            self._old: Mapping[str, Node] = old._old
            self._windows: tuple[Window, ...] = old._windows + (window,)
        else:
            self._old, self._windows = old, (window,)
        self._root = root
        self._found: dict[str, Node] = {}

    def replace(self, name: str, node: Node) -> None:
        """`name` is now this node of the new tree (the edited kernel's statement)."""
        self._entries[name] = (_place(node), ())
        self._found[name] = node

    def origin(self, name: str) -> tuple[_Place, tuple[Window, ...]]:
        """Where an entry was first read, and the edits since."""
        entry = self._entries.get(name)
        return entry if entry is not None else (_place(self._old[name]), self._windows)

    def __getitem__(self, name: str) -> Node:
        found = self._found.get(name)
        if found is None:
            place, windows = self.origin(name)
            found = self._found[name] = _resolve(place, windows, self._root)
        return found

    def __contains__(self, name: object) -> bool:
        return name in self._old

    def __iter__(self) -> Iterator[str]:
        return iter(self._old)

    def __len__(self) -> int:
        return len(self._old)


class RelocatedKernel(Kernel):
    """A kernel the edit did not touch. Its name is known at once; its nodes, launches and
    everything read from them are read from the new tree on first use, by indexing its
    statement again (`index.kernel_of`) and moving its launch sites."""

    _LAZY = frozenset({"node", "outer", "decorators", "jit_decorator", "wrapper_calls", "launches",
                       "direct_calls"})

    def __init__(self, old: Kernel, windows: tuple[Window, ...], root: Node, index: ModuleIndex,
                 jit_aliases: frozenset[str]) -> None:  # no super().__init__: the attributes come lazily
        if type(old) is RelocatedKernel and "outer" not in old.__dict__:
            # Never read: from where it was first read, with every edit since.
            places, windows = old._places, old._windows + windows
        else:
            places = _places_of(old)
        # The index's imports and globals, not the index: a kernel pointing back at its index
        # is a cycle that only the cyclic collector would free.
        self.name = old.name
        self._places = places
        self._windows = windows
        self._root = root
        self._imports = index.imports
        self._globals = index.globals
        self._jit_aliases = jit_aliases

    name: str
    _places: _KernelPlaces
    _windows: tuple[Window, ...]
    _root: Node
    _jit_aliases: frozenset[str]

    def __getattr__(self, name: str) -> Any:
        if name not in RelocatedKernel._LAZY:
            raise AttributeError(name)
        outer_place, launches, calls = self._places
        outer = _resolve(outer_place, self._windows, self._root)
        fresh = kernel_of(outer, self._imports, self._jit_aliases, self._globals)
        if fresh is None or fresh.name != self.name:
            raise LookupError(f"kernel {self.name} is not where it was")
        fresh.launches = [_moved_site(p, self._windows, self._root, launch=True) for p in launches]
        fresh.direct_calls = [_moved_site(p, self._windows, self._root, launch=False) for p in calls]
        for attribute in RelocatedKernel._LAZY:
            self.__dict__[attribute] = fresh.__dict__[attribute]
        return self.__dict__[name]


_KernelPlaces = tuple[_Place, tuple[_Place, ...], tuple[_Place, ...]]
"""A kernel's statement, launches and direct calls, as places."""


def _places_of(kernel: Kernel) -> _KernelPlaces:
    if type(kernel) is RelocatedKernel and "outer" not in kernel.__dict__:
        return kernel._places
    return (_place(kernel.outer), tuple(_place(s.node) for s in kernel.launches),
            tuple(_place(s.node) for s in kernel.direct_calls))


def _moved_site(place: _Place, windows: tuple[Window, ...], root: Node, *, launch: bool) -> LaunchSite:
    call = _resolve(place, windows, root)
    if not launch:
        return LaunchSite(call, None)
    function = call.child_by_field_name("function")
    return LaunchSite(call, function.child_by_field_name("subscript") if function is not None else None)


@dataclass
class Rebased:
    """A rebased index, and what the edit may have changed for the checks (`dirty_kernels`)."""

    index: ModuleIndex
    old: ModuleIndex  # the index it was rebased from
    window: Window
    edited: int  # the edited kernel's position in `index.kernels`
    called_before: frozenset[str]  # the names its body called before the edit, and now
    called_now: frozenset[str]

    def dirty_kernels(self) -> set[int]:
        """The kernels whose findings the edit may have changed: the edited one, those that
        call it (they read its body as a helper), and those it starts or stops calling (whether
        another kernel calls them decides what their parameters may be)."""
        kernels = self.index.kernels
        name = kernels[self.edited].name
        per_kernel, callers = self.index._callees
        toggled = self.called_before ^ self.called_now
        dirty = {self.edited}
        if not toggled and callers.get(name, 0) - (name in self.called_now) <= 0:
            return dirty  # nothing calls it, and it calls what it called
        for position, kernel in enumerate(kernels):
            if kernel.name in toggled or name in per_kernel[id(kernel)]:
                dirty.add(position)
        return dirty


def rebase(old: ModuleIndex, old_source: bytes, root: Node, source: bytes, window: Window) -> Rebased | None:
    """The index of the new text (`root`, parsed from `source`), if every edit since `old` was
    built (`window`, in `old_source`'s bytes) lies inside one kernel's body; None otherwise
    (index the file in full). Reads no node of `old` the edits may have rewritten."""
    spans, aliases = old.spans, old.jit_aliases
    if spans is None or aliases is None or old.assigned_kernels or root.named_child_count != old.top_statements \
            or old.rebases >= MAX_REBASES:
        return None
    removed, added = old_source[window.start:window.old_end], source[window.start:window.new_end]
    if b"jit" in removed or b"jit" in added:
        return None  # may make or unmake a jit wrapper, and with it kernels elsewhere
    position = _kernel_around(spans, window)
    if position is None:
        return None
    start, end, body_start = spans[position]
    if not (0 <= body_start < window.start and window.old_end < end):
        return None
    kernel = old.kernels[position]
    try:
        outer = _find(root, "decorated_definition", start, end + window.shift)
    except LookupError:
        return None
    functions = RelocatedNodes(old.functions, window, root)
    globals_ = RelocatedNodes(old.globals, window, root)
    fresh = kernel_of(outer, old.imports, aliases, globals_)
    body = fresh.body if fresh is not None else None
    if fresh is None or fresh.name != kernel.name or body is None or body.start_byte != body_start:
        return None
    # The edited kernel's launch sites are in host code the edit did not reach: moved, from the
    # nodes they were first read from.
    _, launches, calls = _places_of(kernel)
    chain: tuple[Window, ...] = (window,)
    if type(kernel) is RelocatedKernel and "outer" not in kernel.__dict__:
        chain = kernel._windows + chain
    try:
        fresh.launches = [_moved_site(p, chain, root, launch=True) for p in launches]
        fresh.direct_calls = [_moved_site(p, chain, root, launch=False) for p in calls]
    except LookupError:
        return None
    if kernel.name in old.functions and _start_of(old.functions, kernel.name) == start:
        functions.replace(kernel.name, outer)
    index = ModuleIndex(imports=old.imports, kernels=[], functions=functions, globals=globals_, launch_cache=None,
                        jit_aliases=aliases, top_statements=old.top_statements, rebases=old.rebases + 1)
    index.kernels = [fresh if i == position else RelocatedKernel(k, (window,), root, index, aliases)
                     for i, k in enumerate(old.kernels)]
    shift = window.shift
    index.spans = spans[:position] + [(start, outer.end_byte, body_start)] + \
        [(a + shift, b + shift, c + shift) for a, b, c in spans[position + 1:]]
    # What each kernel's body calls: the old table (or the old text), the edited kernel read again.
    before = _callees_before(old, old_source)
    called_before = before[position]
    called_now = callee_names(body.text or b"")
    per_kernel = dict(zip(map(id, index.kernels), before))
    per_kernel[id(fresh)] = called_now
    callers = dict(_callers_before(old, before))
    for name in called_before - called_now:
        callers[name] -= 1
    for name in called_now - called_before:
        callers[name] = callers.get(name, 0) + 1
    index.__dict__["_callees"] = (per_kernel, callers)
    # Launch types read so far (`rules.context.launch_param_types`, by launch and kernel start
    # byte as `launch << 32 | kernel`): no launch is in the edited body, and typing reads a
    # kernel's parameters, not its body, so each is what it was, moved with the text.
    types: dict[int, dict[str, str]] | None = old.__dict__.get("_param_types")
    if types:
        shift, after, low = window.shift, window.old_end, (1 << 32) - 1
        moved: dict[int, dict[str, str]] = {}
        for key, found in types.items():
            launch, kernel_at = key >> 32, key & low
            moved[(launch + shift if launch >= after else launch) << 32
                  | (kernel_at + shift if kernel_at >= after else kernel_at)] = found
        index.__dict__["_param_types"] = moved
    return Rebased(index, old, window, position, called_before, called_now)


def _callees_before(old: ModuleIndex, old_source: bytes) -> list[frozenset[str]]:
    """What each kernel of `old` called, from its table if one was read, else from the text."""
    if "_callees" in old.__dict__:
        per_kernel, _ = old._callees
        return [per_kernel[id(k)] for k in old.kernels]
    assert old.spans is not None
    return [callee_names(old_source[body:end]) if body >= 0 else frozenset() for _, end, body in old.spans]


def _callers_before(old: ModuleIndex, before: list[frozenset[str]]) -> dict[str, int]:
    """How many of `old`'s kernels call each name."""
    if "_callees" in old.__dict__:
        return old._callees[1]
    callers: dict[str, int] = {}
    for called in before:
        for name in called:
            callers[name] = callers.get(name, 0) + 1
    return callers


def _start_of(table: Mapping[str, Node], name: str) -> int | None:
    """Where an entry of an old table starts, without reading a node an edit may have rewritten
    (a node's start is kept in it; its end and children may change)."""
    (_, start, _), windows = table.origin(name) if isinstance(table, RelocatedNodes) else (_place(table[name]), ())
    moved = _moved(windows, start, start)
    return moved[0] if moved is not None else None


def _kernel_around(spans: list[tuple[int, int, int]], window: Window) -> int | None:
    """The position of the last kernel starting before the window (kernels are in file order)."""
    low, high = 0, len(spans)
    while low < high:
        middle = (low + high) // 2
        if spans[middle][0] < window.start:
            low = middle + 1
        else:
            high = middle
    return low - 1 if low > 0 else None
