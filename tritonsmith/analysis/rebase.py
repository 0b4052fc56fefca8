"""The kernel index carried across an edit inside one kernel's body, without indexing the file
again.

Indexing a 55,000-line file costs about 40 ms: far more than the 50 ms a keystroke may take in
all. Most keystrokes land inside a kernel's body, and such an edit changes nothing the index
reads at module level: no import, no other statement, no launch site, no kernel's name or
parameters. `rebase` checks that this is so and then builds the new index from the old one:

- the edited kernel is read again from the new tree (`index._kernel`);
- every other kernel, and the module's functions and globals, are *relocated*: kept as the old
  node's position, moved by the edit, and found in the new tree only when something reads them
  (a check, a hover, a code lens). A kernel nothing reads costs one small object per edit.

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


class _Relocated:
    """An old node's place: where it is in the new tree, found on first use."""

    __slots__ = ("_origin", "_windows")

    def __init__(self, origin: Node, windows: tuple[Window, ...]) -> None:
        self._origin, self._windows = origin, windows

    def resolve(self, root: Node) -> Node:
        moved = _moved(self._windows, self._origin.start_byte, self._origin.end_byte)
        if moved is None:
            raise LookupError("an edit reached a relocated node")
        return _find(root, self._origin.type, *moved)


class RelocatedNodes(Mapping[str, Node]):
    """The module's functions or globals (name to node), found in the new tree on first read:
    each entry is a node of some earlier tree and the edits made since (`Window`s)."""

    def __init__(self, old: Mapping[str, Node], window: Window, root: Node) -> None:
        self._entries: dict[str, tuple[Node, tuple[Window, ...]]] = {}  # names whose origin differs
        if isinstance(old, RelocatedNodes):  # rebased again: from the first index's table
            self._entries = {name: (node, windows + (window,)) for name, (node, windows) in old._entries.items()}
            self._old: Mapping[str, Node] = old._old
            self._windows: tuple[Window, ...] = old._windows + (window,)
        else:
            self._old, self._windows = old, (window,)
        self._root = root
        self._found: dict[str, Node] = {}

    def replace(self, name: str, node: Node) -> None:
        """`name` is now this node of the new tree (the edited kernel's statement)."""
        self._entries[name] = (node, ())
        self._found.pop(name, None)

    def origin(self, name: str) -> tuple[Node, tuple[Window, ...]]:
        """The node an entry was first read as, and the edits since."""
        return self._entries.get(name) or (self._old[name], self._windows)

    def __getitem__(self, name: str) -> Node:
        found = self._found.get(name)
        if found is None:
            node, windows = self.origin(name)
            found = self._found[name] = _Relocated(node, windows).resolve(self._root) if windows else node
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
    statement again (`index._kernel`) and moving its launch sites."""

    _LAZY = frozenset({"node", "outer", "decorators", "jit_decorator", "wrapper_calls", "launches",
                       "direct_calls"})

    def __init__(self, old: Kernel, windows: tuple[Window, ...], root: Node, index: ModuleIndex,
                 jit_aliases: frozenset[str]) -> None:  # no super().__init__: the attributes come lazily
        if type(old) is RelocatedKernel and "outer" not in old.__dict__:
            windows = old._windows + windows  # never read: from the kernel it was first read as
            old = old._old
        # (One of these per kernel per keystroke: set the attributes in one go.)
        # The index's imports and globals, not the index: a kernel pointing back at its index
        # is a cycle that only the cyclic collector would free.
        self.name = old.name
        self._old = old
        self._windows = windows
        self._root = root
        self._imports = index.imports
        self._globals = index.globals
        self._jit_aliases = jit_aliases

    name: str
    _old: Kernel
    _windows: tuple[Window, ...]
    _root: Node
    _jit_aliases: frozenset[str]

    def __getattr__(self, name: str) -> Any:
        if name not in RelocatedKernel._LAZY:
            raise AttributeError(name)
        outer = _Relocated(self._old.outer, self._windows).resolve(self._root)
        fresh = kernel_of(outer, self._imports, self._jit_aliases, self._globals)
        if fresh is None or fresh.name != self.name:
            raise LookupError(f"kernel {self.name} is not where it was")
        fresh.launches = [self._site(s, launch=True) for s in self._old.launches]
        fresh.direct_calls = [self._site(s, launch=False) for s in self._old.direct_calls]
        for attribute in RelocatedKernel._LAZY:
            self.__dict__[attribute] = fresh.__dict__[attribute]
        return self.__dict__[name]

    def _site(self, site: LaunchSite, *, launch: bool) -> LaunchSite:
        return _moved_site(site, self._windows, self._root, launch=launch)


def _moved_site(site: LaunchSite, windows: tuple[Window, ...], root: Node, *, launch: bool) -> LaunchSite:
    call = _Relocated(site.node, windows).resolve(root)
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
    if spans is None or aliases is None or old.assigned_kernels or root.named_child_count != old.top_statements:
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
    origin: Kernel = kernel
    chain: tuple[Window, ...] = (window,)
    if isinstance(kernel, RelocatedKernel) and "outer" not in kernel.__dict__:
        origin, chain = kernel._old, kernel._windows + chain
    try:
        fresh.launches = [_moved_site(s, chain, root, launch=True) for s in origin.launches]
        fresh.direct_calls = [_moved_site(s, chain, root, launch=False) for s in origin.direct_calls]
    except LookupError:
        return None
    if kernel.name in old.functions and _start_of(old.functions, kernel.name) == start:
        functions.replace(kernel.name, outer)
    index = ModuleIndex(imports=old.imports, kernels=[], functions=functions, globals=globals_, launch_cache=None,
                        jit_aliases=aliases, top_statements=old.top_statements)
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
    node, windows = table.origin(name) if isinstance(table, RelocatedNodes) else (table[name], ())
    moved = _moved(windows, node.start_byte, node.start_byte)
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
