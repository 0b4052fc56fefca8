"""The type rules (checks/typed.py) through the matcher: findings follow the launch site's
allocations, and the per-kernel cache never hands one file's type findings to another."""

from __future__ import annotations

from tritonsmith.rules import load_rules, pack_paths
from tritonsmith.rules.matcher import Matcher

KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def softplus_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.log(1 + tl.exp(x)))


def softplus():
    x = torch.empty(128, dtype=torch.{dtype}, device="cuda")
    out = torch.empty(128, dtype=torch.float32, device="cuda")
    softplus_kernel[(1,)](x, out, BLOCK=128)
'''


def _matcher() -> Matcher:
    return Matcher(load_rules(pack_paths(None, include_user=False)), version=(3, 9))


def test_an_allocation_outside_the_launch_changes_the_findings_and_the_cache_sees_it():
    matcher = _matcher()
    on_ints = [f.code for f in matcher.check_source(KERNEL.format(dtype="int32"))]
    on_floats = [f.code for f in matcher.check_source(KERNEL.format(dtype="float32"))]  # same kernel and launch text
    on_halves = [f.code for f in matcher.check_source(KERNEL.format(dtype="float16"))]
    assert "TS704" in on_ints and "TS704" in on_halves  # tl.exp takes fp32/fp64 only
    assert "TS704" not in on_floats
    assert [f.code for f in _matcher().check_source(KERNEL.format(dtype="float32"))] == on_floats


def test_a_helper_edit_rechecks_its_callers():
    helper = '''

@triton.jit
def load_tile(p, BLOCK: tl.constexpr):
    return tl.load(p + tl.arange(0, BLOCK)){cast}


@triton.jit
def caller_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = load_tile(x_ptr, BLOCK)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.exp(x))


def run():
    x = torch.empty(128, dtype=torch.int32, device="cuda")
    out = torch.empty(128, dtype=torch.float32, device="cuda")
    caller_kernel[(1,)](x, out, BLOCK=128)
'''
    head = "import torch\nimport triton\nimport triton.language as tl\n"
    matcher = _matcher()
    assert "TS704" in [f.code for f in matcher.check_source(head + helper.format(cast=""))]
    assert "TS704" not in [f.code for f in matcher.check_source(head + helper.format(cast=".to(tl.float32)"))]


ATOMIC = '''import torch
import triton
import triton.language as tl


@triton.jit
def count_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_{op}(out_ptr + offs, tl.load(x_ptr + offs))


def count():
    x = torch.empty(128, dtype=torch.{dtype}, device="cuda")
    out = torch.empty(128, dtype=torch.{dtype}, device="cuda")
    count_kernel[(1,)](x, out, BLOCK=128)
'''


def test_atomic_element_types_follow_the_triton_version():
    def codes(op: str, dtype: str, version: tuple[int, int]) -> list[str]:
        matcher = Matcher(load_rules(pack_paths(None, include_user=False)), version=version)
        return [f.code for f in matcher.check_source(ATOMIC.format(op=op, dtype=dtype))]

    assert "TS802" in codes("max", "float16", (3, 9)) and "TS802" in codes("max", "float16", (3, 4))
    assert "TS802" not in codes("add", "float16", (3, 9))
    # uint8: rejected by 3.9's element check; older versions are not known to reject it here.
    assert "TS802" in codes("add", "uint8", (3, 9)) and "TS802" not in codes("add", "uint8", (3, 4))


def _checked_as_edited(matcher: Matcher, versions: list[str], monkeypatch) -> list[tuple[list[str], int]]:  # type: ignore[no-untyped-def]
    """Each version's codes and how many launches were typed for it, checked as the language
    server does: one document whose caches (`LaunchCache`) live across its versions."""
    from tritonsmith.analysis import Document, index_module
    from tritonsmith.analysis.argtypes import LaunchTyper
    from tritonsmith.analysis.index import LaunchCache

    calls: list[int] = []
    original = LaunchTyper.launch_types
    monkeypatch.setattr(LaunchTyper, "launch_types", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    cache = LaunchCache()
    out = []
    for version in versions:
        document = Document(version)
        calls.clear()
        found = matcher.check_module(document.source, index_module(document.root, launch_cache=cache))
        out.append(([f.code for f in found], len(calls)))
    return out


def test_an_edit_inside_a_kernel_reuses_the_files_launch_types(monkeypatch):
    """Typing in a kernel body leaves the host code as it was: the launch sites' argument types
    (argtypes.py, the costliest part of a cache key) are not recomputed; a host edit is seen."""
    source = KERNEL.format(dtype="int32")
    edited = source.replace("tl.store(out_ptr + offs, tl.log(1 + tl.exp(x)))",
                            "y = tl.exp(x)\n    tl.store(out_ptr + offs, tl.log(1 + y))")
    first, body, host = _checked_as_edited(_matcher(), [source, edited, edited.replace("torch.int32", "torch.float64")],
                                           monkeypatch)
    assert "TS704" in first[0] and first[1] == 1
    assert "TS704" in body[0] and body[1] == 0
    assert "TS704" not in host[0] and host[1] == 1


TWO_LAUNCHERS = '''import torch
import triton
import triton.language as tl


