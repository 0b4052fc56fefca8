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


def test_an_edit_inside_a_kernel_reuses_the_files_launch_types(monkeypatch):
    """Typing in a kernel body leaves the host code as it was: the launch sites' argument types
    (argtypes.py, the costliest part of a cache key) are not recomputed; a host edit is seen."""
    from tritonsmith.analysis.argtypes import LaunchTyper

    matcher = _matcher()
    source = KERNEL.format(dtype="int32")
    assert "TS704" in [f.code for f in matcher.check_source(source)]
    calls = []
    original = LaunchTyper.launch_types
    monkeypatch.setattr(LaunchTyper, "launch_types", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    edited = source.replace("tl.store(out_ptr + offs, tl.log(1 + tl.exp(x)))",
                            "y = tl.exp(x)\n    tl.store(out_ptr + offs, tl.log(1 + y))")
    assert "TS704" in [f.code for f in matcher.check_source(edited)]
    assert calls == []
    assert "TS704" not in [f.code for f in matcher.check_source(edited.replace("torch.int32", "torch.float64"))]
    assert calls
