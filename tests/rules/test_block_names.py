"""Which locals hold block tensors (rules/context.py `_BlockNames`): decided per name on first
use, through assignments that may refer to one another in cycles. Whatever order the names are
asked in, the answers are those of asking each alone."""

from __future__ import annotations

import itertools

import pytest

from tritonsmith.analysis import Document, index_module
from tritonsmith.rules.context import KernelContext

BODY = """
    a = b
    a = tl.arange(0, 16)
    b = a
    c = d + 1
    d = c * 2
    e = c
    f = g
    g = f
    g = tl.zeros((16,), dtype=tl.float32)
    h = tl.sum(a, axis=0)
    i = h + e
"""
NAMES = ["a", "b", "c", "d", "e", "f", "g", "h", "i"]
BLOCKS = {"a", "b", "f", "g"}  # `c`, `d`, `e` only ever hold scalars; `h` is a reduction


def _context() -> KernelContext:
    source = ("import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr):\n"
              + BODY.lstrip("\n"))
    document = Document(source)
    index = index_module(document.root)
    return KernelContext(index.kernels[0], index, document.source, (3, 9))


def test_each_name_alone() -> None:
    for name in NAMES:
        assert (name in _context().block_names) == (name in BLOCKS), name


@pytest.mark.parametrize("order", list(itertools.islice(itertools.permutations(NAMES), 0, None, 9973)))
def test_any_order_gives_the_same_answers(order: tuple[str, ...]) -> None:
    # Asking `a` first decides `b` while `a` is being decided (`a = b`, `b = a`): `b` is "no" on
    # that path only, and must not be remembered so.
    names = _context().block_names
    assert {name for name in order if name in names} == BLOCKS
    assert {name for name in order if name in names} == BLOCKS  # and again, from what it kept
