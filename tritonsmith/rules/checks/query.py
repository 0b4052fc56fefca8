"""The generic check of graduated rules: a rule's own tree-sitter query, run over each kernel.

A learned rule that graduated into a live check (`tritonsmith.adapt.graduate`) names the check
`query` and carries `query`: a tree-sitter query in the tree-sitter-python grammar whose `@flag`
capture is where the finding goes, for example

    ((call function: (_) @fn arguments: (argument_list (float))) @flag
     (#ts-qualified? @fn "triton.language.arange"))

Besides tree-sitter's own predicates (`#eq?`, `#not-eq?`, `#match?`, `#not-match?`, `#any-of?`,
`#not-any-of?` and their `any-` forms), a query may use a small fixed vocabulary that asks the
kernel's context what a node means (`PREDICATES`), among them the inferred element type, width,
rank and pointer-ness of an expression (analysis/infer.py: `(#ts-bitwidth? @x "32")` tells a
32 -> 16-bit bitcast from a 32 -> 32-bit one); a query is data and never runs code. Anything
else (an unknown predicate, a directive, no `@flag`, a query that does not compile) is refused
with a reason by `compile_query`, and a rule whose query is refused is skipped by the matcher with
that reason logged.

Each rule's check is built once per matcher (`bind`), with its compiled query (cached by text)
and a pre-filter derived from the query's literal names (`#eq? @f "full"` needs `full` in the
kernel), so a graduated rule costs a substring search on kernels it cannot match, and rules
without a query cost nothing at all: they never name this check.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from tree_sitter import Node, Query, QueryCursor, QueryError

from ...analysis.document import PY_LANGUAGE
from ...analysis.infer import DTYPES, width
from ..context import KernelContext
from ..model import Rule
from .registry import Check, Hit, rule_check

if TYPE_CHECKING:
    from tree_sitter import QueryPredicate

__all__ = ["FLAG", "PREDICATES", "QUERY_CHECK", "QueryProblem", "bind", "compile_query", "predicates_in_words",
           "query_needles"]

QUERY_CHECK = "query"
FLAG = "flag"  # the capture a finding goes to
MAX_QUERY = 4000  # characters

# The predicates a query may use beyond tree-sitter's own; each takes one capture.
PREDICATES = {
    "ts-qualified?": "the captured expression names one of the given Triton/Python names through the module's "
                     'imports, e.g. (#ts-qualified? @fn "triton.language.full") matches `tl.full` and `triton.language.full`',
    "ts-block?": "the captured expression is a block tensor (from tl.arange, tl.zeros, ... through assignments)",
    "ts-scalar?": "the captured expression is not known to be a block tensor",
    "ts-constexpr?": "the captured expression is a compile-time constant (a literal, a constexpr parameter, ...)",
    "ts-runtime?": "the captured expression is not a compile-time constant",
    # From the types-and-shapes inference (analysis/infer.py), in any of the kernel's launch
    # configurations; an expression whose type is not known matches none of these.
    "ts-dtype?": 'the captured expression\'s element type is one of the given, e.g. (#ts-dtype? @x "fp16" "bf16") '
                 '(short names as Triton prints them, or tl.float16)',
    "ts-bitwidth?": 'the captured expression\'s element type has one of the given widths in bits, e.g. '
                    '(#ts-bitwidth? @x "32")',
    "ts-rank?": 'the captured expression is a block of one of the given ranks, e.g. (#ts-rank? @x "1"); "0" is a scalar',
    "ts-pointer?": "the captured expression is a pointer or a block of pointers",
    "ts-shape?": 'the captured expression is a block with one condition per dimension: "_" (any size), "N", '
                 '"<=N" or ">=N", e.g. (#ts-shape? @a "_" "<=8") is a 2-D block of at most 8 columns',
    "ts-int?": 'the captured expression is a compile-time integer (a literal, a constexpr in a launch '
               'configuration) meeting every condition given: "N", "<=N", ">=N", "pow2" or "!pow2"',
    "ts-any-int?": 'the captured tuple or list (a shape) has a positive element that is a compile-time integer '
                   'meeting every condition given, e.g. (#ts-any-int? @shape "!pow2") (zeros are left out: a '
                   'permutation such as (1, 0) is no shape)',
    # Relations between two captures.
    "ts-dtype-differs?": "the two captured expressions have known element types, and they differ, e.g. "
                         "(#ts-dtype-differs? @a @b)",
    "ts-shape-differs?": "the two captured blocks have the same rank and a dimension whose known sizes differ, "
                         "neither being 1 (they cannot broadcast), e.g. (#ts-shape-differs? @a @b)",
    "ts-numel-differs?": "the captured block and the captured shape (a tuple of compile-time integers) hold "
                         "different numbers of elements, e.g. (#ts-numel-differs? @x @shape)",
}
# Predicates whose values must be from a fixed vocabulary, checked when the query compiles.
_TYPED_VALUES = {"ts-dtype?": "dtype", "ts-bitwidth?": "int", "ts-rank?": "int", "ts-shape?": "dim",
                 "ts-int?": "bound", "ts-any-int?": "bound"}
_BOUND = re.compile(r"^(<=|>=)?(\d+)$")
_BUILTIN_PREDICATES = frozenset(
    f"{prefix}{name}" for prefix in ("", "not-", "any-", "any-not-") for name in ("eq?", "match?")
) | {"any-of?", "not-any-of?"}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_PREDICATE = re.compile(r"\(\s*#([^\s()]+)")
_COMPILED: dict[str, Query] = {}


class QueryProblem(ValueError):
    """A rule's query cannot be used as a check (the message says why)."""


