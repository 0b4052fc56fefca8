"""What launch typing (analysis/argtypes.py) costs as a file's launchers multiply: linear.

Real code (fla's `modules/activations.py`) has twenty launchers that each pass `y =
_alloc_output(x)` and `x = _ensure_contiguous(x)` to their kernel. Each launch's walk through the
shared wrappers' callers used to be cut at the call it came from, so no answer was kept and every
launch walked every caller again, and their callers: cubic in the launchers, the file's check at
eight times the corpus's cost per line. The answers must stay what they were.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tritonsmith.analysis import Document, argtypes, index_module
from tritonsmith.analysis.index import LaunchCache
from tritonsmith.rules.context import launch_param_types

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    """bench/typing_cost.py, whose generated files these are (the bench measures them)."""
    spec = importlib.util.spec_from_file_location("typing_cost", ROOT / "bench" / "typing_cost.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _bench()
HEAD, LAUNCHER = BENCH.LAUNCHERS_HEAD, BENCH.LAUNCHER


def _source(launchers: int, dtype: str = "float16") -> str:
    return str(BENCH.launchers(launchers, dtype))


def _typed(source: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict[str, str]], int]:
    """Every launch's parameter types, and how many expressions the typer evaluated."""
    calls = [0]
    original = argtypes.LaunchTyper.value

    def counted(self: argtypes.LaunchTyper, *args: object) -> object:
        calls[0] += 1
        return original(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(argtypes.LaunchTyper, "value", counted)
    document = Document(source)
    index = index_module(document.root)
    types = [launch_param_types(kernel, index, site, document.source)
             for kernel in index.kernels for site in kernel.launches]
    return types, calls[0]


def test_each_launch_through_shared_wrappers_is_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    types, _ = _typed(_source(6), monkeypatch)
    assert types == [{"x_ptr": "*fp16", "y_ptr": "*fp16"}] * 6


def test_callers_that_disagree_leave_the_type_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    # One launcher fed int32, the others fp16: the wrappers' parameter has no single type.
    source = HEAD + LAUNCHER.format(i=0, dtype="int32") + "".join(LAUNCHER.format(i=i, dtype="float16")
                                                                  for i in range(1, 4))
    types, _ = _typed(source, monkeypatch)
    assert all("y_ptr" not in t for t in types)


def test_the_cost_grows_linearly_with_the_launchers(monkeypatch: pytest.MonkeyPatch) -> None:
    _, eight = _typed(_source(8), monkeypatch)
    _, thirty_two = _typed(_source(32), monkeypatch)
    # Linear: four times the launchers, about four times the work (it was about 40 times).
    assert thirty_two <= 5 * eight, (eight, thirty_two)


def test_recursion_through_a_parameter_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    source = HEAD + '''

@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


def down(x, depth):
    if depth:
        return down(x, depth - 1)
    kernel[(1,)](x, x.numel(), BLOCK=128)
    return x


def ping(x):
    return pong(x)


def pong(x):
    kernel[(1,)](x, x.numel(), BLOCK=128)
    return ping(x)


def use():
    down(torch.empty(8, dtype=torch.float32, device="cuda"), 3)
    ping(torch.empty(8, dtype=torch.float32, device="cuda"))
'''
    types, calls = _typed(source, monkeypatch)
    assert types == [{"x_ptr": "*fp32"}] * 2
    assert calls < 200


def _dispatchers(count: int) -> str:
    return str(BENCH.dispatchers(count))


@pytest.mark.timeout(60)  # without the budget: hours
def test_host_functions_that_all_call_one_another_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    # The walk through callers is exponential in such a file (nine took a minute); each launch's
    # typing stops at a budget and leaves its types unknown.
    types, calls = _typed(_dispatchers(12), monkeypatch)
    assert len(types) == 12
    assert calls <= 12 * (argtypes._BUDGET + 1)
    small, _ = _typed(_dispatchers(3), monkeypatch)  # within the budget: typed through the callers
    assert small == [{"x_ptr": "*fp16"}] * 3


def _counted_types(source: str, cache: LaunchCache | None, monkeypatch: pytest.MonkeyPatch
                   ) -> tuple[list[dict[str, str]], int]:
    """`_typed`, with the editor's memo of launch types across versions (`LaunchCache`)."""
    calls = [0]
    original = argtypes.LaunchTyper.value

    def counted(self: argtypes.LaunchTyper, *args: object) -> object:
        calls[0] += 1
        return original(self, *args)  # type: ignore[arg-type]

    with monkeypatch.context() as patched:
        patched.setattr(argtypes.LaunchTyper, "value", counted)
        document = Document(source)
        index = index_module(document.root, launch_cache=cache)
        types = [launch_param_types(kernel, index, site, document.source)
                 for kernel in index.kernels for site in kernel.launches]
    return types, calls[0]


@pytest.mark.timeout(60)
def test_a_launch_that_gave_up_is_not_walked_again_until_an_edit_touches_what_it_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # In the editor every keystroke in the kernel typed all twelve launches again, each up to the
    # budget: 0.2 s a keystroke for twelve such functions, 1.5-2.8 s for thirty.
    cache = LaunchCache()
    source = _dispatchers(12)
    first, calls = _counted_types(source, cache, monkeypatch)
    assert first == [{}] * 12 and calls > 12 * argtypes._BUDGET // 2
    in_kernel = source.replace("    offsets = ", "    pid = tl.program_id(0)\n    offsets = ", 1)
    assert in_kernel != source
    again, calls = _counted_types(in_kernel, cache, monkeypatch)
    assert again == first and calls == 0
    # An edit to a function the walks read: typed afresh, as a fresh check types it.
    typed_here = in_kernel.replace("def f5(x, flag):\n",
                                   "def f5(y, flag):\n    x = torch.empty(8, dtype=torch.float32, device='cuda')\n")
    kept, calls = _counted_types(typed_here, cache, monkeypatch)
    assert calls > 0 and kept == _counted_types(typed_here, None, monkeypatch)[0]
    assert {"x_ptr": "*fp32"} in kept


SHARED = '''import torch
import triton
import triton.language as tl

SIZE = 1


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets))


def helper(t):
    kernel[(1,)](t, SIZE, BLOCK=16)
    other(t)


def other(u):
    kernel[(1,)](u, 1, BLOCK=16)
''' + "".join(f"\n\ndef c{i}():\n    helper(torch.empty(8, dtype=torch.float16, device='cuda'))\n" for i in range(24)) \
    + "".join(f"\n\ndef d{i}():\n    other(torch.empty(8, dtype=torch.float16, device='cuda'))\n" for i in range(6))

# Edits to that file: a constant only the first launch reads, the second launch's function, the
# kernel's body, and callers added and removed.
SHARED_EDITS = [
    ("SIZE = 1\n", "SIZE = 2\n"), ("SIZE = 2\n", "SIZE = 1\n"),
    ("def other(u):\n", "def other(u):\n    u = u\n"), ("def other(u):\n    u = u\n", "def other(u):\n"),
    ("    offsets = ", "    pid = tl.program_id(0)\n    offsets = "),
    ("\n\ndef d0():", "\n\ndef e0():\n    other(torch.empty(8, dtype=torch.float16, device='cuda'))\n\n\ndef d0():"),
    ("\n\ndef c3():\n    helper(", "\n\ndef c3():\n    print("),
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                               HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.sampled_from(range(len(SHARED_EDITS))), min_size=1, max_size=6))
def test_launches_near_the_budget_get_the_types_of_a_fresh_check_after_any_edits(
        picks: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    # The typer shares answers between launches and a shared answer costs no budget: the second
    # launch fits its budget only after the first has been typed. The editor takes the first from
    # its memo after an edit; it must still give the second what a fresh check gives it.
    monkeypatch.setattr(argtypes, "_BUDGET", 60)
    cache = LaunchCache()
    text = SHARED
    assert _counted_types(text, cache, monkeypatch)[0] == _counted_types(text, None, monkeypatch)[0]
    for pick in picks:
        old, new = SHARED_EDITS[pick]
        text = text.replace(old, new, 1)
        assert _counted_types(text, cache, monkeypatch)[0] == _counted_types(text, None, monkeypatch)[0], text


def test_the_editor_keeps_the_launch_types_of_a_fresh_check_near_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same, through the language server's own path: an edit in a kernel's body or a host
    function carries the index over (analysis/rebase.py), an edit elsewhere indexes the file
    again with its launch memo."""
    from lsprotocol import types

    from tritonsmith.server import create_server

    monkeypatch.setattr(argtypes, "_BUDGET", 60)
    uri = "file:///budget.py"
    session = create_server().session
    state = session.open(uri, 1, SHARED)
    session.ensure_checked(state)
    steps = [SHARED_EDITS[i] for i in (4, 2, 0, 4, 3, 1, 6, 2, 5)]
    for version, (old, new) in enumerate(steps, start=2):
        source = state.document.text
        if old not in source:
            continue
        start = state.document.point_to_lsp(*state.document.point(source.index(old)))
        end = state.document.point_to_lsp(*state.document.point(source.index(old) + len(old)))
        session.change(uri, version, [types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(*start), types.Position(*end)), text=new)])
        session.ensure_checked(state)
        index, data = state.index, state.document.source
        kept = [launch_param_types(k, index, s, data) for k in index.kernels for s in k.launches]
        assert kept == _counted_types(state.document.text, None, monkeypatch)[0], state.document.text
