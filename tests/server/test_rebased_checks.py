"""An edit inside one kernel's body carries the index across (analysis/rebase.py) and re-checks
only the kernels it may have changed (`Matcher.check_rebased`): after any sequence of edits the
server's findings are those of a fresh check of the same text, and its index reads as a fresh
index does; and body edits do take that path."""

from __future__ import annotations

import gc
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from lsprotocol import types

from tritonsmith.analysis import index_module
from tritonsmith.analysis.index import function_body
from tritonsmith.rules.matcher import Matcher

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import corpus  # noqa: E402

URI = "file:///tmp/rebased_probe.py"
EXTRA = '''

@triton.jit
def _twice(x):
    return x * 2


@triton.jit
def uses_twice(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, _twice(x), mask=offs < n)  # tritonsmith: ignore[TS508]


def launch_twice(x):
    out = torch.empty_like(x)
    uses_twice[(1,)](x, out, x.numel(), BLOCK=1000)
    return out


@triton.jit
def bits_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x & 1, mask=offs < n)


def launch_bits(x):
    out = torch.empty_like(x)
    bits_kernel[(1,)](x, out, x.numel(), BLOCK=128)
    return out


class Model(torch.nn.Module):
    def forward(self, x):
        y = launch_bits(x)
        return launch_twice(y)


def run_bits():
    return launch_bits(torch.zeros(128, dtype=torch.int32, device="cuda"))
'''
BASE = corpus.generate(260, seed=1) + EXTRA
# What a user types in a kernel's body: names, a call of a helper, a reduction, a newline, a
# suppression, a string quote, a dedent, a bracket, nothing (a deletion).
TYPED = ["x", "\n", " ", "(", "tl.sum(x)", "_twice(x)", "leaky_relu_0(", "# tritonsmith: ignore\n",
         '"', "\nz = 1\n", ")", "2", ""]


# What a user types in a host function: a launch, a direct call of a kernel, a call of a
# launcher with other argument types (types reach launches through callers), a dtype.
HOST_TYPED = TYPED[:4] + ['"', ")", "", "\n    z = 1", "torch.float32", ".float()", "\n    bits_kernel[(2,)](x, x, 8, BLOCK=16)",
                          "\n    uses_twice(x, x, 1, 4)", "\n    launch_bits(torch.ones(4, dtype=torch.float16))",
                          "\n    return launch_twice(x)", "# tritonsmith: ignore\n"]

_SERVER: list[Any] = []


def _session() -> Any:
    """The server (one for the module: starting one loads every rule pack), with the file
    opened afresh."""
    from tritonsmith.server import create_server

    if not _SERVER:
        _SERVER.append(create_server())
    server = _SERVER[0].session
    state = server.open(URI, 1, BASE)
    server.ensure_checked(state)
    return server, state


def _edit(server: Any, state: Any, offset: int, typed: str, version: int) -> None:
    document = state.document
    start = document.point_to_lsp(*document.point(offset))
    end = document.point_to_lsp(*document.point(offset + (1 if typed == "" else 0)))
    change = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(*start), types.Position(*end)), text=typed)
    server.change(URI, version, [change])


def _in_a_body(state: Any, pick: int, at: int) -> int:
    """A byte offset inside some kernel's body (`pick` chooses the kernel, `at` the place)."""
    kernels = [k for k in index_module(state.document.root).kernels if k.body is not None]
    if not kernels:  # the edits broke the file before its first kernel
        return 0
    body = kernels[pick % len(kernels)].body
    return body.start_byte + 1 + at % max(1, body.end_byte - body.start_byte - 1)


def _in_a_host_function(state: Any, pick: int, at: int) -> int:
    """A byte offset inside some host function's body (a launcher, a method, `run_bits`)."""
    index = index_module(state.document.root)
    kernels = {k.outer.start_byte for k in index.kernels}
    bodies = [body for node in index.functions.values() if node.start_byte not in kernels
              and (body := function_body(node)) is not None]
    if not bodies:
        return 0
    body = bodies[pick % len(bodies)]
    return body.start_byte + 1 + at % max(1, body.end_byte - body.start_byte - 1)


def _fresh(server: Any, text: str) -> list[Any]:
    matcher = server.workspace.matcher
    return Matcher(server.workspace.rules, version=matcher.version).check_source(text)