def _strip(text: str) -> str:
    """The query without its string literals and comments, for scanning its structure."""
    text = _STRING.sub('""', text)
    return "\n".join(line.split(";", 1)[0] for line in text.splitlines())


def compile_query(text: str) -> Query:
    """The compiled query, or QueryProblem saying why it cannot be a check."""
    cached = _COMPILED.get(text)
    if cached is not None:
        return cached
    if not text.strip():
        raise QueryProblem("the query is empty")
    if len(text) > MAX_QUERY:
        raise QueryProblem(f"the query is longer than {MAX_QUERY} characters")
    for name in _PREDICATE.findall(_strip(text)):
        if name not in _BUILTIN_PREDICATES and name not in PREDICATES:
            allowed = ", ".join(f"#{p}" for p in sorted(_BUILTIN_PREDICATES | set(PREDICATES)))
            raise QueryProblem(f"unknown predicate #{name} (allowed: {allowed})")
    for name, values in _TYPED_ARGS.findall(text):
        for value in _STRING.findall(values):
            if _typed_value(_TYPED_VALUES[name], value[1:-1]) is None:
                raise QueryProblem(f"#{name} does not take {value}: " + _TYPED_HELP[_TYPED_VALUES[name]])
    try:
        query = Query(PY_LANGUAGE, text)
    except QueryError as error:
        raise QueryProblem(f"not a tree-sitter-python query: {error}") from None
    names = {query.capture_name(i) for i in range(query.capture_count)}
    if FLAG not in names:
        raise QueryProblem(f"the query captures no @{FLAG} node (where the finding goes)")
    if len(_COMPILED) > 256:
        _COMPILED.clear()
    _COMPILED[text] = query
    return query


_TYPED_ARGS = re.compile(r'\(\s*#(ts-dtype\?|ts-bitwidth\?|ts-rank\?|ts-shape\?|ts-int\?|ts-any-int\?)\s+@[\w.-]+'
                         r'((?:\s+"(?:[^"\\]|\\.)*")*)\s*\)')
_TYPED_HELP = {"dtype": 'give element types such as "fp16" or "tl.int32"', "int": 'give whole numbers such as "32"',
               "dim": 'give "_", "N", "<=N" or ">=N" per dimension', "bound": 'give "N", "<=N", ">=N", "pow2" or "!pow2"'}


