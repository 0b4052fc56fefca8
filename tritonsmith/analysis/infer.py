"""Types and shapes: what every value in a kernel is, per launch configuration.

An abstract interpretation of one kernel body (and the jit helpers it calls) for one set of
constexpr values (a `Scenario`: defaults, an autotune Config, a launch site): each expression gets
a `Value` with its element type (`fp32`, `i1`, a pointer's element type), its shape (`()` for a
scalar, a tuple of `Dim`s for a block: concrete where the constexpr is known, symbolic where it
is not) and its constexpr value when the compiler would know it. Triton's own rules decide what
an operation produces (promotion, broadcasting, reductions, `tl.dot`); what is not understood
becomes `UNKNOWN_VALUE`, and nothing is ever concluded from an unknown.

While interpreting, it records what the compiler would reject when every fact the rejection
needs is known (`Issue`s: incompatible broadcasts, a reshape that changes the element count, a
width-changing bitcast, math on integers, ...). The rules in `rules/checks/typed.py` turn issues
into findings; the server's hover shows the values.

Tree-sitter only, no torch or triton: the language server imports this.
"""

from __future__ import annotations

import contextlib
import functools
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tree_sitter import Node, Query, QueryCursor

from .document import PY_LANGUAGE
from .statement_memo import StatementMemo
from .syntax import call_args, operator_of, text, unparen, walk
from .values import BINARY, FOLDABLE, UNKNOWN

__all__ = ["DTYPES", "Dim", "Issue", "KernelTypes", "UNKNOWN_VALUE", "Value", "infer_kernel", "parameter_values"]

# -- element types ------------------------------------------------------------------------------

DTYPES: dict[str, str] = {
    "float16": "fp16", "float32": "fp32", "float64": "fp64", "bfloat16": "bf16", "float8e4nv": "fp8e4nv",
    "float8e5": "fp8e5", "float8e4b15": "fp8e4b15", "float8e4b8": "fp8e4b8", "float8e5b16": "fp8e5b16",
    "int1": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
    "uint16": "u16", "uint32": "u32", "uint64": "u64",
}
"""`tl.<name>` -> the short name Triton prints in signatures (`tl.float32` -> `fp32`)."""

_WIDTH = {"i1": 1, "i8": 8, "u8": 8, "i16": 16, "u16": 16, "i32": 32, "u32": 32, "i64": 64, "u64": 64,
          "fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64, "fp8e4nv": 8, "fp8e5": 8, "fp8e4b15": 8,
          "fp8e4b8": 8, "fp8e5b16": 8}


def is_float(dtype: str | None) -> bool:
    return dtype is not None and (dtype.startswith("fp") or dtype == "bf16")


def is_int(dtype: str | None) -> bool:
    return dtype is not None and dtype[0] in "iu"


def width(dtype: str | None) -> int | None:
    return _WIDTH.get(dtype or "")


# -- values ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dim:
    """One dimension of a block: its size when known, and the constexpr it came from."""

    size: int | None
    name: str | None = None

    def __str__(self) -> str:
        if self.name and self.size is not None:
            return f"{self.name}={self.size}"
        return self.name or (str(self.size) if self.size is not None else "?")

    def same(self, other: Dim) -> bool | None:
        """True/False when it can tell whether the two are the same size; None otherwise."""
        if self.size is not None and other.size is not None:
            return self.size == other.size
        if self.name is not None and self.name == other.name:
            return True
        return None


Shape = tuple[Dim, ...]


@dataclass(frozen=True)
class Value:
    """What an expression is. `kind`: "tensor" (a scalar when `shape == ()`), "pointer" (a tensor
    of pointers to `dtype`), "dtype" (`tl.float16` itself, in `const`), "tuple" (`items`), "none",
    or "unknown". `shape` is None when even the rank is unknown; `const` is the value when the
    compiler knows it (`constexpr` True), else UNKNOWN. `weak`: a Python literal, whose type
    yields to the other operand's (`x * 2` keeps x's fp16). `demoted`: a number the compiler
    knew that a plain assignment (`K = BLOCK * 2`, no `tl.constexpr` annotation) turned into a
    run-time scalar; its value is kept so that shapes built from it stay known."""

    kind: str = "unknown"
    dtype: str | None = None
    shape: Shape | None = None
    const: Any = UNKNOWN
    constexpr: bool = False
    weak: bool = False
    items: tuple[Value, ...] = ()
    demoted: bool = False  # a compile-time number a plain assignment turned into a run-time scalar

    @property
    def known(self) -> bool:
        return self.kind != "unknown"

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def is_block(self) -> bool:
        return bool(self.shape)

    def numel(self) -> int | None:
        if self.shape is None or any(d.size is None for d in self.shape):
            return None
        return math.prod(d.size for d in self.shape if d.size is not None)

    def render(self) -> str:
        """`fp32[BLOCK_M=64, BLOCK_N=128]`, `*fp16[BLOCK=1024]`, `i32 = 7 (constexpr)`, `tl.float16`."""
        if self.kind == "unknown":
            return "unknown"
        if self.kind == "none":
            return "None"
        if self.kind == "dtype":
            return f"tl.{self.const}" if isinstance(self.const, str) else "a dtype"
        if self.kind == "tuple":
            return "(" + ", ".join(v.render() for v in self.items) + ("," if len(self.items) == 1 else "") + ")"
        dtype = self.dtype or "?"
        base = f"*{dtype}" if self.kind == "pointer" else dtype
        if self.shape is None:
            base += "[?]"
        elif self.shape:
            base += "[" + ", ".join(str(d) for d in self.shape) + "]"
        if self.constexpr:
            shown = repr(self.const) if self.const is not UNKNOWN else "?"
            base += f" = {shown} (constexpr)"
        return base


UNKNOWN_VALUE = Value()
_NONE = Value(kind="none", const=None, constexpr=True)


def scalar(dtype: str | None, const: Any = UNKNOWN, *, weak: bool = False) -> Value:
    return Value("tensor", dtype, (), const, const is not UNKNOWN, weak)


def _literal(value: Any) -> Value:
    if isinstance(value, bool):
        return scalar("i1", value, weak=True)
    if isinstance(value, int):
        return scalar(_int_literal_type(value), value, weak=True)
    if isinstance(value, float):
        return scalar(_float_literal_type(value), value, weak=True)
    if isinstance(value, str) and value in DTYPES.values():
        return Value("dtype", const=value, constexpr=True)
    if isinstance(value, tuple):
        return Value("tuple", items=tuple(_literal(v) for v in value), const=value, constexpr=True)
    if value is None:
        return _NONE
    if isinstance(value, str):
        return Value("tensor", None, (), value, True)  # a string constexpr (an eviction policy)
    return UNKNOWN_VALUE


def _int_literal_type(value: int) -> str | None:
    """The type Triton gives a Python int (semantic.to_tensor_type); None past 64 bits, which
    it cannot represent."""
    if -(2**31) <= value < 2**31:
        return "i32"
    if 2**31 <= value < 2**32:
        return "u32"
    if -(2**63) <= value < 2**63:
        return "i64"
    if 2**63 <= value < 2**64:
        return "u64"
    return None


def _float_literal_type(value: float) -> str:
    magnitude = abs(value)
    if magnitude in (0.0, math.inf) or value != value or 2**-126 <= magnitude <= (2 - 2**-23) * 2**127:
        return "fp32"
    return "fp64"


def int_range(dtype: str) -> tuple[int, int] | None:
    """The values an integer type holds, or None for other types."""
    bits = _WIDTH.get(dtype)
    if bits is None or not is_int(dtype) or dtype == "i1":
        return None
    return (0, 2**bits - 1) if dtype[0] == "u" else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def python_number(value: Value) -> bool:
    """A Python number when compiling (a literal, a constexpr, folded arithmetic of them)."""
    return value.kind == "tensor" and value.constexpr and value.shape == () and \
        isinstance(value.const, (int, float)) and not isinstance(value.const, str)


def assigned(value: Value) -> Value:
    """What a plain assignment binds (code_generator._sanitize_target_value): a Python number
    becomes a run-time scalar of its literal type, tuples leaf by leaf; dtypes, None, tensors
    and pointers stay. A constexpr whose value is not known may be any of those: unknown."""
    if value.kind == "tuple":
        items = tuple(assigned(i) for i in value.items)
        return replace(value, items=items, const=UNKNOWN if any(not i.constexpr for i in items) else value.const,
                       constexpr=all(i.constexpr for i in items))
    if value.kind == "tensor" and value.constexpr:
        if python_number(value):
            const = value.const
            dtype = "i1" if isinstance(const, bool) else (
                _int_literal_type(const) if isinstance(const, int) else _float_literal_type(const))
            return Value("tensor", dtype, (), const, False, False, demoted=True)
        if value.const is UNKNOWN:
            return UNKNOWN_VALUE
    return value


# -- what was found ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Issue:
    """Something the compiler rejects, with every fact it rests on known."""

    kind: str  # "broadcast", "reshape-numel", "bitcast-width", ... (rules/checks/typed.py)
    node: Node
    message: str
    since: tuple[int, int] | None = None  # the first Triton version known to reject it (None: all)


@dataclass
class KernelTypes:
    """The outcome for one kernel and one scenario: each expression's value by its node (start,
    end byte), each name's value where it is assigned, and the issues."""

    values: dict[tuple[int, int], Value] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)

    def at(self, node: Node) -> Value | None:
        return self.values.get((node.start_byte, node.end_byte))


