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

from .syntax import operator_of, text, unparen

__all__ = ["BINARY", "FOLDABLE", "UNKNOWN", "Compiled", "Unknown", "compile_expression", "compile_sequence", "evaluate", "is_power_of_two"]


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


def evaluate(node: Node | None, env: Mapping[str, Any], qualify: Callable[[Node], str | None] | None = None) -> Any:
    """Fold `node` to a Python value using `env` for names, or return UNKNOWN."""
    return compile_expression(node, qualify)(env)


Compiled = Callable[[Mapping[str, Any]], Any]
MAX_DEPTH = 50  # deeper expressions are not folded (nor is a stray literal allowed to hang us)
MAX_REPEAT = 64  # `(1,) * n` is folded up to this n


def compile_expression(node: Node | None, qualify: Callable[[Node], str | None] | None = None, *,
                       calls: Mapping[str, Callable[..., Any]] = FOLDABLE) -> Compiled:
    """`node` as a function of the names' values, UNKNOWN where it cannot tell: compiled once,
    evaluated for each environment (the size planner, evaluator/sizes.py, tries many). A call
    folds when `qualify` names its function and `calls` has it. A tuple keeps an element it
    cannot fold as UNKNOWN (the checks read the others)."""
    return _compiled(node, qualify, calls, 0)


def compile_sequence(items: list[Node], qualify: Callable[[Node], str | None] | None = None, *,
                     calls: Mapping[str, Callable[..., Any]] = FOLDABLE) -> Compiled:
    """The tuple of `items` (a call's arguments, say: `*name` splices a tuple in), compiled as
    `compile_expression` compiles one."""
    return _sequence([c for c in items if c.type != "comment"], lambda child: _compiled(child, qualify, calls, 1))


def _unknown(env: Mapping[str, Any]) -> Any:
    return UNKNOWN


def _constant(value: Any) -> Compiled:
    return lambda env: value


def _compiled(node: Node | None, qualify: Callable[[Node], str | None] | None,
              calls: Mapping[str, Callable[..., Any]], depth: int) -> Compiled:
    node = unparen(node)
    if node is None or depth > MAX_DEPTH:
        return _unknown
    kind = node.type
    sub = lambda child: _compiled(child, qualify, calls, depth + 1)  # noqa: E731
    if kind in ("integer", "float"):
        try:
            raw = text(node).replace("_", "")
            return _constant(int(raw, 0) if kind == "integer" else float(raw))
        except ValueError:
            return _unknown
    if kind in ("true", "false", "none"):
        return _constant({"true": True, "false": False, "none": None}[kind])
    if kind == "string":
        from .syntax import string_value

        value = string_value(node)
        return _unknown if value is None else _constant(value)
    if kind == "identifier":
        name = text(node)
        return lambda env: env.get(name, UNKNOWN)
    if kind == "unary_operator":
        return _unary(operator_of(node), sub(node.child_by_field_name("argument")))
    if kind == "binary_operator":
        op = operator_of(node)  # an operator's node type is its text: nothing to decode
        if op not in BINARY:
            return _unknown
        return _binary(op, sub(node.child_by_field_name("left")), sub(node.child_by_field_name("right")))
    if kind in ("tuple", "list", "expression_list"):
        return _sequence([c for c in node.named_children if c.type != "comment"], sub)
    if kind == "subscript":
        return _subscript(sub(node.child_by_field_name("value")), sub(node.child_by_field_name("subscript")))
    if kind == "call" and qualify is not None:
        function = node.child_by_field_name("function")
        called = qualify(function) if function is not None else None
        args = node.child_by_field_name("arguments")
        if called is None or called not in calls or args is None or args.type != "argument_list" or \
                any(a.type in ("keyword_argument", "dictionary_splat") for a in args.named_children):
            return _unknown
        return _call(calls[called], _sequence([c for c in args.named_children if c.type != "comment"], sub))
    return _unknown


_UNARY: dict[str, Callable[[Any], Any]] = {"-": operator.neg, "+": operator.pos, "~": operator.invert}


def _unary(op: str, operand: Compiled) -> Compiled:
    function = _UNARY.get(op)
    if function is None:
        return _unknown

    def unary(env: Mapping[str, Any]) -> Any:
        value = operand(env)
        if value is UNKNOWN:
            return UNKNOWN
        try:
            return function(value)
        except (ArithmeticError, TypeError, ValueError):
            return UNKNOWN
    return unary


def _binary(op: str, left: Compiled, right: Compiled) -> Compiled:
    function = BINARY[op]

    def binary(env: Mapping[str, Any]) -> Any:
        a, b = left(env), right(env)
        if a is UNKNOWN or b is UNKNOWN:
            return UNKNOWN
        if isinstance(a, tuple) or isinstance(b, tuple):
            if op == "+" and isinstance(a, tuple) and isinstance(b, tuple):
                return a + b
            if op == "*" and isinstance(a, tuple) and isinstance(b, int) and 0 <= b <= MAX_REPEAT:
                return a * b
            return UNKNOWN
        if (op == "**" and isinstance(a, (int, float)) and isinstance(b, (int, float))
                and (abs(b) > 64 or abs(a) > 1 << 20)) or (op == "<<" and isinstance(b, int) and abs(b) > 64):
            return UNKNOWN  # nothing a size or a block is written with
        try:
            return function(a, b)
        except (ArithmeticError, TypeError, ValueError):
            return UNKNOWN
    return binary


def _sequence(items: list[Node], sub: Callable[[Node], Compiled]) -> Compiled:
    """A tuple of the items' values; `*name` splices a tuple in (anything else: UNKNOWN)."""
    parts = [(item.type == "list_splat", sub(item.named_children[0] if item.type == "list_splat" else item))
             for item in items]

    def sequence(env: Mapping[str, Any]) -> Any:
        values: list[Any] = []
        for splat, part in parts:
            value = part(env)
            if splat:
                if not isinstance(value, tuple):
                    return UNKNOWN
                values.extend(value)
            else:
                values.append(value)
        return tuple(values)
    return sequence


def _subscript(value: Compiled, index: Compiled) -> Compiled:
    def subscript(env: Mapping[str, Any]) -> Any:
        seq, i = value(env), index(env)
        if isinstance(seq, tuple) and isinstance(i, int) and -len(seq) <= i < len(seq):
            return seq[i]
        return UNKNOWN
    return subscript


def _call(function: Callable[..., Any], arguments: Compiled) -> Compiled:
    def call(env: Mapping[str, Any]) -> Any:
        values = arguments(env)
        if values is UNKNOWN or any(v is UNKNOWN for v in values):
            return UNKNOWN
        try:
            return function(*values)
        except (ArithmeticError, TypeError, ValueError):
            return UNKNOWN
    return call