def _typed_value(kind: str, value: str) -> str | int | None:
    """A `#ts-dtype?` value as Triton's short name (`tl.float16` -> `fp16`), a number, or a size
    condition as it is written (`<=8`, `!pow2`)."""
    if kind == "int":
        return int(value) if value.isdigit() else None
    if kind in ("dim", "bound"):
        ok = bool(_BOUND.match(value)) or (value == "_" if kind == "dim" else value in ("pow2", "!pow2"))
        return value if ok else None
    short = value.removeprefix("triton.language.").removeprefix("tl.")
    if short in DTYPES:
        return DTYPES[short]
    return short if short in DTYPES.values() else None


def _typed_holds(ctx: KernelContext, name: str, node: Node, values: list[str]) -> bool:
    for inferred in ctx.inferred(node):
        if inferred.kind == "dtype" and isinstance(inferred.const, str):  # `tl.int16` itself
            inferred = replace(inferred, dtype=inferred.const)
        if name == "ts-pointer?" and inferred.kind == "pointer":
            return True
        if name == "ts-dtype?" and inferred.dtype is not None and \
                inferred.dtype in {_typed_value("dtype", v) for v in values}:
            return True
        if name == "ts-bitwidth?" and width(inferred.dtype) in {_typed_value("int", v) for v in values}:
            return True
        if name == "ts-rank?" and inferred.kind in ("tensor", "pointer") and \
                inferred.rank in {_typed_value("int", v) for v in values}:
            return True
    return False


def _meets(number: int, condition: str) -> bool:
    """Whether a known size meets a `ts-shape?`/`ts-int?` condition."""
    if condition == "_":
        return True
    if condition in ("pow2", "!pow2"):
        return (number > 0 and number & (number - 1) == 0) == (condition == "pow2")
    match = _BOUND.match(condition)
    if match is None:
        return False
    op, bound = match.group(1), int(match.group(2))
    return number <= bound if op == "<=" else number >= bound if op == ">=" else number == bound


def _sized_holds(ctx: KernelContext, name: str, node: Node, conditions: list[str]) -> bool:
    """`ts-shape?` and `ts-int?` in any of the kernel's launch configurations; a size that is not
    known meets no condition but "_"."""
    if name == "ts-int?" and node.type == "integer":
        try:
            return all(_meets(int(node.text or b"", 0), c) for c in conditions)
        except ValueError:
            return False
    for inferred in ctx.inferred(node):
        if name == "ts-int?" and isinstance(inferred.const, int) and not isinstance(inferred.const, bool) and \
                all(_meets(inferred.const, c) for c in conditions):
            return True
        if name == "ts-shape?" and inferred.kind in ("tensor", "pointer") and inferred.shape is not None and \
                len(inferred.shape) == len(conditions) and inferred.shape and \
                all(c == "_" or (d.size is not None and _meets(d.size, c)) for d, c in zip(inferred.shape, conditions)):
            return True
    return False


def _const(ctx: KernelContext, node: Node) -> int | None:
    """A compile-time integer's value (a literal, or a constexpr the same in every configuration)."""
    if node.type == "integer":
        try:
            return int(node.text or b"", 0)
        except ValueError:
            return None
    values = {v.const for v in ctx.inferred(node) if isinstance(v.const, int) and not isinstance(v.const, bool)}
    return values.pop() if len(values) == 1 else None


def _any_int_holds(ctx: KernelContext, node: Node, conditions: list[str]) -> bool:
    """`ts-any-int?`: an element of a tuple or list that meets every condition."""
    if node.type not in ("tuple", "list"):
        return False
    return any(_sized_holds(ctx, "ts-int?", element, [">=1", *conditions]) for element in node.named_children)