# -- promotion (triton/language/semantic.py: computation_type_impl, binary_op_type_checking) --------


def _int_promote(a: str, b: str) -> str:
    if a == b:
        return a
    if a == "i1":
        return b
    if b == "i1":
        return a
    wa, wb = _WIDTH[a], _WIDTH[b]
    if a[0] != b[0]:  # signed with unsigned: the wider wins; at equal width, unsigned
        if wa == wb:
            return a if a[0] == "u" else b
        return a if wa > wb else b
    return a if wa >= wb else b


def promote(a: Value, b: Value, op: str) -> str | None:
    """The element type `a <op> b` computes in, or None when it cannot tell."""
    x, y = a.dtype, b.dtype
    if x is None or y is None:
        return None
    if a.weak and not b.weak:
        x, y = y, x
        a, b = b, a
    if b.weak and not a.weak:  # a Python literal adopts the tensor's type, unless it is a float and the tensor an int
        if is_float(y) and is_int(x):
            x = "fp32"
        return ("fp32" if op == "/" and is_int(x) else x)
    if "fp64" in (x, y):
        return "fp64"
    if "fp32" in (x, y):
        return "fp32"
    if is_float(x) or is_float(y):
        if is_float(x) and is_float(y):
            if x == y:
                return x
            if {x, y} == {"fp16", "bf16"}:
                return "fp32"
            return x if _WIDTH[x] >= _WIDTH[y] else y
        result = x if is_float(x) else y
        return result
    if op == "/":
        return "fp32"
    return _int_promote(x, y)


def broadcast(a: Shape | None, b: Shape | None) -> tuple[Shape | None, tuple[Dim, Dim] | None]:
    """The broadcast shape of `a` and `b` (right-aligned, ones stretch), and the first pair of
    dimensions known to be incompatible (then the shape is None)."""
    if a is None or b is None:
        return None, None
    n = max(len(a), len(b))
    left = (Dim(1),) * (n - len(a)) + a
    right = (Dim(1),) * (n - len(b)) + b
    out: list[Dim] = []
    for x, y in zip(left, right, strict=True):
        if x.size == 1:
            out.append(y)
        elif y.size == 1:
            out.append(x)
        else:
            same = x.same(y)
            if same is False:
                return None, (x, y)
            out.append(x if same else Dim(None))
    return tuple(out), None


# -- the interpreter ------------------------------------------------------------------------------

_UNARY_SAME = frozenset({"abs", "sigmoid", "softmax", "exp", "exp2", "log", "log2", "sqrt", "sqrt_rn",
                         "rsqrt", "sin", "cos", "erf", "floor", "ceil", "log1p", "tanh", "relu", "neg"})
_REDUCTIONS = frozenset({"sum", "max", "min", "argmax", "argmin", "xor_sum", "reduce_or", "reduce_and", "prod"})
_SCANS = frozenset({"cumsum", "cumprod", "associative_scan"})
_HINTS = frozenset({"multiple_of", "max_contiguous", "max_constancy"})
_ATOMICS = frozenset({"atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor",
                      "atomic_xchg", "atomic_cas"})
_BITWISE = frozenset({"&", "|", "^", "<<", ">>"})
_COMPARE = frozenset({"<", ">", "<=", ">=", "==", "!="})
# Operators whose Python-int operand takes an integer tensor's type (and must fit in it).
_RANGE_CHECKED = frozenset({"+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>"}) | _COMPARE
_MAX_HELPER_DEPTH = 4
# tl.dot's least K by operand type on NVIDIA targets (Triton 3.9 semantic.dot / min_dot_size):
# 8 for fp32 (TF32), 32 for 8-bit types, 16 otherwise.
_MIN_DOT_K = {"fp32": 8, "i8": 32, "u8": 32, "fp8e4nv": 32, "fp8e5": 32, "fp8e4b15": 32}
# Math functions and the element types they take (triton/language/math.py _check_dtype).
_MATH_DTYPES: dict[str, tuple[str, ...]] = {name: ("fp32", "fp64") for name in ("exp", "exp2", "log", "log2", "cos", "sin", "sqrt", "rsqrt",
                                                     "erf", "floor", "ceil")}
_MATH_DTYPES.update({"sqrt_rn": ("fp32",), "div_rn": ("fp32",)})


class _Stop(Exception):
    """A `return` ends the body being interpreted."""


class _OverBudget(Exception):
    """The interpretation ran past STATEMENT_BUDGET (nested loops each run twice: 2^depth)."""


_REPLAYABLE = {"expression_statement": "expression_statement", "if_statement": "if_statement",
               "for_statement": "loop", "while_statement": "loop"}
"""The statements the memo may replay (`statement_memo.py`), and the method interpreting each."""

_MEMO_NESTING = 8
"""Statements nested deeper than this are interpreted, not remembered: each level the memo adds
costs stack frames, and a deeply nested body must not run out of them sooner than without it."""

STATEMENT_BUDGET = 20_000
"""Statements one kernel's interpretation may execute, helpers included; past it the outcome is
discarded (unknown, no issues), so a hostile file cannot stall the server."""