@pytest.mark.slow  # over 3 s: outside the fast loop
@settings(max_examples=int(__import__("os").environ.get("REBASE_EXAMPLES", "40")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 100_000), st.sampled_from(TYPED),
                          st.integers(0, 9), st.booleans()), min_size=1, max_size=8))
def test_findings_after_body_edits_are_those_of_a_fresh_check(edits) -> None:  # type: ignore[no-untyped-def]
    server, state = _session()
    for version, (pick, at, typed, elsewhere, before_checking) in enumerate(edits, start=2):
        offset = _in_a_body(state, pick, at) if elsewhere else at % len(state.document.source)
        _edit(server, state, offset, typed, version)
        if before_checking:  # a second edit before the check: both in one window
            _edit(server, state, _in_a_body(state, pick + 1, at // 7), "y", version)
        server.ensure_checked(state)
        fresh = _fresh(server, state.document.text)
        assert state.findings == fresh, state.document.text


def _shape(index: Any) -> list[Any]:
    return [(k.name, k.outer.start_byte, k.outer.end_byte, k.signature, [p.name for p in k.params],
             [(s.node.start_byte, s.node.end_byte, s.grid.start_byte if s.grid else None) for s in k.launches],
             [s.node.start_byte for s in k.direct_calls], k.autotune is not None, sorted(k.heuristics))
            for k in index.kernels] + [
        sorted((n, v.type, v.start_byte, v.end_byte) for n, v in index.functions.items()),
        sorted((n, v.type, v.start_byte, v.end_byte) for n, v in index.globals.items()),
        sorted(index._callees[1].items()),
        [index.callers_of(k.name) for k in index.kernels],
    ]


@pytest.mark.slow  # over 3 s: outside the fast loop
@settings(max_examples=int(__import__("os").environ.get("REBASE_EXAMPLES", "40")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 100_000), st.sampled_from(HOST_TYPED),
                          st.booleans(), st.booleans()), min_size=1, max_size=8))
# A launcher called from a kernel's body: typing a launch reads callers anywhere, kernels too.
@example([(0, 0, "\n    launch_bits(torch.ones(4, dtype=torch.float16))", True, False)])
def test_findings_after_host_edits_are_those_of_a_fresh_check(edits) -> None:  # type: ignore[no-untyped-def]
    """Edits in launchers, methods and their callers: launches and calls come and go, and
    argument types change through callers; a kernel's body now and then in between."""
    server, state = _session()
    for version, (pick, at, typed, in_kernel, before_checking) in enumerate(edits, start=2):
        offset = _in_a_body(state, pick, at) if in_kernel and pick % 3 == 0 else _in_a_host_function(state, pick, at)
        _edit(server, state, offset, typed, version)
        if before_checking:  # a second edit before the check: both in one window
            _edit(server, state, _in_a_host_function(state, pick, at // 7), "y", version)
        server.ensure_checked(state)
        assert state.findings == _fresh(server, state.document.text), state.document.text
    assert _shape(state.index) == _shape(index_module(state.document.root))


def test_a_dtype_changed_in_a_caller_retypes_the_launch_on_the_carried_path(monkeypatch) -> None:
    """`run_bits` passes int32 to `launch_bits`, which launches `bits_kernel` (`x & 1`): made
    float32, the launch's types change through the caller, and the finding appears, as a host
    edit carried across (not a full index)."""
    server, state = _session()
    rebased: list[Any] = []
    monkeypatch.setattr(Matcher, "check_rebased", _spy(Matcher.check_rebased, rebased))
    assert not [f for f in state.findings if f.code == "TS703"]
    source = state.document.source
    at = source.index(b"int32", source.index(b"def run_bits"))
    _edit_range(server, state, at, at + 3, "float", 2)
    server.ensure_checked(state)
    assert len(rebased) == 1 and state.index.rebases == 1
    assert [f.span.start[0] for f in state.findings if f.code == "TS703"] == [
        state.document.text.splitlines().index("    tl.store(out_ptr + offs, x & 1, mask=offs < n)")]
    assert state.findings == _fresh(server, state.document.text)
    at = state.document.source.index(b"float32", source.index(b"def run_bits"))
    _edit_range(server, state, at, at + 5, "int", 3)
    server.ensure_checked(state)
    assert len(rebased) == 2 and not [f for f in state.findings if f.code == "TS703"]


def test_a_launch_typed_in_a_host_function_takes_the_carried_path_and_reads_as_fresh(monkeypatch) -> None:
    server, state = _session()
    rebased: list[Any] = []
    monkeypatch.setattr(Matcher, "check_rebased", _spy(Matcher.check_rebased, rebased))
    source = state.document.source
    at = source.index(b"    return out", source.index(b"def launch_bits"))
    _edit_range(server, state, at, at, "    bits_kernel[(2,)](out, out, 8, BLOCK=16)\n", 2)
    server.ensure_checked(state)
    assert len(rebased) == 1
    kernel = state.index.kernel("bits_kernel")
    assert [s.node.text for s in kernel.launches] == [b"bits_kernel[(1,)](x, out, x.numel(), BLOCK=128)",
                                                     b"bits_kernel[(2,)](out, out, 8, BLOCK=16)"]
    assert _shape(state.index) == _shape(index_module(state.document.root))
    assert state.findings == _fresh(server, state.document.text)


def _spy(method: Any, calls: list[Any]) -> Any:
    def spied(self: Any, rebased: Any, *args: Any) -> Any:
        calls.append(rebased)
        return method(self, rebased, *args)
    return spied


def _edit_range(server: Any, state: Any, start: int, end: int, typed: str, version: int) -> None:
    document = state.document
    change = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(*document.point_to_lsp(*document.point(start))),
                          types.Position(*document.point_to_lsp(*document.point(end)))), text=typed)
    server.change(URI, version, [change])