def _related(ctx: KernelContext, name: str, first: Node, second: Node) -> bool:
    """`ts-dtype-differs?`, `ts-shape-differs?` and `ts-numel-differs?` in any of the kernel's
    launch configurations."""
    if name == "ts-numel-differs?":
        if second.type not in ("tuple", "list"):
            return False
        sizes = [_const(ctx, element) for element in second.named_children]
        if any(size is None or size <= 0 for size in sizes):  # a 0: a permutation, not a shape
            return False
        wanted = math.prod(size for size in sizes if size is not None)
        return any(a.shape is not None and all(d.size is not None for d in a.shape) and
                   math.prod(d.size for d in a.shape if d.size is not None) != wanted for a in ctx.inferred(first))
    for a in ctx.inferred(first):
        for b in ctx.inferred(second):
            if name == "ts-dtype-differs?" and a.dtype is not None and b.dtype is not None and a.dtype != b.dtype:
                return True
            if name == "ts-shape-differs?" and a.shape is not None and b.shape is not None and \
                    len(a.shape) == len(b.shape) and any(
                        x.size is not None and y.size is not None and 1 not in (x.size, y.size) and x.size != y.size
                        for x, y in zip(a.shape, b.shape)):
                return True
    return False


_IN_WORDS = {
    "ts-qualified?": "{what} is {values}",
    "ts-dtype?": "{what} has elements of {values}",
    "ts-bitwidth?": "{what} has {values}-bit elements",
    "ts-rank?": "{what} is a {values}-D block",
    "ts-shape?": "{what} has shape ({values})",
    "ts-int?": "{what} is a compile-time integer {values}",
    "ts-any-int?": "{what} has a size {values}",
    "eq?": "{what} is {values}",
    "any-of?": "{what} is {values}",
}
_CONDITION_WORDS = {"!pow2": "that is not a power of two", "pow2": "that is a power of two"}


def predicates_in_words(text: str) -> list[str]:
    """A query's conditions as a person reads them (`rules review`): "operand 1 has element type
    fp16 or fp32", "operands 1 and 2 have different element types"; one line per pattern."""
    out: list[str] = []
    for pattern in re.split(r"\n(?=\(\()", text.strip()):
        said: list[str] = []
        for name, args in re.findall(r'\(\s*#([\w?!-]+)((?:\s+(?:@[\w.-]+|"(?:[^"\\]|\\.)*"))+)\s*\)', pattern):
            captures = re.findall(r"@([\w.-]+)", args)
            values = [v[1:-1] for v in _STRING.findall(args)]
            shown = [_capture_words(c) for c in captures]
            if name in ("ts-dtype-differs?", "ts-shape-differs?", "ts-numel-differs?") and len(shown) == 2:
                kind = {"ts-dtype-differs?": "element types", "ts-shape-differs?": "shapes that do not broadcast",
                        "ts-numel-differs?": "numbers of elements"}[name]
                said.append(f"{shown[0]} and {shown[1]} have different {kind}")
                continue
            if not shown or name not in _IN_WORDS or shown[0] is None:
                continue
            if name == "ts-qualified?":
                values = [v.removeprefix("triton.language.") for v in values]
                values = [f"tl.{v}" for v in values]
            words = [_CONDITION_WORDS.get(v, v) for v in values]
            if name == "ts-dtype?":
                words = _type_words(values)
            if name == "ts-rank?" and values == ["0"]:
                said.append(f"{shown[0]} is a scalar")
                continue
            said.append(_IN_WORDS[name].format(what=shown[0], values=" or ".join(words) if name != "ts-shape?"
                                               else ", ".join(words)))
        if said:
            out.append("; ".join(said))
    return out


def _type_words(values: list[str]) -> list[str]:
    """Element types in words: a whole kind as "a floating-point type" / "an integer type"."""
    short = {str(_typed_value("dtype", v) or v) for v in values}
    floats = {t for t in DTYPES.values() if t.startswith("fp") or t == "bf16"}
    ints = {t for t in DTYPES.values() if t[0] in "iu" and t != "i1"}
    if short == floats:
        return ["any floating-point type"]
    if short == ints:
        return ["any integer type"]
    return sorted(short)


def _capture_words(capture: str) -> str | None:
    if capture in ("fn", "m"):
        return "the function" if capture == "fn" else "the method"
    if capture == "op":
        return "the operator"
    if capture.startswith("o") and capture[1:].isdigit():
        return f"operand {int(capture[1:]) + 1}"
    return None