class Interpreter:
    """Interprets one kernel (or helper) body for one environment of parameter values.

    Args:
        qualify: the module's name resolver (`tl.arange` -> `triton.language.arange`).
        helpers: jit functions of the module by name (function_definition nodes), for calls.
        out: where values and issues are recorded (shared with the helpers' interpreters, which
            record their values only when `record_helpers`).
    """

    def __init__(self, qualify: Callable[[Node], str | None], helpers: Mapping[str, Node], out: KernelTypes,
                 *, depth: int = 0, record: bool = True, keep_values: bool = True,
                 arguments: Callable[[Node], tuple[list[Node], dict[str, tuple[Node, Node]]]] = call_args,
                 memo: StatementMemo | None = None) -> None:
        self.qualify = qualify
        # Replays the kernel body's statements that read what they read before (statement_memo.py);
        # issues only: the values hover asks for are not remembered.
        self.memo = memo if depth == 0 and record and not keep_values else None
        self._nesting = 0  # statements being replayed or remembered, one inside another
        self.arguments = arguments  # a call's (positional, keywords); the checks' context caches them
        self.helpers = helpers
        self.out = out
        self.depth = depth
        self.record = record
        self.keep_values = keep_values  # the checks need the issues only; hover needs the values
        self.env: dict[str, Value] = {}
        self.returned: list[Value] = []  # what `return` statements gave
        self.maybe_exclusive_returns = False  # a return under an if the compiler may resolve
        self.budget = [STATEMENT_BUDGET]  # shared with the helpers' interpreters
        self._static: list[bool] = []  # for each enclosing if: whether its condition is constexpr
        self.assigned: dict[str, int] = {}  # each name assigned in the body -> where its last assignment ends

    # -- recording ------------------------------------------------------------------------------
    def note(self, node: Node, value: Value) -> Value:
        if self.record and self.keep_values:
            self.out.values[(node.start_byte, node.end_byte)] = value
        return value

    def issue(self, kind: str, node: Node, message: str, since: tuple[int, int] | None = None) -> None:
        if self.record:
            self.out.issues.append(Issue(kind, node, message, since))

    # -- statements -----------------------------------------------------------------------------
    def run(self, body: Node) -> None:
        self.assigned = _last_assignments(body)
        with contextlib.suppress(_Stop):
            self.block(body)

    def block(self, node: Node | None) -> None:
        if node is None:
            return
        for statement in node.named_children:
            self.statement(statement)

    def statement(self, node: Node) -> None:
        self.budget[0] -= 1
        if self.budget[0] < 0:
            raise _OverBudget
        kind = node.type
        method = _REPLAYABLE.get(kind)
        if method is not None:  # replayed from the memo when it reads what it read before
            step = getattr(self, method)
            if self.memo is not None and self._nesting < _MEMO_NESTING:
                self._nesting += 1  # the memo's frames come on top of the interpreter's own
                try:
                    self.memo.run(self, node, step)
                finally:
                    self._nesting -= 1
            else:
                step(node)
        elif kind == "return_statement":
            values = [c for c in node.named_children if c.type != "comment"]
            value = self.expr(values[0]) if values else _NONE
            self.returned.append(value)
            self.maybe_exclusive_returns |= any(self._static)
            raise _Stop
        elif kind in ("with_statement",):
            body = node.child_by_field_name("body")
            self.block(body)
        elif kind == "block":
            self.block(node)
        # pass, assert, raise, function definitions, imports: nothing to type

    def expression_statement(self, node: Node) -> None:
        for child in node.named_children:
            if child.type == "assignment":
                self.assignment(child)
            elif child.type == "augmented_assignment":
                self.augmented(child)
            else:
                self.expr(child)

    def assignment(self, node: Node) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if right is None:  # `x: tl.constexpr` without a value
            return
        if right.type == "assignment":  # a = b = value
            self.assignment(right)
            right = right.child_by_field_name("left")
        value = self.expr(right) if right is not None else UNKNOWN_VALUE
        annotation = node.child_by_field_name("type")
        if annotation is not None and annotation.type == "type" and annotation.named_children:
            annotation = annotation.named_children[0]  # tree-sitter wraps the annotation's expression
        if annotation is not None and (self.qualify(annotation) or text(annotation)).endswith("constexpr"):
            value = replace(value, constexpr=value.const is not UNKNOWN, demoted=False)
        else:
            value = assigned(value)
        self.bind(left, value)

    def bind(self, target: Node | None, value: Value) -> None:
        target = unparen(target)
        if target is None:
            return
        if target.type == "identifier":
            self.env[text(target)] = value
            self.note(target, value)
        elif target.type in ("pattern_list", "tuple_pattern", "list_pattern", "expression_list", "tuple"):
            names = [c for c in target.named_children if c.type != "comment"]
            items = value.items if value.kind == "tuple" and len(value.items) == len(names) else None
            for i, name in enumerate(names):
                self.bind(name, items[i] if items is not None else UNKNOWN_VALUE)

    def augmented(self, node: Node) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        op = operator_of(node).removesuffix("=")
        if left is None or right is None:
            return
        current = self.expr(left)
        value = assigned(self.binary(op, current, self.expr(right), node))
        if left.type == "identifier":
            self.env[text(left)] = value
            self.note(left, value)

    def if_statement(self, node: Node) -> None:
        condition = self.expr(node.child_by_field_name("condition"))
        branches: list[Node | None] = [node.child_by_field_name("consequence")]
        alternative = [c for c in node.children if c.type in ("elif_clause", "else_clause")]
        # A condition that may be a constexpr (known to be, or not known at all): the compiler may
        # keep one branch only, so nothing is concluded from the branches disagreeing.
        self._static.append(_maybe_static(condition) and not (condition.constexpr and condition.const is not UNKNOWN))
        try:
            self._if(node, condition, branches, alternative)
        finally:
            self._static.pop()

    def _if(self, node: Node, condition: Value, branches: list[Node | None], alternative: list[Node]) -> None:
        if condition.constexpr and condition.const is not UNKNOWN:
            # A constexpr condition: the compiler keeps one branch.
            if condition.const:
                self.block(branches[0])
            elif alternative:
                self._alternative(alternative)
            return
        before = self.env  # each branch runs on a copy of it
        results: list[dict[str, Value] | None] = []
        returned = False
        for which in ("then", "else"):
            self.env = dict(before)
            try:
                if which == "then":
                    self.block(branches[0])
                elif alternative:
                    self._alternative(alternative)
                results.append(self.env)
            except _Stop:
                returned = True
                results.append(None)  # this branch returned: its names do not flow on
        live = [r for r in results if r is not None]
        if not live:
            self.env = before
            if returned:
                raise _Stop
            return
        merged = live[0]  # a branch's own copy: merged in place
        if len(live) == 2:
            then, other = live
            static = _maybe_static(condition)
            one_path = [name for name in other if name not in then]
            for name, a in list(then.items()):
                b = other.get(name)
                if b is None:
                    one_path.append(name)
                elif a is not b and a != b:  # most names no branch touched: the same Value, not compared field by field
                    merged[name] = self._join(a, b, name, node.child_by_field_name("condition") or node)
            for name in one_path:
                if static:  # maybe one branch is compiled; which one is not known
                    merged[name] = UNKNOWN_VALUE
                else:
                    merged.pop(name, None)  # defined on one path only: not defined after the if
        self.env = merged

    def _alternative(self, clauses: list[Node]) -> None:
        clause = clauses[0]
        if clause.type == "else_clause":
            self.block(clause.child_by_field_name("body"))
            return
        condition = self.expr(clause.child_by_field_name("condition"))
        rest = clauses[1:]
        if condition.constexpr and condition.const is not UNKNOWN:
            if condition.const:
                self.block(clause.child_by_field_name("consequence"))
            elif rest:
                self._alternative(rest)
            return
        before = dict(self.env)
        self.block(clause.child_by_field_name("consequence"))
        then = self.env
        self.env = dict(before)
        if rest:
            self._alternative(rest)
        other = self.env
        if _maybe_static(condition):  # maybe one branch is compiled; which one is not known here
            merged = {n: (then[n] if n in then and n in other and (then[n] is other[n] or then[n] == other[n])
                          else UNKNOWN_VALUE)
                      for n in set(then) | set(other)}
            self.env = merged
            return
        merged = {n: v for n, v in then.items() if n in other}
        for name in merged:
            if then[name] is not other[name] and then[name] != other[name]:
                merged[name] = self._join(then[name], other[name], name, clause.child_by_field_name("condition") or clause)
        self.env = merged

    def _join(self, a: Value, b: Value, name: str, node: Node) -> Value:
        if a.kind == b.kind and a.dtype == b.dtype and a.shape == b.shape:
            return replace(a, const=UNKNOWN, constexpr=False) if a.const != b.const else a
        if self._static and self._static[-1]:
            return UNKNOWN_VALUE  # the compiler keeps one branch: the other's types never meet it
        if _types_differ(a, b):
            self.issue("branch-type", node, f"`{name}` is {a.render()} on one branch of the if and "
                                            f"{b.render()} on the other: both branches must give it one type")
        return UNKNOWN_VALUE

    def loop(self, node: Node) -> None:
        """Two passes: the first (unrecorded) finds what the body changes; the second runs from
        the join of the values before and after it. Names first bound in the body do not live
        after the loop (as in Triton's code generator)."""
        unrolled = False  # tl.static_range: the compiler unrolls it, so its names live on after it
        if node.type == "for_statement":
            target = node.child_by_field_name("left")
            right = unparen(node.child_by_field_name("right"))
            if right is not None and right.type == "call":
                function = right.child_by_field_name("function")
                unrolled = function is not None and (self.qualify(function) or "").endswith("static_range")
            function = right.child_by_field_name("function") if right is not None and right.type == "call" else None
            if function is not None and (self.qualify(function) or "") in ("range", "triton.language.range"):
                positional, keywords = self.arguments(right)  # type: ignore[arg-type]
                bounds = [self.expr(b) for b in positional]
                for _, keyword_value in keywords.values():
                    self.expr(keyword_value)
                variable = _induction_variable(bounds)
            else:
                iterated = self.expr(right)
                if iterated.kind == "tuple" and iterated.items:
                    variable = iterated.items[0]
                elif unrolled:
                    variable = Value("tensor", "i32", (), UNKNOWN, True, True)  # a Python int each unrolled step
                else:
                    variable = scalar("i32")
            self.bind(target, variable)
        else:
            self.expr(node.child_by_field_name("condition"))
        body = node.child_by_field_name("body")
        before = dict(self.env)
        # The first pass records into a scratch outcome: when the body changes no loop-carried
        # value (the common case), it was the loop's own pass and is kept, with no second one.
        out, self.out = self.out, KernelTypes()
        try:
            self.block(body)
        except _Stop:
            pass
        finally:
            scratch, self.out = self.out, out
        if not unrolled:  # an unrolled loop carries nothing: each step is straight-line code
            self._loop_carried_types(node, before, self.env)
        start = {name: _loop_join(value, self.env.get(name, value)) for name, value in before.items()}
        # The first pass saw the first iteration's exact values: what it found is found (the
        # second pass, from the joined values, knows less).
        self.out.issues.extend(scratch.issues)
        if start == before:
            self.out.values.update(scratch.values)
            after = self.env
            self.env = before
            if unrolled:
                self.env.update({n: v for n, v in after.items() if n not in before})
            return
        self.env = dict(start)
        with contextlib.suppress(_Stop):
            self.block(body)
        after = self.env
        self.env = {name: _loop_join(value, after.get(name, value)) for name, value in start.items()}
        if unrolled:
            self.env.update({n: v for n, v in after.items() if n not in start})

    def _loop_carried_types(self, node: Node, before: Mapping[str, Value], after: Mapping[str, Value]) -> None:
        """What the compiler checks of a loop's carried values: each keeps its type."""
        for name, initial in before.items():
            changed = after.get(name)
            if changed is None or changed is initial or not _types_differ(initial, changed):
                continue
            keyword = node.children[0] if node.children else node
            self.issue("loop-type", keyword,
                       f"`{name}` enters the loop as {initial.render()} and the loop body makes it {changed.render()}: "
                       "a loop-carried variable must keep its type and shape (initialise it as it is in the loop)")

    # -- expressions ----------------------------------------------------------------------------
    def expr(self, node: Node | None) -> Value:
        if node is None:
            return UNKNOWN_VALUE
        if node.type == "parenthesized_expression":
            node = unparen(node)
            if node is None:
                return UNKNOWN_VALUE
        try:
            value = self._expr(node)
        except (ArithmeticError, ValueError, TypeError, OverflowError, RecursionError):
            value = UNKNOWN_VALUE
        if self.record and self.keep_values:  # `note`, inlined: this runs for every expression
            self.out.values[(node.start_byte, node.end_byte)] = value
        return value

    def _expr(self, node: Node) -> Value:
        kind = node.type
        # The kinds in the order real kernels have them most (names, operators, calls, numbers).
        if kind == "identifier":
            name = text(node)
            bound = self.env.get(name)
            if bound is not None:
                return bound
            last = self.assigned.get(name)
            if last is not None and node.start_byte > last and self.depth == 0:
                # Assigned only inside a branch or loop that does not reach here (or in the
                # branch a constexpr condition drops): the compiler says "is not defined".
                self.issue("undefined-name", node, f"`{name}` is not defined here: it is assigned only inside an "
                                                   "if branch or a loop body that does not reach this line (assign it "
                                                   "before the if or loop, or on every branch)")
                return UNKNOWN_VALUE
            return self._global(node)
        if kind == "binary_operator":
            return self.binary(operator_of(node), self.expr(node.child_by_field_name("left")),
                               self.expr(node.child_by_field_name("right")), node)
        if kind == "call":
            return self.call(node)
        if kind == "integer":
            try:
                return _literal(int(text(node).replace("_", ""), 0))
            except ValueError:
                return UNKNOWN_VALUE
        if kind == "attribute":
            return self.attribute(node)
        if kind == "float":
            return _literal(float(text(node).replace("_", "")))
        if kind in ("true", "false"):
            return _literal(kind == "true")
        if kind == "none":
            return _NONE
        if kind == "string":
            return Value("tensor", None, (), text(node).strip("'\""), True)
        if kind == "comparison_operator":
            operands = [c for c in node.named_children if c.type != "comment"]
            values = [self.expr(c) for c in operands]
            tokens = [c.type for c in node.children if not c.is_named]
            if len(values) == 2 and len(tokens) == 1 and tokens[0] in _COMPARE:
                return self.binary(tokens[0], values[0], values[1], node)
            if len(values) == 2 and tokens in (["is"], ["is", "not"], ["is not"]):
                # `x is None`: None arguments are constexprs, so this is known when compiling.
                if values[0].kind == "none" or values[1].kind == "none":
                    other = values[1] if values[0].kind == "none" else values[0]
                    if other.kind == "none" or other.kind == "pointer" or (other.known and other.dtype is not None):
                        answer = (other.kind == "none") == (tokens == ["is"])
                        return _literal(answer)
                return Value("tensor", "i1", (), UNKNOWN, True)
            return UNKNOWN_VALUE  # `a < b < c`, `is`, `in`: TS208 and friends
        if kind == "boolean_operator":
            a = self.expr(node.child_by_field_name("left"))
            b = self.expr(node.child_by_field_name("right"))
            if a.constexpr and b.constexpr and a.const is not UNKNOWN and b.const is not UNKNOWN:
                op = text(node.child_by_field_name("operator")) if node.child_by_field_name("operator") else ""
                return _literal(bool(a.const and b.const) if "and" in (op or text(node)) else bool(a.const or b.const))
            if a.constexpr and b.constexpr:
                return Value("tensor", "i1", (), UNKNOWN, True)
            return scalar("i1") if not a.is_block and not b.is_block else UNKNOWN_VALUE
        if kind == "not_operator":
            a = self.expr(node.child_by_field_name("argument"))
            if a.constexpr and a.const is not UNKNOWN:
                return _literal(not a.const)
            if a.constexpr:
                return Value("tensor", "i1", (), UNKNOWN, True)
            return scalar("i1") if a.shape == () else UNKNOWN_VALUE
        if kind == "unary_operator":
            a = self.expr(node.child_by_field_name("argument"))
            op = operator_of(node)
            if op == "~" and is_float(a.dtype):
                self.issue("float-bitwise", node, f"`~` on {a.render()}: bitwise operators need integer operands")
            if a.constexpr and isinstance(a.const, (int, float)) and not isinstance(a.const, bool):
                value = -a.const if op == "-" else (~a.const if op == "~" and isinstance(a.const, int) else a.const)
                return replace(a, const=value)
            return replace(a, const=UNKNOWN, constexpr=False) if a.known else a
        if kind in ("tuple", "list", "expression_list", "argument_list"):
            items = tuple(self.expr(c) for c in node.named_children if c.type != "comment")
            const = tuple(i.const for i in items) if all(i.constexpr for i in items) else UNKNOWN
            return Value("tuple", items=items, const=const, constexpr=const is not UNKNOWN)
        if kind == "subscript":
            return self.subscript(node)
        if kind == "conditional_expression":
            parts = [c for c in node.named_children if c.type != "comment"]
            if len(parts) == 3:
                a, condition, b = (self.expr(p) for p in parts)
                if condition.constexpr and condition.const is not UNKNOWN:
                    return a if condition.const else b
                return a if a == b else UNKNOWN_VALUE
        return UNKNOWN_VALUE

    def _global(self, node: Node) -> Value:
        name = self.qualify(node) or ""
        short = name.removeprefix("triton.language.")
        if short in DTYPES:
            return Value("dtype", const=DTYPES[short], constexpr=True)
        return UNKNOWN_VALUE

    def attribute(self, node: Node) -> Value:
        qualified = self.qualify(node) or ""
        if qualified.startswith("triton.language."):
            short = qualified.removeprefix("triton.language.")
            if short in DTYPES:
                return Value("dtype", const=DTYPES[short], constexpr=True)
        obj = self.expr(node.child_by_field_name("object"))
        attr = text(node.child_by_field_name("attribute"))
        if not obj.known:
            return UNKNOWN_VALUE
        if attr == "dtype" and obj.dtype:
            return Value("dtype", const=obj.dtype, constexpr=True)
        if attr == "shape" and obj.shape is not None:
            dims = tuple(scalar("i32", d.size) if d.size is not None else scalar("i32") for d in obj.shape)
            const = tuple(d.size for d in obj.shape) if all(d.size is not None for d in obj.shape) else UNKNOWN
            return Value("tuple", items=dims, const=const, constexpr=True)
        if attr == "T" and obj.shape is not None:
            return self._trans(obj, None, node)
        return UNKNOWN_VALUE

    def subscript(self, node: Node) -> Value:
        obj = self.expr(node.child_by_field_name("value"))
        indices: list[Node] = list(node.children_by_field_name("subscript"))
        if obj.kind == "tuple":
            position_value = self.expr(indices[0]) if len(indices) == 1 else UNKNOWN_VALUE
            at = position_value.const
            if isinstance(at, int) and -len(obj.items) <= at < len(obj.items):
                return obj.items[at]
            return UNKNOWN_VALUE
        if obj.kind not in ("tensor", "pointer") or obj.shape is None:
            return UNKNOWN_VALUE
        dims = list(obj.shape)
        out: list[Dim] = []
        position = 0
        for index in indices:  # tree-sitter nodes of the subscript
            if index.type == "none":
                out.append(Dim(1))
            elif index.type == "slice" and not index.named_children:
                if position >= len(dims):
                    return UNKNOWN_VALUE
                out.append(dims[position])
                position += 1
            else:
                return UNKNOWN_VALUE  # an integer index into a block: TS305's business
        out.extend(dims[position:])
        return replace(obj, shape=tuple(out), const=UNKNOWN, constexpr=False)

    # -- operators ------------------------------------------------------------------------------
    def binary(self, op: str, a: Value, b: Value, node: Node) -> Value:
        if a.kind == "tuple" or b.kind == "tuple" or not a.known or not b.known:
            if a.kind == b.kind == "tuple" and op == "+":
                return Value("tuple", items=a.items + b.items)
            return UNKNOWN_VALUE
        self._scalar_range(op, a, b, node)
        shape, clash = broadcast(a.shape, b.shape)
        if clash is not None:
            self.issue("broadcast", node, f"`{op}` of {a.render()} and {b.render()}: dimensions {clash[0]} and "
                                          f"{clash[1]} cannot broadcast (each pair must be equal or one of them 1)")
            return UNKNOWN_VALUE
        const: Any = UNKNOWN
        if a.constexpr and b.constexpr and a.const is not UNKNOWN and b.const is not UNKNOWN:
            const = _fold(op, a.const, b.const)
        if a.kind == "pointer" or b.kind == "pointer":
            return self._pointer_arithmetic(op, a, b, shape, node)
        if op in _BITWISE:
            for side in (a, b):
                if is_float(side.dtype):
                    self.issue("float-bitwise", node, f"`{op}` on {side.render()}: bitwise operators and shifts need "
                                                      "integer operands (bitcast the value first)")
                    return UNKNOWN_VALUE
        if op in _COMPARE:
            return Value("tensor", "i1", shape, const, a.constexpr and b.constexpr, a.weak and b.weak)
        dtype = promote(a, b, op)
        if op == "//" and (is_float(a.dtype) or is_float(b.dtype)):
            dtype = None  # TS702's business
        demoted = (a.demoted or b.demoted) and all(v.demoted or v.constexpr for v in (a, b))
        if demoted and const is UNKNOWN and a.const is not UNKNOWN and b.const is not UNKNOWN:
            const = _fold(op, a.const, b.const)
        return Value("tensor", dtype, shape, const, a.constexpr and b.constexpr, a.weak and b.weak, demoted=demoted)

    def _scalar_range(self, op: str, a: Value, b: Value, node: Node) -> None:
        """A Python int meeting a run-time value (semantic.binary_op_type_checking_impl): past 64
        bits it has no type at all; with an integer tensor it takes the tensor's type and must
        fit in it (`x_i32 + 2**31` fails: the literal does not widen the tensor)."""
        for number, other in ((a, b), (b, a)):
            if not python_number(number) or not isinstance(number.const, int) or other.constexpr or \
                    other.kind not in ("tensor", "pointer"):
                continue
            value = number.const
            if _int_literal_type(value) is None:
                self.issue("int-nonrepresentable", node, f"`{op}` with the integer {value}: it does not fit in 64 bits, "
                                                         "so Triton cannot represent it")
                return
            limits = int_range(other.dtype or "") if other.kind == "tensor" and op in _RANGE_CHECKED else None
            if limits is not None and not limits[0] <= value <= limits[1]:
                wider = "int64" if (width(other.dtype) or 64) < 64 else "float32"
                self.issue("int-range", node, f"`{op}` of {other.render()} and the integer {value}: the integer takes "
                                              f"the tensor's type, {_long(other.dtype or '')}, and does not fit in it "
                                              f"(cast the tensor first: `x.to(tl.{wider})`)")
                return

    def _pointer_arithmetic(self, op: str, a: Value, b: Value, shape: Shape | None, node: Node) -> Value:
        pointer, offset = (a, b) if a.kind == "pointer" else (b, a)
        if a.kind == b.kind == "pointer":
            return UNKNOWN_VALUE  # TS506's business
        if op not in ("+", "-"):
            return UNKNOWN_VALUE
        if is_float(offset.dtype):
            self.issue("pointer-float", node, f"`{op}` of a pointer ({pointer.render()}) and {offset.render()}: "
                                              "pointer offsets must be integers")
            return UNKNOWN_VALUE
        return Value("pointer", pointer.dtype, shape)

    # -- calls ----------------------------------------------------------------------------------
    def call(self, node: Node) -> Value:
        function = node.child_by_field_name("function")
        positional, keywords = self.arguments(node)
        name = self.qualify(function) if function is not None else None
        if name is not None and name.startswith("triton.language."):
            short = name.removeprefix("triton.language.").removeprefix("math.").removeprefix("standard.")
            return self.builtin(short, node, positional, keywords)
        if name in ("float", "int") and positional:
            value = self.expr(positional[0])
            if value.kind in ("tensor", "pointer") and not value.constexpr and value.known:
                self.issue("python-cast", node, f"`{name}()` of {value.render()}: a run-time tensor has no Python "
                                                f"value; use `x.to(tl.{'float32' if name == 'float' else 'int32'})`")
                return UNKNOWN_VALUE
            if value.constexpr and value.const is not UNKNOWN:
                return _literal(float(value.const) if name == "float" else int(value.const))
            return UNKNOWN_VALUE
        fold = FOLDABLE.get(name or "")
        if fold is not None and positional and not keywords:  # min, max, triton.cdiv, next_power_of_2
            values = [self.expr(a) for a in positional]
            if all(v.constexpr and isinstance(v.const, (int, float)) and not isinstance(v.const, bool) for v in values):
                with contextlib.suppress(ArithmeticError, TypeError, ValueError):
                    return _literal(fold(*(v.const for v in values)))
            return UNKNOWN_VALUE
        if function is not None and function.type == "attribute":
            obj_node = function.child_by_field_name("object")
            method = text(function.child_by_field_name("attribute"))
            obj = self.expr(obj_node)
            if obj.kind in ("tensor", "pointer"):
                return self.method(method, obj, node, positional, keywords)
        if function is not None and function.type == "identifier" and text(function) in self.helpers:
            return self.helper(text(function), node, positional, keywords)
        for argument in [*positional, *(v for _, v in keywords.values())]:
            self.expr(argument)
        return UNKNOWN_VALUE

    def helper(self, name: str, node: Node, positional: list[Node], keywords: dict[str, tuple[Node, Node]]) -> Value:
        definition = self.helpers[name]
        arguments = [self.expr(a) for a in positional]
        named = {k: self.expr(v) for k, (_, v) in keywords.items()}
        if self.depth >= _MAX_HELPER_DEPTH:
            return UNKNOWN_VALUE
        parameters = definition.child_by_field_name("parameters")
        inner = Interpreter(self.qualify, self.helpers, self.out, depth=self.depth + 1, record=False,
                            arguments=self.arguments)
        inner.budget = self.budget
        for i, parameter in enumerate(p for p in (parameters.named_children if parameters else []) if p.type != "comment"):
            pname_node = parameter if parameter.type == "identifier" else parameter.child_by_field_name("name") or \
                next((c for c in parameter.named_children if c.type == "identifier"), None)
            if pname_node is None:
                continue
            pname = text(pname_node)
            if i < len(arguments):
                value = arguments[i]
            elif pname in named:
                value = named[pname]
            else:
                default = parameter.child_by_field_name("value")
                value = self.expr(default) if default is not None else UNKNOWN_VALUE
            inner.env[pname] = value
        inner.run(definition.child_by_field_name("body"))  # type: ignore[arg-type]
        returned = inner.returned
        if not returned:
            return _NONE
        if not inner.maybe_exclusive_returns:
            self._check_returns(name, node, returned)
        first = returned[0]
        if all(r == first for r in returned[1:]):
            return first
        if all(r.kind == first.kind and r.dtype == first.dtype and r.shape == first.shape for r in returned):
            return replace(first, const=UNKNOWN, constexpr=False)
        return UNKNOWN_VALUE

    def _atomic(self, short: str, node: Node, value: Callable[[int, str], Value]) -> Value:
        """`tl.atomic_*`: the element types each takes (semantic._validate_atomic_rmw_element_type,
        atomic_cas), and a block value needs a block of pointers."""
        pointer = value(0, "pointer")
        op = short.removeprefix("atomic_")
        stored = value(2, "val") if op == "cas" else value(1, "val")
        if pointer.kind == "tensor" and pointer.known and pointer.dtype is not None and not pointer.constexpr:
            self.issue("load-non-pointer", node, f"`tl.{short}` on {pointer.render()}: the first argument must be a "
                                                 "pointer (or a block of pointers)")
            return UNKNOWN_VALUE
        if pointer.kind != "pointer":
            return UNKNOWN_VALUE
        element = pointer.dtype
        problem, since = _atomic_problem(op, element), None
        if problem is None:
            problem, since = _atomic_problem_3_9(op, element), (3, 9)
        if problem is not None:
            self.issue("atomic-dtype", node, f"`tl.{short}` on {pointer.render()}: {problem}", since)
        if pointer.shape == () and stored.kind == "tensor" and stored.is_block:
            self.issue("store-block-scalar-pointer", node,
                       f"`tl.{short}` of {stored.render()} through a single pointer ({pointer.render()}): a block "
                       "needs a block of pointers (add the offsets, `ptr + tl.arange(0, BLOCK)`)")
        return Value("tensor", element, pointer.shape)

    def _check_returns(self, name: str, call: Node, returned: list[Value]) -> None:
        """A helper's returns must agree in type (code_generator.decide_return_type): equal
        Python values, or one tensor type once numbers are typed; a tuple only with a tuple."""
        first = returned[0]
        for other in returned[1:]:
            if first.kind == "tuple" or other.kind == "tuple":
                clash = (first.kind == "tuple") != (other.kind == "tuple") and first.known and other.known and \
                    first.kind != "none" and other.kind != "none"
            elif python_number(first) and python_number(other):
                clash = first.const != other.const and _types_differ(assigned(first), assigned(other))
            else:
                clash = _types_differ(_tensor_type(first), _tensor_type(other))
            if clash:
                self.issue("return-type", call, f"`{name}` returns {first.render()} on one path and {other.render()} "
                                                "on another: a jit function's returns must all have one type")
                return

    def builtin(self, short: str, node: Node, positional: list[Node], keywords: dict[str, tuple[Node, Node]]) -> Value:
        def arg(i: int, key: str) -> Node | None:
            if i < len(positional):
                return positional[i]
            return keywords[key][1] if key in keywords else None

        evaluated: dict[tuple[int, int], Value] = {}

        def value(i: int, key: str) -> Value:
            argument = arg(i, key)
            if argument is None:
                return UNKNOWN_VALUE
            span = (argument.start_byte, argument.end_byte)
            if span not in evaluated:
                evaluated[span] = self.expr(argument)
            return evaluated[span]

        try:
            return self._builtin(short, node, value, arg)
        finally:
            for argument in [*positional, *(v for _, v in keywords.values())]:
                if (argument.start_byte, argument.end_byte) not in evaluated:
                    self.expr(argument)

    def _builtin(self, short: str, node: Node, value: Callable[[int, str], Value],
                 arg: Callable[[int, str], Node | None]) -> Value:
        if short in DTYPES:
            return Value("dtype", const=DTYPES[short], constexpr=True)
        if short == "constexpr":
            inner = value(0, "value")
            return replace(inner, constexpr=inner.const is not UNKNOWN)
        if short in ("program_id", "num_programs"):
            return scalar("i32")
        if short == "arange":
            start, end = value(0, "start"), value(1, "end")
            outside = False
            for i, key, bound in ((0, "start", start), (1, "end", end)):
                self._needs_constexpr(arg(i, key), bound, "`tl.arange` bounds")
                if isinstance(bound.const, int) and not -(2**31) <= bound.const < 2**31 and not outside:
                    outside = True
                    self.issue("arange-int32", node, f"`tl.arange` {key} {bound.const} is outside the int32 range: "
                                                     "its bounds must fit in int32 (offset the block instead: "
                                                     "`base + tl.arange(0, BLOCK)` with an int64 base)")
            if isinstance(start.const, int) and isinstance(end.const, int):
                size = end.const - start.const
                name = text(arg(1, "end")) if start.const == 0 and arg(1, "end") is not None and \
                    arg(1, "end").type == "identifier" else None  # type: ignore[union-attr]
                return Value("tensor", "i32", (Dim(size, name),))
            end_node = arg(1, "end")
            return Value("tensor", "i32", (Dim(None, text(end_node) if end_node is not None else None),))
        if short in ("zeros", "full", "empty"):
            fill = value(1, "value") if short == "full" else UNKNOWN_VALUE
            if python_number(fill) and isinstance(fill.const, int) and _int_literal_type(fill.const) is None:
                self.issue("int-nonrepresentable", node, f"`tl.full` with the integer {fill.const}: it does not fit "
                                                         "in 64 bits, so Triton cannot represent it")
            shape = self._shape_of(arg(0, "shape"))
            dtype_value = value(2 if short == "full" else 1, "dtype")
            return Value("tensor", dtype_value.const if dtype_value.kind == "dtype" else None, shape)
        if short in ("zeros_like", "full_like"):
            like = value(0, "input")
            return replace(like, kind="tensor", const=UNKNOWN, constexpr=False, weak=False)
        if short == "load":
            pointer = value(0, "pointer")
            for keyword, i in (("mask", 1), ("other", 2)):
                value(i, keyword)
            if pointer.kind == "tensor" and pointer.known and pointer.dtype is not None and not pointer.constexpr:
                self.issue("load-non-pointer", node, f"`tl.load` of {pointer.render()}: the first argument must be a "
                                                     "pointer (or a block of pointers)")
                return UNKNOWN_VALUE
            if pointer.kind == "tensor" and pointer.dtype is None:  # a pointer of unknown type
                return Value("tensor", None, pointer.shape)
            if pointer.kind != "pointer":
                return UNKNOWN_VALUE
            return Value("tensor", pointer.dtype, pointer.shape)
        if short == "store":
            pointer, stored = value(0, "pointer"), value(1, "value")
            value(2, "mask")
            # A single pointer, or a runtime argument of unknown type (a pointer or not, a block
            # cannot be stored through it).
            single = pointer.shape == () and (pointer.kind == "pointer" or (pointer.kind == "tensor" and
                                                                           pointer.dtype is None and not pointer.constexpr))
            if single and stored.is_block and stored.kind == "tensor":
                self.issue("store-block-scalar-pointer", node,
                           f"`tl.store` of {stored.render()} through a single pointer ({pointer.render()}): a block "
                           "needs a block of pointers (add the offsets, `ptr + tl.arange(0, BLOCK)`)")
            elif single and pointer.kind == "pointer" and value(2, "mask").is_block:
                self.issue("store-block-scalar-pointer", node,
                           f"`tl.store` through a single pointer ({pointer.render()}) with a block mask "
                           f"({value(2, 'mask').render()}): the mask of a single store is one value")
            elif pointer.kind == "tensor" and pointer.known and pointer.dtype is not None and not pointer.constexpr:
                self.issue("load-non-pointer", node, f"`tl.store` to {pointer.render()}: the first argument must be a "
                                                     "pointer (or a block of pointers)")
            return _NONE
        if short in _ATOMICS:
            return self._atomic(short, node, value)
        if short in ("dot", "dot_scaled"):
            return self._dot(node, value(0, "input"), value(1, "other"), value(6, "out_dtype"), value(2, "acc"))
        if short in _REDUCTIONS or short in _SCANS:
            return self._reduce(short, node, value(0, "input"), value(1, "axis"), arg(1, "axis"),
                                value(99, "keep_dims"))
        if short == "where":
            condition, a, b = value(0, "condition"), value(1, "x"), value(2, "y")
            if not all(v.known for v in (condition, a, b)):
                return UNKNOWN_VALUE
            shape, clash = broadcast(condition.shape, a.shape)
            if clash is None:
                shape, clash = broadcast(shape, b.shape)
            if clash is not None:
                self.issue("broadcast", node, f"`tl.where` of {condition.render()}, {a.render()} and {b.render()}: "
                                              f"dimensions {clash[0]} and {clash[1]} cannot broadcast")
                return UNKNOWN_VALUE
            return Value("tensor", promote(a, b, "+"), shape)
        if short in ("maximum", "minimum", "fma", "clamp", "fdiv", "div_rn"):
            a, b = value(0, "x"), value(1, "y")
            return self.binary("+", a, b, node) if a.known and b.known else UNKNOWN_VALUE
        if short in _UNARY_SAME:
            x = value(0, "x")
            allowed = _MATH_DTYPES.get(short)
            if allowed and x.kind == "tensor" and x.dtype is not None and not x.weak and x.dtype not in allowed:
                self.issue("math-on-int", node, f"`tl.{short}` of {x.render()}: it takes {' or '.join(allowed)} only; "
                                                f"convert first (`tl.{short}(x.to(tl.float32))`)")
                return UNKNOWN_VALUE
            return replace(x, const=UNKNOWN, constexpr=False, weak=False) if x.kind == "tensor" else UNKNOWN_VALUE
        if short in ("cast",):
            return self._cast(node, value(0, "input"), value(1, "dtype"), value(2, "fp_downcast_rounding"),
                              value(3, "bitcast"))
        if short in ("reshape", "view"):
            return self._reshape(node, value(0, "input"), arg(1, "shape"))
        if short in ("trans", "permute"):
            return self._trans(value(0, "input"), arg(1, "dims"), node)
        if short == "expand_dims":
            x, axis = value(0, "input"), value(1, "axis")
            if x.shape is None or not isinstance(axis.const, int):
                return UNKNOWN_VALUE
            dims = list(x.shape)
            position = axis.const if axis.const >= 0 else len(dims) + 1 + axis.const
            dims.insert(position, Dim(1))
            return replace(x, shape=tuple(dims), const=UNKNOWN, constexpr=False)
        if short == "broadcast_to":
            x = value(0, "input")
            shape = self._shape_of(arg(1, "shape"))
            if shape is None or x.shape is None:
                return UNKNOWN_VALUE
            _, clash = broadcast(x.shape, shape)
            if clash is not None:
                self.issue("broadcast", node, f"`tl.broadcast_to` of {x.render()} to {_render_shape(shape)}: "
                                              f"dimensions {clash[0]} and {clash[1]} cannot broadcast")
                return UNKNOWN_VALUE
            return replace(x, shape=shape, const=UNKNOWN, constexpr=False)
        if short in _HINTS:
            x, values = value(0, "input"), value(1, "values")
            if x.shape is not None and values.kind == "tuple" and len(values.items) != max(1, len(x.shape)):
                self.issue("hint-arity", node, f"`tl.{short}` of {x.render()} with {len(values.items)} values: give "
                                               f"one per dimension ({max(1, len(x.shape))})")
            return x
        if short == "histogram":
            x = value(0, "input")
            if x.kind == "tensor" and x.dtype is not None and x.dtype not in ("i32", "u32"):
                self.issue("histogram-float", node, f"`tl.histogram` of {x.render()}: it counts 32-bit integer "
                                                    "values (convert with `.to(tl.int32)`)")
                return UNKNOWN_VALUE
            bins = value(1, "num_bins")
            return Value("tensor", "i32", (Dim(bins.const if isinstance(bins.const, int) else None),))
        if short == "cdiv":
            a, b = value(0, "x"), value(1, "div")
            return self.binary("+", a, b, node) if a.known and b.known else UNKNOWN_VALUE
        if short == "static_range":
            for i, key in enumerate(("arg1", "arg2", "step")):
                self._needs_constexpr(arg(i, key), value(i, key), "`tl.static_range` bounds")
            return UNKNOWN_VALUE
        if short in ("static_assert", "static_print", "device_print", "device_assert", "debug_barrier"):
            return _NONE
        return UNKNOWN_VALUE

    def method(self, method: str, obj: Value, node: Node, positional: list[Node],
               keywords: dict[str, tuple[Node, Node]]) -> Value:
        def get(i: int, key: str) -> Node | None:
            if i < len(positional):
                return positional[i]
            return keywords[key][1] if key in keywords else None

        def value(i: int, key: str) -> Value:
            argument = get(i, key)
            return self.expr(argument) if argument is not None else UNKNOWN_VALUE

        if method == "to":
            return self._cast(node, obj, value(0, "dtype"), value(1, "fp_downcast_rounding"), value(2, "bitcast"))
        if method in ("reshape", "view"):
            shape_node = get(0, "shape")
            if len(positional) > 1:  # x.reshape(a, b)
                items = [self.expr(p) for p in positional]
                if all(isinstance(i.const, int) for i in items):
                    return self._reshape_to(node, obj, tuple(Dim(i.const) for i in items))
                return UNKNOWN_VALUE
            return self._reshape(node, obj, shape_node)
        if method in ("trans", "permute") and len(positional) > 1:  # x.permute(1, 0): the dims as arguments
            return self._trans(obj, node.child_by_field_name("arguments"), node)
        if method in ("trans", "permute"):
            return self._trans(obj, get(0, "dims"), node)
        if method in _REDUCTIONS or method in _SCANS:
            return self._reduce(method, node, obj, value(0, "axis"), get(0, "axis"), value(99, "keep_dims"))
        if method in _UNARY_SAME:
            return self._builtin(method, node, lambda i, k: obj if i == 0 else UNKNOWN_VALUE, lambda i, k: None)
        for argument in [*positional, *(v for _, v in keywords.values())]:
            self.expr(argument)
        return UNKNOWN_VALUE

    # -- the operations with rules --------------------------------------------------------------
    def _cast(self, node: Node, x: Value, dtype: Value, _rounding: Value, bitcast: Value) -> Value:
        if dtype.kind != "dtype" or not isinstance(dtype.const, str):
            return UNKNOWN_VALUE
        if x.kind == "pointer":
            return UNKNOWN_VALUE
        if bitcast.const is True and x.dtype is not None:
            wa, wb = width(x.dtype), width(dtype.const)
            if wa is not None and wb is not None and wa != wb:
                self.issue("bitcast-width", node, f"bitcast of {x.render()} to {dtype.const}: {x.dtype} is {wa} bits "
                                                  f"and {dtype.const} {wb}; a bitcast keeps the bits, so both must "
                                                  f"have one width (convert the values with `.to(tl.{_long(dtype.const)})`"
                                                  f" or bitcast to a {wa}-bit type)")
                return UNKNOWN_VALUE
        return Value("tensor", dtype.const, x.shape)

    def _shape_of(self, node: Node | None) -> Shape | None:
        node = unparen(node)
        if node is None:
            return None
        if node.type in ("tuple", "list"):
            dims = []
            for item in node.named_children:
                if item.type == "comment":
                    continue
                v = self.expr(item)
                self._needs_constexpr(item, v, "a block shape")
                size = v.const if isinstance(v.const, int) and not isinstance(v.const, bool) else None
                dims.append(Dim(size, text(item) if item.type == "identifier" else None))
            return tuple(dims)
        v = self.expr(node)
        if v.kind == "tuple" and any(i.demoted for i in v.items):
            self._needs_constexpr(node, next(i for i in v.items if i.demoted), "a block shape")
            return tuple(Dim(i.const if isinstance(i.const, int) else None) for i in v.items)
        self._needs_constexpr(node, v, "a block shape")
        if v.kind == "tuple" and isinstance(v.const, tuple) and all(isinstance(i, int) for i in v.const):
            return tuple(Dim(i) for i in v.const)
        if isinstance(v.const, int):
            return (Dim(v.const, text(node) if node.type == "identifier" else None),)
        return None

    def _needs_constexpr(self, node: Node | None, value: Value, what: str) -> None:
        """`value` sits where the compiler needs a constexpr: a number a plain assignment turned
        into a run-time scalar is the classic way to lose one."""
        if node is None or not value.demoted:
            return
        names = sorted({text(n) for n in walk(node)
                        if n.type == "identifier" and text(n) in self.env and self.env[text(n)].demoted})
        shown = f"`{names[0]}`" if len(names) == 1 else "this value"
        fix = f"annotate the assignment `{names[0]}: tl.constexpr = ...`" if len(names) == 1 else \
            "annotate the assignments `NAME: tl.constexpr = ...`"
        self.issue("demoted-constexpr", node, f"{shown} is a run-time {value.dtype or 'scalar'} here, but {what} must be "
                                              f"compile-time constants: a plain assignment turns a constexpr into a "
                                              f"run-time value; {fix}")

    def _reshape(self, node: Node, x: Value, shape_node: Node | None) -> Value:
        shape = self._shape_of(shape_node)
        if shape is None:
            return UNKNOWN_VALUE
        return self._reshape_to(node, x, shape)

    def _reshape_to(self, node: Node, x: Value, shape: Shape) -> Value:
        before, after = x.numel(), Value("tensor", None, shape).numel()
        if before is not None and after is not None and before != after:
            self.issue("reshape-numel", node, f"reshape of {x.render()} ({before} elements) to "
                                              f"{_render_shape(shape)} ({after} elements): a reshape keeps the "
                                              "element count")
            return UNKNOWN_VALUE
        return replace(x, shape=shape, const=UNKNOWN, constexpr=False) if x.kind == "tensor" else UNKNOWN_VALUE

    def _trans(self, x: Value, dims_node: Node | None, node: Node) -> Value:
        if x.shape is None or x.kind != "tensor":
            return UNKNOWN_VALUE
        if len(x.shape) < 2 and dims_node is not None:  # `tl.permute(x, (0,))` is a no-op, not an error
            dims = self.expr(dims_node)
            if len(x.shape) == 1 and isinstance(dims.const, tuple) and len(dims.const) != 1:
                self.issue("trans-1d", node, f"permute of {x.render()} with {len(dims.const)} dims: give one per "
                                             "dimension of the block (a 1-D block has one)")
                return UNKNOWN_VALUE
            return x if len(x.shape) == 1 else UNKNOWN_VALUE
        if len(x.shape) < 2:
            self.issue("trans-1d", node, f"transpose of {x.render()}: a {len(x.shape)}-D block has no axes to swap "
                                         "(add one first: `x[:, None]`)")
            return UNKNOWN_VALUE
        if dims_node is None:
            return replace(x, shape=tuple(reversed(x.shape)) if len(x.shape) == 2 else x.shape[:-2] + x.shape[:-3:-1])
        dims = self.expr(dims_node)
        if isinstance(dims.const, tuple) and sorted(dims.const) == list(range(len(x.shape))):
            return replace(x, shape=tuple(x.shape[i] for i in dims.const))
        return UNKNOWN_VALUE

    def _reduce(self, short: str, node: Node, x: Value, axis: Value, axis_node: Node | None, keep: Value) -> Value:
        if x.kind != "tensor" or x.shape is None:
            return UNKNOWN_VALUE
        rank = len(x.shape)
        if axis_node is None or axis.kind == "none":
            if short in _SCANS:
                return UNKNOWN_VALUE
            dtype = "i32" if short in ("argmax", "argmin") else x.dtype
            return Value("tensor", dtype, ())
        if not isinstance(axis.const, int):
            return UNKNOWN_VALUE
        if not -rank <= axis.const < max(rank, 1) or (rank == 0):
            self.issue("axis-range", node, f"`{short}` over axis {axis.const} of {x.render()}: a {rank}-D block has "
                                           f"axes {', '.join(str(i) for i in range(rank)) or 'none'}")
            return UNKNOWN_VALUE
        if short in _SCANS:
            return replace(x, const=UNKNOWN, constexpr=False)
        position = axis.const % rank
        dims = list(x.shape)
        if keep.const is True:
            dims[position] = Dim(1)
        else:
            dims.pop(position)
        dtype = "i32" if short in ("argmax", "argmin") else x.dtype
        if short == "sum" and dtype in ("i1", "i8", "i16"):
            dtype = "i32"
        return Value("tensor", dtype, tuple(dims))

    def _dot(self, node: Node, a: Value, b: Value, out_dtype: Value, acc: Value) -> Value:
        if a.kind != "tensor" or b.kind != "tensor" or a.shape is None or b.shape is None:
            return UNKNOWN_VALUE
        if len(a.shape) not in (2, 3) or len(b.shape) not in (2, 3) or len(a.shape) != len(b.shape):
            return UNKNOWN_VALUE  # TS604's business
        k_a, k_b = a.shape[-1], b.shape[-2]
        if len(a.shape) == 3 and a.shape[0].same(b.shape[0]) is False:
            self.issue("dot-shape", node, f"`tl.dot` of {a.render()} and {b.render()}: batched operands need one "
                                          f"batch size ({a.shape[0]} and {b.shape[0]})")
            return UNKNOWN_VALUE
        if k_a.same(k_b) is False:
            self.issue("dot-shape", node, f"`tl.dot` of {a.render()} and {b.render()}: the first operand's last "
                                          f"dimension ({k_a}) must equal the second's first ({k_b})")
            return UNKNOWN_VALUE
        least = _MIN_DOT_K.get(a.dtype or "", 16) if a.dtype == b.dtype else 16
        if k_a.size is not None and k_a.size < least and a.dtype is not None:
            self.issue("dot-small", node, f"`tl.dot` of {a.render()} and {b.render()}: K = {k_a.size}, but tl.dot "
                                          f"on {a.dtype} needs K of at least {least} (pad the block, or use "
                                          "`tl.sum(a[:, :, None] * b[None, :, :], axis=1)` for small tiles)")
            return UNKNOWN_VALUE
        if a.dtype and b.dtype and a.dtype != b.dtype and not (a.dtype.startswith("fp8") and b.dtype.startswith("fp8")):
            self.issue("dot-dtype", node, f"`tl.dot` of {a.render()} and {b.render()}: both operands must have "
                                          f"one type (convert one: `b.to(tl.{_long(a.dtype)})`)")
            return UNKNOWN_VALUE
        result = a.shape[:-1] + (b.shape[-1],)
        if acc.kind == "tensor" and acc.shape is not None and (
                len(acc.shape) != len(result) or any(x.same(y) is False for x, y in zip(acc.shape, result, strict=False))):
            self.issue("dot-shape", node, f"`tl.dot` of {a.render()} and {b.render()} into an accumulator "
                                          f"{acc.render()}: the accumulator must have the product's shape "
                                          f"{_render_shape(result)}")
            return UNKNOWN_VALUE
        if out_dtype.kind == "dtype":
            dtype: str | None = out_dtype.const
        elif acc.kind == "tensor" and acc.dtype:
            dtype = acc.dtype
        elif is_int(a.dtype):
            dtype = "i32"
        elif a.dtype == "fp64":
            dtype = "fp64"
        else:
            dtype = "fp32" if a.dtype else None
        return Value("tensor", dtype, result)


