"""Launch types kept across edits (analysis/launch_memo.py) are the types a fresh check of the
same text computes, after any sequence of edits: the memo may only skip work, never change an
answer."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tritonsmith.analysis import Document, index_module
from tritonsmith.analysis.index import LaunchCache
from tritonsmith.rules.context import launch_param_types

BASE = '''import torch
import triton
import triton.language as tl

SCALE = 2


@triton.jit
def exp_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=offs < n)))


def make(n):
    return torch.empty(n, dtype=torch.float32, device="cuda")


def first(x, n):
    out = torch.empty_like(x)
    exp_kernel[(1,)](x, out, n, BLOCK=128)
    return out


def second(x):
    out = make(128)
    exp_kernel[(1,)](x, out, SCALE, BLOCK=128)
    return out


def both(y):
    first(y, 128)
    second(y)


def use():
    first(torch.empty(128, dtype=torch.float16, device="cuda"), 128)
    second(make(64))
    both(torch.empty(4, dtype=torch.bfloat16, device="cuda"))
'''

# Edits a user makes to such a file: retype an allocation, add or drop a caller, rename a
# helper, change a constant, move lines, touch a kernel, add an import, break the syntax.
EDITS = [
    ("dtype=torch.float16", "dtype=torch.int32"),
    ("dtype=torch.int32", "dtype=torch.float16"),
    ("dtype=torch.float32", "dtype=torch.float64"),
    ("dtype=torch.float64", "dtype=torch.float32"),
    ("    second(make(64))\n", ""),
    ("def use():\n", "def use():\n    second(torch.empty(8, dtype=torch.int8, device='cuda'))\n"),
    ("def make(n):", "def make_old(n):"),
    ("def make_old(n):", "def make(n):"),
    ("SCALE = 2", "SCALE = 2.5"),
    ("SCALE = 2.5", "SCALE = 2"),
    ("\n\ndef second", "\n\n# a comment\n\n\ndef second"),
    ("tl.exp(tl.load", "tl.log(tl.load"),
    ("x_ptr, out_ptr, n, BLOCK", "x_ptr, out_ptr, n: tl.int64, BLOCK"),
    ("import torch\n", "import torch\nfrom torch import float16\n"),
    ("    return out\n", "    return out +\n"),
    ("    return out +\n", "    return out\n"),
    ("    out = torch.empty_like(x)\n", "    x = x.half()\n    out = torch.empty_like(x)\n"),
    # `both` passes one parameter to two launchers: its value is found once per file and told to
    # the second launch's reads (argtypes.LaunchTyper._parameter), which must see these edits.
    ("torch.bfloat16", "torch.int8"),
    ("torch.int8", "torch.bfloat16"),
    ("    both(torch.empty(4", "    both(make(4)) or (torch.empty(4"),
]


def _types(document: Document, cache: LaunchCache | None) -> list[tuple[str, int, dict[str, str]]]:
    index = index_module(document.root, launch_cache=cache)
    return [(kernel.name, launch.node.start_byte, launch_param_types(kernel, index, launch, document.source))
            for kernel in index.kernels for launch in kernel.launches]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(range(len(EDITS))), min_size=1, max_size=12))
def test_kept_launch_types_equal_a_fresh_computation(picks: list[int]) -> None:
    cache = LaunchCache()
    text = BASE
    assert _types(Document(text), cache) == _types(Document(text), None)
    for pick in picks:
        old, new = EDITS[pick]
        text = text.replace(old, new, 1)
        assert _types(Document(text), cache) == _types(Document(text), None), text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(range(len(EDITS))), st.integers(0, 10_000), st.sampled_from(["x", "\n", "", "("])),
                min_size=1, max_size=10))
def test_a_checked_document_kept_across_edits_has_the_findings_of_a_fresh_check(edits) -> None:  # type: ignore[no-untyped-def]
    """The language server's path (one document edited in place, its `LaunchCache`, one matcher
    and its per-kernel cache) against a fresh check of the same text, after edits from the list
    above and single characters typed or deleted anywhere."""
    from tritonsmith.rules import load_rules, pack_paths
    from tritonsmith.rules.matcher import Matcher

    rules = load_rules(pack_paths(None, include_user=False))
    kept, cache = Matcher(rules, version=(3, 9)), LaunchCache()
    document = Document(BASE)
    for pick, at, typed in edits:
        old, new = EDITS[pick]
        text = document.text
        if old in text:
            start = text.index(old)
            document.edit(document.point(start), document.point(start + len(old)), new)
        at = at % max(1, len(document.text))
        document.edit(document.point(at), document.point(at + (1 if typed == "" else 0)), typed)
        found = kept.check_module(document.source, index_module(document.root, launch_cache=cache))
        fresh = Matcher(rules, version=(3, 9)).check_source(document.text)
        assert [(f.code, f.span, f.message) for f in found] == [(f.code, f.span, f.message) for f in fresh]