def _qualified(value: str) -> str:
    return "triton.language." + value[3:] if value.startswith("tl.") else value


def query_needles(text: str, query: Query) -> tuple[bytes, ...] | None:
    """Byte strings one of which a kernel must contain for the query to match, or None when the
    query gives none for sure (several patterns, an optional capture, no literal name)."""
    if query.pattern_count != 1:
        return None
    quantifiers = {query.capture_name(i): query.capture_quantifier(0, i) for i in range(query.capture_count)}
    for match in re.finditer(r'\(\s*#(eq\?|any-of\?|ts-qualified\?)\s+@([\w.-]+)((?:\s+"(?:[^"\\]|\\.)*")+)\s*\)', text):
        predicate, capture, values = match.groups()
        if quantifiers.get(capture, "?") != "":
            continue
        words = [v[1:-1] for v in _STRING.findall(values)]
        if predicate == "ts-qualified?":
            words = [_qualified(w).rsplit(".", 1)[-1] for w in words]
        needles = tuple(w.encode() for w in words if w and "\\" not in w)
        if needles and len(needles) == len(words):
            return needles
    return None


def _predicate(ctx: KernelContext) -> QueryPredicate:
    def holds(predicate: str, args: list[tuple[str, Literal["capture", "string"]]], pattern_index: int,
              captures: dict[str, list[Node]]) -> bool:
        name = predicate
        if not args or args[0][1] != "capture":
            return False
        nodes = captures.get(args[0][0], [])
        if not nodes:
            return False
        node = nodes[0]
        if name == "ts-qualified?":
            wanted = {_qualified(value) for value, kind in args[1:] if kind == "string"}
            return ctx.qualify(node) in wanted
        if name == "ts-block?":
            return ctx.is_block(node)
        if name == "ts-scalar?":
            return not ctx.is_block(node)
        if name == "ts-constexpr?":
            return ctx.is_constexpr_expr(node)
        if name == "ts-runtime?":
            return not ctx.is_constexpr_expr(node)
        if name in ("ts-dtype-differs?", "ts-shape-differs?", "ts-numel-differs?"):
            second = captures.get(args[1][0], []) if len(args) > 1 and args[1][1] == "capture" else []
            return bool(second) and _related(ctx, name, node, second[0])
        values = [value for value, kind in args[1:] if kind == "string"]
        if name == "ts-any-int?":
            return _any_int_holds(ctx, node, values)
        if name in ("ts-dtype?", "ts-bitwidth?", "ts-rank?", "ts-pointer?"):
            return _typed_holds(ctx, name, node, values)
        if name in ("ts-shape?", "ts-int?"):
            return _sized_holds(ctx, name, node, values)
        return False

    return holds


def run_query(query: Query, ctx: KernelContext) -> Iterator[Node]:
    """The `@flag` nodes of the query's matches inside the kernel's body, in order, once each."""
    body = ctx.kernel.body
    if body is None:
        return
    cursor = QueryCursor(query, match_limit=256)
    seen: set[tuple[int, int]] = set()
    for _, captures in cursor.matches(body, _predicate(ctx)):
        for node in captures.get(FLAG, []):
            key = (node.start_byte, node.end_byte)
            if key not in seen and ctx.in_body(node):
                seen.add(key)
                yield node


@rule_check(QUERY_CHECK)
def bind(rule: Rule) -> tuple[Check, tuple[bytes, ...] | None]:
    """The check of one rule with a query, and its pre-filter; QueryProblem when the rule has no
    usable query."""
    if not rule.query:
        raise QueryProblem(f"rule {rule.code} names the {QUERY_CHECK!r} check but has no query")
    query = compile_query(rule.query)
    message = rule.statement.rstrip(".") if rule.statement.startswith("You cannot") else None

    def check(ctx: KernelContext) -> Iterator[Hit]:
        for node in run_query(query, ctx):
            yield Hit(node, message)

    return check, query_needles(rule.query, query)