def _maybe_static(condition: Value) -> bool:
    """Whether an `if` on `condition` may be resolved when compiling: a constexpr, or a value
    whose kind is not known (a helper's argument may be a constexpr)."""
    return condition.constexpr or not condition.known or condition.dtype is None


_ASSIGNED_BY_TEXT: dict[bytes, dict[str, int]] = {}


def _last_assignments(body: Node) -> dict[str, int]:
    """Each name the body assigns (`x = ...`, `x += ...`, unpacking, a `for` target) -> the end
    byte of its last assignment (of the `for` target for a loop). One tree-sitter query (C, not
    a Python walk); assignments inside nested function bodies (TS213's business) count too.
    Kept by the body's text, relative to its start: every scenario of a kernel and every call of
    a helper asks again, and an edit elsewhere leaves the text as it was."""
    base = body.start_byte
    raw = body.text or b""
    relative = _ASSIGNED_BY_TEXT.get(raw)
    if relative is None:
        relative = {}
        for _, captures in QueryCursor(_assigned_query()).matches(body):
            statement = captures["statement"][0]
            for name in captures.get("name", ()):
                end = (name.end_byte if statement.type == "for_statement" else statement.end_byte) - base
                key = text(name)
                if relative.get(key, -1) < end:
                    relative[key] = end
        if len(_ASSIGNED_BY_TEXT) >= 256:
            _ASSIGNED_BY_TEXT.clear()
        _ASSIGNED_BY_TEXT[raw] = relative
    return {name: end + base for name, end in relative.items()}