def test_typing_in_bodies_takes_the_rebased_path_and_its_index_reads_as_a_fresh_one(monkeypatch) -> None:
    server, state = _session()
    rebased: list[int] = []
    original = Matcher.check_rebased
    monkeypatch.setattr(Matcher, "check_rebased", lambda *args: rebased.append(1) or original(*args))
    generator = random.Random(7)
    for version in range(2, 42):
        offset = _in_a_body(state, generator.randrange(100), generator.randrange(10_000))
        _edit(server, state, offset, generator.choice(["x", "y1", " + 1", ""]), version)
        server.ensure_checked(state)
        if version % 5 == 0:  # most kernels are read from the new tree only now: several edits later
            assert _shape(state.index) == _shape(index_module(state.document.root))
            assert state.findings == _fresh(server, state.document.text)
    assert len(rebased) >= 20, f"only {len(rebased)} of 40 edits in bodies were checked as rebased"


def test_after_a_run_of_carried_indexes_the_file_is_indexed_in_full_and_checks_stay_exact(monkeypatch) -> None:
    """`rebase.MAX_REBASES` in a row, then a full index (the relocated nodes' edit lists stay
    short); the findings are a fresh check's on both sides of the switch."""
    from tritonsmith.analysis import rebase

    monkeypatch.setattr(rebase, "MAX_REBASES", 3)
    server, state = _session()
    counts = []
    sites = corpus.editable_sites(BASE)  # assignment targets in kernels' bodies
    for version in range(2, 12):
        row, column = sites[version * 7 % len(sites)]
        offset = state.document.offset(row, column)  # (each edit adds one byte to its own line)
        _edit(server, state, offset, "x", version)
        server.ensure_checked(state)
        counts.append(state.index.rebases)
        assert state.findings == _fresh(server, state.document.text)
    assert counts == [1, 2, 3, 0, 1, 2, 3, 0, 1, 2]


def test_edits_leave_no_reference_cycles_behind() -> None:
    """What an edit supersedes (the index, its kernels, its launch typer and through them the
    old tree) is freed at once, not at the cyclic collector's next full pass. A launch typer kept
    on its index once pointed back at it: every edit in a host function then held on to its old
    tree until that rare pass, and a server's memory grew by 0.5 MB an edit on 5,000 lines
    between passes (`bench/soak.py --sites host`)."""
    server, state = _session()
    gc.collect()
    gc.disable()
    try:
        version = 2
        for step in range(12):
            pick = _in_a_host_function if step % 3 else _in_a_body
            offset = pick(state, step * 7, step * 13)
            for typed in ("x", ""):  # type a character, then delete it
                _edit(server, state, offset, typed, version)
                version += 1
                server.ensure_checked(state)
        assert state.index is not None and state.index.rebases > 0  # the carried path ran
        assert gc.collect() == 0
    finally:
        gc.enable()


def _assert_few_kernels_read_again(state: Any) -> None:
    """The edit took the carried path, and at most 2 of its relocated kernels were read again
    from the new tree (every one of them costs about 30 ms an edit on 55,000 lines)."""
    from tritonsmith.analysis.rebase import RelocatedKernel

    index = state.index
    assert index is not None and index.rebases == 1
    relocated = [k for k in index.kernels if type(k) is RelocatedKernel]
    resolved = [k.name for k in relocated if "outer" in k.__dict__]
    assert len(relocated) >= 5 and len(resolved) <= 2, resolved


