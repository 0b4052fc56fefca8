"""Compile-time evaluation of the small expressions that give constexpr values.

Block sizes reach a kernel as literals in `triton.Config({...})`, keyword values at a launch
site, parameter defaults or module constants (`BLOCK = tl.constexpr(128)`), sometimes through
a little arithmetic (`2 * BLOCK`, `triton.next_power_of_2(64)`). `evaluate` folds those; anything
it cannot fold is `UNKNOWN`, and checks that need a value stay silent on UNKNOWN.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from tree_sitter import Node

from .syntax import call_args, operator_of, text, unparen

__all__ = ["BINARY", "FOLDABLE", "UNKNOWN", "Unknown", "evaluate", "is_power_of_two"]


class Unknown:
    """The value of an expression that cannot be folded statically."""

    _instance: Unknown | None = None

    def __new__(cls) -> Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = Unknown()

BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "/": operator.truediv,
    "%": operator.mod,
    "**": operator.pow,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "&": operator.and_,
    "|": operator.or_,
}


def _next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# Host helpers that fold at compile time, by their qualified name (also the inference's, infer.py).
FOLDABLE: dict[str, Callable[..., Any]] = {
    "triton.next_power_of_2": _next_power_of_2,
    "triton.cdiv": _cdiv,
    "triton.language.cdiv": _cdiv,
    "min": min,
    "max": max,
    "int": int,
    "triton.language.constexpr": lambda v: v,
}


def is_power_of_two(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0 and value & (value - 1) == 0


def evaluate(
    node: Node | None,
    env: Mapping[str, Any],
    qualify: Callable[[Node], str | None] | None = None,
    *,
    _depth: int = 0,
) -> Any:
    """Fold `node` to a Python value using `env` for names, or return UNKNOWN."""
    node = unparen(node)
    if node is None or _depth > 50:
        return UNKNOWN
    kind = node.type
    try:
        if kind == "integer":
            return int(text(node).replace("_", ""), 0)
        if kind == "float":
            return float(text(node).replace("_", ""))
        if kind == "true":
            return True
        if kind == "false":
            return False
        if kind == "none":
            return None
        if kind == "string":
            from .syntax import string_value

            value = string_value(node)
            return UNKNOWN if value is None else value
        if kind == "identifier":
            return env.get(text(node), UNKNOWN)
        if kind == "unary_operator":
            operand = evaluate(node.child_by_field_name("argument"), env, qualify, _depth=_depth + 1)
            if operand is UNKNOWN:
                return UNKNOWN
            op = operator_of(node)  # an operator's node type is its text: nothing to decode
            unary: dict[str, Callable[[Any], Any]] = {"-": operator.neg, "+": operator.pos, "~": operator.invert}
            return unary[op](operand)
        if kind == "binary_operator":
            op = operator_of(node)
            if op not in BINARY:
                return UNKNOWN
            left = evaluate(node.child_by_field_name("left"), env, qualify, _depth=_depth + 1)
            right = evaluate(node.child_by_field_name("right"), env, qualify, _depth=_depth + 1)
            if left is UNKNOWN or right is UNKNOWN:
                return UNKNOWN
            if op == "**" and isinstance(right, int) and right > 64:
                return UNKNOWN
            if op == "<<" and isinstance(right, int) and right > 256:
                return UNKNOWN
            return BINARY[op](left, right)
        if kind in ("tuple", "list"):
            items = [evaluate(c, env, qualify, _depth=_depth + 1) for c in node.named_children if c.type != "comment"]
            return tuple(items)
        if kind == "call" and qualify is not None:
            function = node.child_by_field_name("function")
            name = qualify(function) if function is not None else None
            if name not in FOLDABLE:
                return UNKNOWN
            positional, keywords = call_args(node)
            if keywords:
                return UNKNOWN
            values = [evaluate(a, env, qualify, _depth=_depth + 1) for a in positional]
            if any(v is UNKNOWN for v in values):
                return UNKNOWN
            return FOLDABLE[name](*values)
    except (ArithmeticError, TypeError, ValueError, KeyError, OverflowError):
        return UNKNOWN
    return UNKNOWN