_ASSIGNED_SOURCE = """
[(assignment left: [(identifier) @name (pattern_list (identifier) @name) (tuple_pattern (identifier) @name)])
 (augmented_assignment left: (identifier) @name)
 (for_statement left: [(identifier) @name (pattern_list (identifier) @name) (tuple_pattern (identifier) @name)])
] @statement
"""


@functools.cache
def _assigned_query() -> Query:
    """Compiled on first use (compiling a query costs tens of milliseconds of server start)."""
    return Query(PY_LANGUAGE, _ASSIGNED_SOURCE)


def _types_differ(a: Value, b: Value) -> bool:
    """Whether two run-time values certainly have different Triton types (element type, or
    block shape: rank, or a dimension both know); what the compiler requires to match across
    if branches, loop iterations and returns."""
    if not (a.kind in ("tensor", "pointer") and b.kind in ("tensor", "pointer")):
        return False
    if a.constexpr or b.constexpr or a.weak or b.weak or a.dtype is None or b.dtype is None:
        return False
    if a.kind != b.kind or a.dtype != b.dtype:
        return True
    if a.shape is None or b.shape is None:
        return False
    if len(a.shape) != len(b.shape):
        return True
    return any(x.same(y) is False for x, y in zip(a.shape, b.shape, strict=True))


