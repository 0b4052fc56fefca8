"""What a host function's body binds (rules/checks/launch.py `_body_bindings`, read by the launch
checks to tell a launched name shadowed by a local): found by a tree-sitter query, it must be what
a plain walk of the body finds, names and nodes, in the walk's order."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from tree_sitter import Node

from tritonsmith.analysis import Document
from tritonsmith.analysis.syntax import text, walk
from tritonsmith.rules.checks.launch import _body_bindings

ROOT = Path(__file__).resolve().parents[2]


def _walked(function: Node) -> dict[str, list[Node]]:
    """The oracle: a walk of every node, a node before its children, children right to left,
    stopping at nested scopes and imports."""
    out: dict[str, list[Node]] = {}

    def bind(names: Iterable[str], node: Node) -> None:
        for name in dict.fromkeys(names):
            out.setdefault(name, []).append(node)

    body = function.child_by_field_name("body")
    if body is None:
        return out
    stack = list(body.named_children)
    while stack:
        node = stack.pop()
        if node.type == "assignment":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is not None and right is not None:
                if left.type == "identifier":
                    bind([text(left)], right)
                elif left.type in ("pattern_list", "tuple_pattern"):
                    bind([text(c) for c in left.named_children if c.type == "identifier"], left)
        elif node.type == "function_definition":
            bind([text(node.child_by_field_name("name"))], node)
            continue
        elif node.type in ("for_statement", "with_item", "for_in_clause"):
            left = node.child_by_field_name("left")
            if left is not None:
                bind([text(n) for n in walk(left) if n.type == "identifier"], left)
        elif node.type in ("import_statement", "import_from_statement", "lambda", "class_definition"):
            if node.type != "lambda":
                bind(text(node).replace(",", " ").split(), node)
            continue
        stack.extend(node.named_children)
    return out


TRICKY = '''
def launcher(x, kernel):
    kernel = pick(kernel)
    a, b = x.shape
    (c, d) = 1, 2
    for i, (j, k) in enumerate(pairs):
        kernel = other
        if i:
            def kernel(y):
                inner = 1
                return inner
    with open(p) as handle, lock:
        squares = [n * n for n in range(4) if (m := n)]
    f = lambda kernel: kernel + 1
    class Local:
        kernel = 3
    import torch, numpy as np
    from triton import jit as kernel
    try:
        grid = (1,)
    except Exception as error:
        grid = None
    while grid:
        grid = {g: g for g in grid}
    kernel = kernel[grid]
    return kernel


def broken(x):
    y = (
    kernel = 1
'''


def _functions(source: bytes) -> list[Node]:
    return [n for n in walk(Document(source).root) if n.type == "function_definition"]


def _spans(found: dict[str, list[Node]]) -> list[tuple[str, list[tuple[int, int, str]]]]:
    return [(name, [(n.start_byte, n.end_byte, n.type) for n in nodes]) for name, nodes in found.items()]


@pytest.mark.parametrize("source", [TRICKY.encode()] + sorted(
    p.read_bytes() for p in [*(ROOT / "examples").rglob("*.py"), *(ROOT / "bench" / "problems").glob("*.py")]))
def test_the_query_finds_what_a_walk_finds(source: bytes) -> None:
    functions = _functions(source)
    assert functions
    for function in functions:
        assert _spans(_body_bindings(function)) == _spans(_walked(function)), text(function)[:200]


def test_the_tricky_function_binds_what_python_would() -> None:
    launcher = _functions(TRICKY.encode())[0]
    found = _body_bindings(launcher)
    # (Not `handle`: a `with ... as` target is not read, nor a class's name on its own.)
    assert {"kernel", "a", "b", "c", "d", "i", "j", "k", "n", "f", "torch", "np", "grid"} <= set(found)
    assert "inner" not in found and "y" not in found  # a nested def's own scope
    assert [n.type for n in found["kernel"]].count("function_definition") == 1
