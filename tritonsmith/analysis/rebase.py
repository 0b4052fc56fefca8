"""The kernel index carried across an edit inside one function's body, a kernel's or a host
function's, without indexing the file again.

Indexing a 55,000-line file costs about 40 ms: far more than the 50 ms a keystroke may take in
all. Most keystrokes land inside a function's body, and such an edit changes nothing the index
reads at module level: no import, no other statement, no function's name or parameters.
`rebase` checks that this is so and then builds the new index from the old one:

- in a kernel's body, the edited kernel is read again from the new tree (`index.kernel_of`);
  in a host function's (a launcher, a `forward`), the kernels it may launch or call are, with
  their launch sites there found again (`index.find_launches`) and the others moved;
- every other kernel, and the module's functions and globals, are *relocated*: kept as where
  the old node was (its type and bytes, not the node, which would keep its tree alive), moved
  by the edit, and found in the new tree only when something reads them (a check, a hover, a
  code lens). A kernel nothing reads costs one small object per edit;
- launch types already read are kept, moved, unless typing them read the edited function's
  top-level statement or a name written in it (`launch_memo.TypedLaunch` says what each read).

Whatever does not fit (the edit reaches outside one body, the module's top-level statements
change, a `jit` appears or disappears, kernels made by assignment) returns None, and the caller
indexes the file in full. Only the positions of nodes the edit did not touch are read from the
old tree: tree-sitter may rewrite, in place, the nodes around an edit, never the others.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tree_sitter import Node

from .document import Window
from .index import (
    Kernel,
    LaunchSite,
    ModuleIndex,
    called_names,
    callee_names,
    find_launches,
    function_body,
    kernel_of,
)
from .launch_memo import IDENTIFIER, TypedLaunch
from .syntax import text, top_statement

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
    return (_place(kernel.outer), tuple(("call", *s.span) for s in kernel.launches),
            tuple(("call", *s.span) for s in kernel.direct_calls))


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
    edited: int | None  # the edited kernel's position in `index.kernels`; None: a host function's
    called_before: frozenset[str] = frozenset()  # the names its body called before the edit, and now
    called_now: frozenset[str] = frozenset()
    # The kernels launched or called in the edited host function, before or after, and those
    # whose launch types read the edited function (a caller of their launcher, a helper).
    relaunched: frozenset[int] = frozenset()

    def dirty_kernels(self) -> set[int]:
        """The kernels whose findings the edit may have changed: `relaunched`, and after an edit
        in a kernel's body, that kernel, those that call it (they read its body as a helper),
        and those it starts or stops calling (whether another kernel calls them decides what
        their parameters may be)."""
        dirty = set(self.relaunched)
        if self.edited is None:
            return dirty
        index = self.index
        dirty.add(self.edited)
        for name in self.called_before ^ self.called_now:
            dirty.update(i for i, kernel in enumerate(index.kernels) if kernel.name == name)
        dirty.update(index.callers_of(index.kernels[self.edited].name))
        return dirty


def rebase(old: ModuleIndex, old_source: bytes, root: Node, source: bytes, window: Window) -> Rebased | None:
    """The index of the new text (`root`, parsed from `source`), if every edit since `old` was
    built (`window`, in `old_source`'s bytes) lies inside one function's body, a kernel's or a
    host function's; None otherwise (index the file in full). Reads no node of `old` the edits
    may have rewritten."""
    spans, hosts, aliases = old.spans, old.host_spans, old.jit_aliases
    if spans is None or hosts is None or aliases is None or old.assigned_kernels \
            or root.named_child_count != old.top_statements or old.rebases >= MAX_REBASES:
        return None
    removed, added = old_source[window.start:window.old_end], source[window.start:window.new_end]
    if b"jit" in removed or b"jit" in added:
        return None  # may make or unmake a jit wrapper, and with it kernels elsewhere
    position = _body_around(spans, window)
    if position is not None:
        return _rebase_kernel(old, old_source, root, source, window, position)
    host = _body_around(hosts, window)
    if host is not None:
        return _rebase_host(old, old_source, root, source, window, host)
    return None


def _rebase_kernel(old: ModuleIndex, old_source: bytes, root: Node, source: bytes, window: Window,
                   position: int) -> Rebased | None:
    """`rebase` of an edit inside the body of kernel `position`."""
    assert old.spans is not None and old.jit_aliases is not None
    start, end, body_start = old.spans[position]
    kernel = old.kernels[position]
    try:
        outer = _find(root, "decorated_definition", start, end + window.shift)
    except LookupError:
        return None
    functions = RelocatedNodes(old.functions, window, root)
    globals_ = RelocatedNodes(old.globals, window, root)
    fresh = kernel_of(outer, old.imports, old.jit_aliases, globals_)
    body = fresh.body if fresh is not None else None
    if fresh is None or fresh.name != kernel.name or body is None or body.start_byte != body_start:
        return None
    # The edited kernel's launch sites are in host code the edit did not reach: moved, from the
    # nodes they were first read from.
    places, chain = _sites_of(kernel)
    try:
        fresh.launches = [_moved_site(p, chain + (window,), root, launch=True) for p in places[1]]
        fresh.direct_calls = [_moved_site(p, chain + (window,), root, launch=False) for p in places[2]]
    except LookupError:
        return None
    if kernel.name in old.functions and _start_of(old.functions, kernel.name) == start:
        functions.replace(kernel.name, outer)
    index = _carried(old, source, window, root, functions, globals_, {position: fresh})
    # What the edit may have made the body start or stop calling: the calls it reaches, a scan
    # of its lines, not of the whole body (twice a keystroke, over a body that may be 300 lines).
    called_before = _calls_reached(old_source, body_start, end, window.start, window.old_end)
    called_now = _calls_reached(source, body_start, end + window.shift, window.start, window.new_end)
    # A kernel's body binds no module-level name (but through `global`) and holds no host
    # caller (the typer leaves calls in kernels out): only a launch whose typing read the
    # kernel's own statement is typed again.
    old_text, new_text = old_source[start:end], source[start:end + window.shift]
    binds = _GLOBAL.search(old_text) is not None or _GLOBAL.search(new_text) is not None
    relaunched = _carry_launch_types(old, index, window, outer, _names_in(old_text, new_text) if binds else set())
    return Rebased(index, old, window, position, called_before, called_now, frozenset(relaunched))


def _rebase_host(old: ModuleIndex, old_source: bytes, root: Node, source: bytes, window: Window,
                 host: int) -> Rebased | None:
    """`rebase` of an edit inside the body of a host function (`old.host_spans[host]`): a
    launcher, a module's `forward`. Its launch sites are found again; the kernels launched or
    called there, before or after, and those whose launch types read it are to be checked."""
    assert old.spans is not None and old.host_spans is not None and old.jit_aliases is not None
    start, end, body_start = old.host_spans[host]
    old_text, new_text = old_source[start:end], source[start:end + window.shift]
    if b"jit" in old_text:
        return None  # a jit wrapper's body says which decorators make kernels
    try:
        node = _find(root, "decorated_definition", start, end + window.shift) if old_text.startswith(b"@") \
            else _find(root, "function_definition", start, end + window.shift)
    except LookupError:
        return None
    body = function_body(node)
    if body is None or body.start_byte != body_start:
        return None
    functions = RelocatedNodes(old.functions, window, root)
    globals_ = RelocatedNodes(old.globals, window, root)
    definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
    name = text(definition.child_by_field_name("name")) if definition is not None else ""
    if name in old.functions and _start_of(old.functions, name) == start:
        functions.replace(name, node)
    # The kernels it may launch or call: each is read again, with the sites outside the function
    # moved and those inside found anew.
    named = called_names(old_text) | called_names(new_text)
    launched = {position: kernel for position, kernel in enumerate(old.kernels) if kernel.name.encode() in named}
    fresh: dict[int, Kernel] = {}
    try:
        for position, kernel in launched.items():
            fresh[position] = _relaunched(kernel, window, root, old, globals_, start, end)
    except LookupError:
        return None
    find_launches(root, list(fresh.values()), [node], None)
    for kernel in fresh.values():
        kernel.launches.sort(key=lambda site: site.node.start_byte)
        kernel.direct_calls.sort(key=lambda site: site.node.start_byte)
    index = _carried(old, source, window, root, functions, globals_, fresh)
    # A host function's body may gain or lose a call of any function: every name in it counts.
    relaunched = set(launched) | _carry_launch_types(old, index, window, node, _names_in(old_text, new_text))
    return Rebased(index, old, window, None, relaunched=frozenset(relaunched))


def _sites_of(kernel: Kernel) -> tuple[_KernelPlaces, tuple[Window, ...]]:
    """A kernel's places, and the edits made since they were read."""
    if type(kernel) is RelocatedKernel and "outer" not in kernel.__dict__:
        return kernel._places, kernel._windows
    return _places_of(kernel), ()


def _relaunched(kernel: Kernel, window: Window, root: Node, old: ModuleIndex, globals_: Mapping[str, Node],
                start: int, end: int) -> Kernel:
    """`kernel` read again from the new tree, with its launch sites outside the edited function
    (`start`-`end` of the old text) moved and none inside it (`find_launches` adds those)."""
    assert old.jit_aliases is not None
    (outer_place, launches, calls), chain = _sites_of(kernel)
    fresh = kernel_of(_resolve(outer_place, chain + (window,), root), old.imports, old.jit_aliases, globals_)
    if fresh is None or fresh.name != kernel.name:
        raise LookupError(f"kernel {kernel.name} is not where it was")

    def outside(place: _Place) -> bool:
        at = _moved(chain, place[1], place[2])
        if at is None:
            raise LookupError("an edit reached a launch site")
        return not start <= at[0] < end

    fresh.launches = [_moved_site(p, chain + (window,), root, launch=True) for p in launches if outside(p)]
    fresh.direct_calls = [_moved_site(p, chain + (window,), root, launch=False) for p in calls if outside(p)]
    return fresh


def _carried(old: ModuleIndex, source: bytes, window: Window, root: Node, functions: RelocatedNodes,
             globals_: RelocatedNodes, fresh: dict[int, Kernel]) -> ModuleIndex:
    """The new index (of `source`): the kernels in `fresh` (by position) as given, every other
    one relocated, and the spans moved."""
    assert old.spans is not None and old.host_spans is not None and old.jit_aliases is not None
    index = ModuleIndex(imports=old.imports, kernels=[], functions=functions, globals=globals_, launch_cache=None,
                        jit_aliases=old.jit_aliases, top_statements=old.top_statements,
                        windows=old.windows + (window,), source=source, redefined=old.redefined)
    index.kernels = [fresh[i] if i in fresh else RelocatedKernel(k, (window,), root, index, old.jit_aliases)
                     for i, k in enumerate(old.kernels)]
    index.spans = _moved_spans(old.spans, window)
    index.host_spans = _moved_spans(old.host_spans, window)
    return index


def _moved_spans(spans: list[tuple[int, int, int]], window: Window) -> list[tuple[int, int, int]]:
    """Spans of functions moved by an edit inside one of them (whose end moves, not its start)."""
    first = max(_last_before(spans, window.start), 0)  # those before it are left as they are
    shift, after = window.shift, window.old_end
    return spans[:first] + [(a + shift if a >= after else a, b + shift if b >= after else b,
                             c + shift if c >= after else c) for a, b, c in spans[first:]]


_GLOBAL = re.compile(rb"\b(?:global|nonlocal)\b")
_NAME_OR_SPACE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ \t\r\n\f\v")


def _calls_reached(source: bytes, low: int, high: int, start: int, end: int) -> frozenset[str]:
    """The names called (`callee_names`) by the calls of `source[low:high]` that overlap the
    bytes `start:end`. A call `name (` is found by its text alone (the name's start, its
    whitespace, its parenthesis), so a call the edit did not reach is the same before and
    after: the names that differ between a body's calls before and after an edit are among
    the names called where it reached. Grown over the names, dots and whitespace on each side."""
    while start > low and (source[start - 1] in _NAME_OR_SPACE or source[start - 1] == 0x2E):  # or a dot
        start -= 1
    while end < high and source[end] in _NAME_OR_SPACE:
        end += 1
    if end < high and source[end] == 0x28:  # the call's parenthesis
        end += 1
    return callee_names(source[start:end])


def _names_in(old_text: bytes, new_text: bytes) -> set[str]:
    return {m.decode("utf-8", "replace") for m in IDENTIFIER.findall(old_text + b"\n" + new_text)}


def _carry_launch_types(old: ModuleIndex, index: ModuleIndex, window: Window, edited: Node,
                        written: set[str]) -> set[int]:
    """Carry the launch types `old` read (`rules.context.launch_param_types`, by launch and
    kernel start byte as `launch << 32 | kernel`) into `index`, moved with the text, but for
    those whose typing read the edited function's top-level statement (`edited`) or looked up a
    name the edit may have written (`written`: a caller, a helper, a constant): those are typed
    again. Returns the positions of their kernels."""
    types: dict[int, TypedLaunch] | None = old.__dict__.get("_param_types")
    if not types:
        return set()
    # The statement's start in each epoch's text (bytes only move after an edit's window).
    tops = [top_statement(edited).start_byte]
    for earlier in reversed(old.windows):
        tops.append(tops[-1] - earlier.shift if tops[-1] >= earlier.new_end else tops[-1])
    tops.reverse()
    shift, after, low = window.shift, window.old_end, (1 << 32) - 1
    moved: dict[int, TypedLaunch] = {}
    retyped: set[int] = set()
    gave_up: list[tuple[int, int]] = []
    for key, known in types.items():
        launch, kernel_at = key >> 32, key & low
        if known.statements is None or tops[known.epoch] in known.statements or not written.isdisjoint(known.names):
            retyped.add(kernel_at)
            continue
        new_key = (launch + shift if launch >= after else launch) << 32 | (kernel_at + shift if kernel_at >= after else kernel_at)
        moved[new_key] = known
        if known.gave_up:
            gave_up.append((new_key, kernel_at))
    if retyped:  # a launch typed again: so is every one that gave up (analysis/launch_memo.py)
        for new_key, kernel_at in gave_up:
            del moved[new_key]
            retyped.add(kernel_at)
    index.__dict__["_param_types"] = moved
    assert old.spans is not None
    return {position for at in retyped if (position := _kernel_at(old.spans, at)) is not None}


def _start_of(table: Mapping[str, Node], name: str) -> int | None:
    """Where an entry of an old table starts, without reading a node an edit may have rewritten
    (a node's start is kept in it; its end and children may change)."""
    (_, start, _), windows = table.origin(name) if isinstance(table, RelocatedNodes) else (_place(table[name]), ())
    moved = _moved(windows, start, start)
    return moved[0] if moved is not None else None


def _last_before(spans: list[tuple[int, int, int]], at: int) -> int:
    """The position of the last span starting before byte `at` (spans are in file order), or -1."""
    return bisect_left(spans, (at,)) - 1


def _body_around(spans: list[tuple[int, int, int]], window: Window) -> int | None:
    """The position of the function whose body holds the window strictly inside it, if any."""
    position = _last_before(spans, window.start)
    if position < 0:
        return None
    _, end, body_start = spans[position]
    return position if 0 <= body_start < window.start and window.old_end < end else None


def _kernel_at(spans: list[tuple[int, int, int]], at: int) -> int | None:
    """The position of the kernel whose statement holds byte `at`."""
    position = _last_before(spans, at + 1)
    return position if position >= 0 and at < spans[position][1] else None