def _tensor_type(value: Value) -> Value:
    """A returned value as the compiler types it when returns disagree (to_tensor_type)."""
    if python_number(value):
        return assigned(value)
    return value


def _atomic_problem(op: str, element: str | None) -> str | None:
    """What every Triton 3.x rejects of an atomic on `element`."""
    if element is None:
        return None
    if op == "cas":
        return None if width(element) in (16, 32, 64) else f"atomic_cas takes 16, 32 or 64-bit elements, not {element}"
    if element in ("fp16", "bf16") and op != "add":
        return f"atomic_{op} does not take {element} (only atomic_add does; accumulate in fp32)"
    if element in ("i1", "i8", "i16"):
        return f"atomic_{op} does not take {element} (use a 32-bit element type)"
    return None


def _atomic_problem_3_9(op: str, element: str | None) -> str | None:
    """What Triton 3.9 rejects on top: every element type under 16 bits and unsigned 16-bit."""
    if element is None or op == "cas":
        return None
    if element == "u16" or (width(element) or 32) < 16:
        return f"atomic_{op} does not take {element} (use a 32-bit element type)"
    return None


def _induction_variable(bounds: list[Value]) -> Value:
    """`i` of `for i in range(a, b, c)` (or `tl.range`): the integer promotion of the bounds'
    types (code_generator.visit_For), of unknown type when a bound's is not known."""
    dtype: str | None = None
    for bound in bounds[:3]:
        kind = _tensor_type(bound)
        if kind.kind != "tensor" or not is_int(kind.dtype) or kind.shape != ():
            return scalar(None)
        dtype = kind.dtype if dtype is None else _int_promote(dtype, kind.dtype)  # type: ignore[arg-type]
    return scalar(dtype or "i32")