def test_a_host_edit_reads_only_the_kernels_it_may_change() -> None:
    """An edit in a launcher re-reads from the new tree only the kernels it launches or calls:
    the others keep their places and are not resolved (at 55,000 lines, reading every one of
    them again cost 30 ms an edit; the launch typer's kernel spans once did that)."""
    server, state = _session()
    source = state.document.source
    at = source.index(b"    return out", source.index(b"def launch_bits"))
    _edit(server, state, at, "\n    z = 1", 2)
    server.ensure_checked(state)
    _assert_few_kernels_read_again(state)


def test_an_edit_in_a_helper_reads_only_the_kernels_it_may_change() -> None:
    """An edit in a jit helper's body (called, never launched) re-checks the helper and its
    callers without re-reading every other kernel from the new tree: whether the helper is called
    is the index's answer (`callers_of`), not a walk of every kernel's body."""
    server, state = _session()
    source = state.document.source
    at = source.index(b"return x * 2", source.index(b"def _twice"))
    _edit(server, state, at + len("return "), "triton.cdiv(x, 2) + ", 2)  # runs the check that asks
    server.ensure_checked(state)
    _assert_few_kernels_read_again(state)


def _launch_typings(monkeypatch: Any) -> list[Any]:
    """Each launch the launch typer types from now on (its arguments)."""
    from tritonsmith.analysis.argtypes import LaunchTyper

    typed: list[Any] = []
    original = LaunchTyper.launch_types_read
    monkeypatch.setattr(LaunchTyper, "launch_types_read", lambda self, *a: typed.append(a) or original(self, *a))
    return typed


def test_an_edit_in_a_kernels_body_types_no_launch_again(monkeypatch) -> None:
    """A kernel's body binds no module-level name and holds no host caller (the launch typer
    leaves calls in kernels out), so typing in it re-types no launch, even where the body uses
    the names the launchers' typing looked up (`launch_bits`, whose callers type `x`): on a real 2,300-line file,
    re-typing them was most of a keystroke's cost."""
    server, state = _session()
    typed = _launch_typings(monkeypatch)
    source = state.document.source
    body = source.index(b"x = tl.load(x_ptr", source.index(b"def bits_kernel"))
    for version, (at, text) in enumerate([(body, "x2 = x\n    "), (body, "out = n + 1  # as launch_bits and launch_twice pass them\n    ")], start=2):
        _edit_range(server, state, at, at, text, version)
        server.ensure_checked(state)
        assert state.index.rebases == version - 1 and typed == []
        assert state.findings == _fresh(server, state.document.text)  # (a fresh check types them all)
        typed.clear()


def test_a_global_statement_in_a_kernels_body_types_its_names_launches_again(monkeypatch) -> None:
    """`global n` would let the body bind a module-level name: then the launches whose typing
    looked up a name written there are typed again."""
    server, state = _session()
    typed = _launch_typings(monkeypatch)
    source = state.document.source
    body = source.index(b"x = tl.load(x_ptr", source.index(b"def bits_kernel"))
    _edit_range(server, state, body, body, "global x, out, n, launch_bits\n    ", 2)
    server.ensure_checked(state)
    assert state.index.rebases == 1 and typed
    assert state.findings == _fresh(server, state.document.text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab_(). \n=1", max_size=30), st.integers(0, 40), st.integers(0, 6),
       st.text(alphabet="ab_(). \n", max_size=6))
def test_the_calls_an_edit_reaches_hold_every_call_it_adds_or_removes(before: str, at: int, cut: int, typed: str) -> None:
    """`rebase._calls_reached` scans only around the edit: every name whose calls the edit
    made appear or disappear in the whole body is among the names it finds there."""
    from tritonsmith.analysis.index import callee_names
    from tritonsmith.analysis.rebase import _calls_reached

    old = before.encode()
    at = min(at, len(old))
    removed = min(cut, len(old) - at)
    new = old[:at] + typed.encode() + old[at + removed:]
    changed = callee_names(old) ^ callee_names(new)
    reached = _calls_reached(old, 0, len(old), at, at + removed) ^ _calls_reached(new, 0, len(new), at, at + len(typed))
    assert changed <= reached