@triton.jit
def exp_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.exp(tl.load(x_ptr + offs)))


def first(x):
    out = torch.empty(128, dtype=torch.float32, device="cuda")
    exp_kernel[(1,)](x, out, BLOCK=128)


def second(x):
    out = torch.empty(128, dtype=torch.float32, device="cuda")
    exp_kernel[(1,)](x, out, BLOCK=128)


def use_first():
    first(torch.empty(128, dtype=torch.float32, device="cuda"))


def use_second():
    second(torch.empty(128, dtype=torch.float32, device="cuda"))
'''


def test_a_host_edit_re_types_only_the_launches_it_can_change(monkeypatch):
    """Launch types are kept per launch with what they read (analysis/launch_memo.py): editing
    one launcher's caller re-types that launcher's launch, not the other; a new caller, written
    anywhere, is seen; a changed import re-types everything."""
    matcher = _matcher()
    int_caller = TWO_LAUNCHERS.replace("first(torch.empty(128, dtype=torch.float32",
                                       "first(torch.empty(128, dtype=torch.int32")
    new_caller = TWO_LAUNCHERS + '\n\ndef more():\n    second(torch.empty(128, dtype=torch.int16, device="cuda"))\n'
    checked = _checked_as_edited(matcher, [TWO_LAUNCHERS, int_caller, TWO_LAUNCHERS, new_caller,
                                           "import numpy\n" + new_caller], monkeypatch)
    assert checked[0] == ([], 2)
    assert checked[1] == (["TS704"], 1)  # only first's launch: its caller changed
    assert checked[2] == ([], 1)
    # A second caller of `second` with int16 arguments: the callers disagree, so x's type is
    # unknown at that launch and nothing is reported, but the launch was typed again.
    assert checked[3][1] == 1
    assert checked[4][1] == 2  # an import changed: every launch again


def test_a_grid_edited_away_from_the_launch_changes_the_findings_and_the_cache_sees_it():
    """The grid is a lambda assigned in the launcher, a statement before the launch: a key
    that held only the launch's text handed back the findings of the grid before the edit
    (the same length, so the launch stays where it was)."""
    source = '''import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def copy(x, out):
    grid = lambda meta: (triton.cdiv(x.numel(), meta["{key}"]),)
    copy_kernel[grid](x, out, x.numel(), BLOCK_SIZE=1024)
'''
    matcher = _matcher()
    assert "TS905" not in [f.code for f in matcher.check_source(source.format(key="BLOCK_SIZE"))]
    assert "TS905" in [f.code for f in matcher.check_source(source.format(key="BLOCK_SIZX"))]


def test_a_global_defined_again_below_moves_where_the_finding_says_it_is_defined():
    """Two `z = 1` at module level: the last is the global. The module's key held each
    global's value text only, so a check after the second was added handed back the cached
    finding pointing at the first."""
    source = '''import triton
import triton.language as tl

z = 1


@triton.jit
def store_z(x_ptr):
    tl.store(x_ptr, z)
'''
    matcher = _matcher()

    def defined_at(text: str) -> list[int]:
        return [r.span.start[0] for f in matcher.check_source(text) if f.code == "TS110" for r in f.related]

    assert defined_at(source) == [3]
    assert defined_at(source + "\n\nz = 1\n") == [11]