def _loop_join(a: Value, b: Value) -> Value:
    """A loop-carried name's value: unchanged, or of the same type with its value unknown, or
    unknown when the loop changes its type (TS205 names that). What one side does not know
    the other tells: the compiler requires a carried value to keep its type, so `acc += tl.dot(a,
    b)` on operands of unknown element type keeps the accumulator's fp32 (and its shape)."""
    if a == b:
        return a
    if a.kind == b.kind and a.kind in ("tensor", "pointer") and not _types_differ(a, b) \
            and not (a.constexpr or b.constexpr or a.weak or b.weak):
        return Value(a.kind, a.dtype if a.dtype is not None else b.dtype, _join_shape(a.shape, b.shape))
    if a.kind == b.kind and a.dtype == b.dtype and a.shape == b.shape:
        return replace(a, const=UNKNOWN, constexpr=False)
    return UNKNOWN_VALUE


def _join_shape(a: Shape | None, b: Shape | None) -> Shape | None:
    """Two shapes no dimension of which certainly differs, as one: each dimension as the side
    that knows it (its size or its constexpr's name)."""
    if a is None or b is None:
        return b if a is None else a
    if len(a) != len(b):
        return None
    return tuple(x if x.size is not None or x.name is not None else y for x, y in zip(a, b, strict=True))


def _long(short: str) -> str:
    for long, value in DTYPES.items():
        if value == short:
            return long
    return short


def _render_shape(shape: Shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


_FOLD: dict[str, Callable[[Any, Any], Any]] = {
    **BINARY, "^": operator.xor, "<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne}


def _fold(op: str, a: Any, b: Any) -> Any:
    """`a <op> b` for two known constexprs (values.py's operators plus comparisons), or UNKNOWN;
    the guards keep `2 ** 10**9` and `1 << 10**9` from being computed."""
    function = _FOLD.get(op)
    if function is None or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return UNKNOWN
    if (op == "**" and not (isinstance(b, int) and b >= 0 and
                            (isinstance(a, float) and b <= 64 or isinstance(a, int) and abs(a).bit_length() * b <= 256))) or \
            (op == "<<" and not (isinstance(b, int) and 0 <= b <= 128)) or (op == ">>" and not (isinstance(b, int) and b >= 0)):
        return UNKNOWN
    return function(a, b)


def _param_value(constexpr_value: Any, is_constexpr: bool, pointer_dtype: str | None,
                 scalar_type: str | None) -> Value:
    if is_constexpr:
        if constexpr_value is UNKNOWN:
            return Value("tensor", None, (), UNKNOWN, True)
        return replace(_literal(constexpr_value), weak=True, constexpr=True)
    if pointer_dtype is not None:
        return Value("pointer", pointer_dtype, ())
    if scalar_type is not None:
        return scalar(scalar_type)
    # A runtime argument no launch site types: one value (a scalar or a pointer) of unknown
    # type, so that the shapes built from it are still known.
    return Value("tensor", None, ())


def infer_kernel(body: Node, params: list[tuple[str, Value]], qualify: Callable[[Node], str | None],
                 helpers: Mapping[str, Node], *, keep_values: bool = True,
                 arguments: Callable[[Node], tuple[list[Node], dict[str, tuple[Node, Node]]]] = call_args,
                 memo: StatementMemo | None = None) -> KernelTypes:
    """Interpret `body` with the parameters bound to `params` (name, value); `keep_values`
    False records the issues only (what the checks need). `memo`: what the body's statements did
    in an earlier interpretation of this kernel with the same imports and helpers."""
    out = KernelTypes()
    interpreter = Interpreter(qualify, helpers, out, keep_values=keep_values, arguments=arguments, memo=memo)
    interpreter.env = dict(params)
    try:
        interpreter.run(body)
    except _OverBudget:
        return KernelTypes()
    return out


def parameter_values(names: list[tuple[str, bool]], constexprs: Mapping[str, Any],
                     types: Mapping[str, str], *, entry: bool = True) -> list[tuple[str, Value]]:
    """Each parameter's value for one scenario: (name, is_constexpr) in order, the scenario's
    constexpr values, and the signature types known for the runtime ones (`*fp16`, `i32`).
    `entry`: a launched kernel, whose runtime arguments are scalars or pointers; a jit helper's
    may be blocks of any shape, so what no caller says stays unknown."""
    out = []
    for name, is_constexpr in names:
        if not entry and not is_constexpr and name not in types:
            out.append((name, UNKNOWN_VALUE))
            continue
        kind = types.get(name)
        pointer = kind[1:] if kind and kind.startswith("*") else None
        scalar_type = kind if kind and not kind.startswith("*") and kind != "constexpr" else None
        out.append((name, _param_value(constexprs.get(name, UNKNOWN), is_constexpr, pointer, scalar_type)))
    return out
