"""The failing construct of a recorded failure, what its operands were, and matchers over it.

Graduation (`graduate.py`) turns a learned rule into a live check. Its precise matchers start
here: each failure with its file and error position (`FailureLog.located`) is parsed, the call at
the compiler's position found (`locate`: `tl.cumsum(v, axis=1)`, `x.to(tl.int16, bitcast=True)`)
and described (`Construct`): the function or method, each literal argument's text, each dtype
argument's Triton type and width, and the inferred element type, width and rank of the other
operands in the kernel's launch configurations (analysis/infer.py through `KernelContext`).
`shared` keeps what every failing example agrees on and `queries` writes tree-sitter queries over
it, most precise first, using the typed predicates of `rules/checks/query.py` (`#ts-bitwidth?`,
`#ts-rank?`): a width-changing bitcast and `axis=1` of a 1-D block, not every `.to` or every
`cumsum`. `near_misses` writes the variants a matcher must stay silent on once a compiler says
they compile (`axis=0`, a same-width bitcast): the contrast set.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from tree_sitter import Node

from ..analysis.document import Document
from ..analysis.index import index_module
from ..analysis.infer import DTYPES, is_float, is_int, width
from ..analysis.syntax import text
from ..rules import Rule, load_rules, pack_paths
from ..rules.context import KernelContext
from ..state.signature import fill

__all__ = ["Construct", "Operand", "construct_statement", "describe", "locate", "near_misses", "queries",
           "rewritten", "shared", "sibling_variants"]

_LITERALS = frozenset({"integer", "float", "true", "false", "none", "string"})
# `tl` functions called the same way, whose constraints often coincide: a failure at one is a
# reason to ask the compiler about the others (`sibling_variants`).
_FAMILIES = (
    ("atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_and", "atomic_or", "atomic_xor"),
    ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf", "floor", "ceil", "abs", "sigmoid"),
    ("sum", "max", "min", "argmax", "argmin", "xor_sum", "cumsum", "cumprod"),
)
_MAX_SIBLINGS = 8


@dataclass(frozen=True)
class Operand:
    """One operand of the construct: where it sits (`object`, `0`, `1`, or a keyword) and what
    is known of it: a literal's text, a dtype's Triton name and width, an inferred value's
    element type, width and rank, its block's size per dimension, and a compile-time integer's
    value (None where not known). Sizes are ranges, (smallest, largest): over the launch
    configurations of one failure, and over the failures once `shared` merges them; element
    types that differ between failures are kept as the set seen (`value_dtypes`)."""

    slot: str
    literal: str | None = None
    dtype: str | None = None  # a `tl.float16` argument: "fp16"
    dtype_width: int | None = None
    value_dtype: str | None = None  # an expression's inferred element type
    value_width: int | None = None
    rank: int | None = None
    value_dtypes: tuple[str, ...] = ()  # every element type seen, when they differ
    dims: tuple[tuple[int, int] | None, ...] | None = None  # per dimension, (smallest, largest) size
    number: tuple[int, int] | None = None  # a compile-time integer's (smallest, largest) value
    pow2: bool | None = None  # whether that integer is a power of two, where every value agrees
    odd_element: bool | None = None  # a tuple or list (a shape) with an integer that is not a power of two
    sizes: tuple[int, ...] | None = None  # that tuple's sizes, all known (one failure's; not merged)

    @property
    def element_types(self) -> tuple[str, ...]:
        return self.value_dtypes or ((self.value_dtype,) if self.value_dtype else ())


@dataclass(frozen=True)
class Construct:
    """A call at a failure: `tl.<function>` or `<object>.<method>`, or an operator (`~x`,
    `x >> 1`, `ptr + offsets`), with its operands (an operator's: `0`, and `1` for a binary
    one). A construct merged over failures at several `tl` functions (or operators) that agree on
    their operands (`tl.exp`, `tl.log` and `tl.sqrt` of an int32 block) lists the others in `also`."""

    function: str | None  # "triton.language.cumsum"
    method: str | None  # "to"
    operands: tuple[Operand, ...] = field(default_factory=tuple)
    also: tuple[str, ...] = ()
    operator: str | None = None  # "~", ">>", "+"
    # How operands 0 and 1 relate in every failure: "dtype" (their element types differ: fp16 by
    # fp32 in `tl.dot`), "shape" (a dimension differs and neither is 1: they cannot broadcast),
    # "numel" (a block and a shape tuple of another number of elements: `tl.reshape(x, (8, 16))`
    # of 64 values).
    relations: frozenset[str] = frozenset()

    @property
    def functions(self) -> tuple[str, ...]:
        return (self.function, *self.also) if self.function else ()

    @property
    def operators(self) -> tuple[str, ...]:
        return (self.operator, *self.also) if self.operator else ()

    @property
    def shown(self) -> str:
        """How a statement names the call, without local names: `tl.cumsum(..., axis=1)`,
        `.to(tl.int16, bitcast=True)` (the first function of a merged construct); an operator as
        `~...` or `... >> ...`."""
        if self.operator:
            return f"{self.operator}..." if len(self.operands) <= 1 else f"... {self.operator} ..."
        parts = []
        for o in self.operands:
            if o.slot == "object":
                continue
            value = o.literal if o.literal is not None else (f"tl.{_long(o.dtype)}" if o.dtype else "...")
            parts.append(value if o.slot.isdigit() else f"{o.slot}={value}")
        args = ", ".join(parts)
        if self.method:
            return f".{self.method}({args})"
        return f"tl.{(self.function or '').rsplit('.', 1)[-1]}({args})"

    @property
    def named(self) -> str:
        """The construct in a statement, in backticks: "`tl.cumsum(..., axis=1)`"; a merged one's
        functions, "`tl.exp(...)`, `tl.log(...)` or `tl.sqrt(...)`", and past three, the others
        by name: "`tl.exp(...)` (also `cos`, `log`, `sin`)"."""
        if self.operator:
            shown = [replace(self, operator=op, also=()).shown for op in self.operators]
            return ", ".join(f"`{s}`" for s in shown[:-1]) + (" or " if len(shown) > 1 else "") + f"`{shown[-1]}`"
        if len(self.functions) <= 1:
            return f"`{self.shown}`"
        args = self.shown[self.shown.index("("):]
        calls = [f"`tl.{name.rsplit('.', 1)[-1]}{args}`" for name in self.functions]
        if len(calls) > 3:
            return f"{calls[0]} (also " + ", ".join(f"`{name.rsplit('.', 1)[-1]}`" for name in self.also) + ")"
        return ", ".join(calls[:-1]) + " or " + calls[-1]


def _long(short: str | None) -> str:
    return next((long for long, value in DTYPES.items() if value == short), short or "?")


_OPERATORS = ("binary_operator", "unary_operator")


def locate(root: Node, row: int, column: int) -> Node | None:
    """The construct the compiler points at (its position is the construct's start): the
    outermost call starting exactly there; else the innermost operator starting exactly there
    (`~x` in `~x + y`: Triton points at the operator it cannot apply); else the smallest call
    containing it."""
    node = root.descendant_for_point_range((row, column), (row, column))
    best: Node | None = None
    current = node
    while current is not None and current.type not in ("expression_statement", "block", "function_definition"):
        if current.type == "call" and current.start_point == (row, column):
            break
        if current.type in _OPERATORS and current.start_point == (row, column):
            return current
        current = current.parent
    current = node
    while current is not None:
        if current.type == "call":
            if current.start_point == (row, column):
                best = current  # keep climbing: `x.to(...)` inside a longer call chain
            elif best is None:
                best = current
                break
        if current.type in ("expression_statement", "block", "function_definition"):
            break
        current = current.parent
    return best


def describe(source: str, row: int, column: int) -> Construct | None:
    """The construct at (row, column) of `source` with its operands, or None when the position
    is not at a call inside a jit function."""
    document = Document(source)
    index = index_module(document.root)
    call = locate(document.root, row, column)
    if call is None:
        return None
    kernel = next((k for k in index.kernels if k.body is not None and
                   k.body.start_byte <= call.start_byte < k.body.end_byte), None)
    if kernel is None:
        return None
    context = KernelContext(kernel, index, document.source, (3, 9))
    try:
        if call.type in _OPERATORS:
            operator = call.child_by_field_name("operator")
            sides = _operator_sides(call)
            if operator is None or any(side is None for side in sides):
                return None
            described = tuple(_operand(context, str(i), side) for i, side in enumerate(sides) if side is not None)
            return Construct(None, None, described, operator=text(operator),
                             relations=_relations(described, broadcast=True))
        function = call.child_by_field_name("function")
        qualified = context.qualify(function) if function is not None else None
        operands: list[Operand] = []
        method = None
        if qualified and qualified.startswith("triton.language."):
            name: str | None = qualified
        elif function is not None and function.type == "attribute":
            name = None
            method = text(function.child_by_field_name("attribute"))
            obj = function.child_by_field_name("object")
            if obj is not None:
                operands.append(_operand(context, "object", obj))
        else:
            return None
        positional, keywords = context.args(call)
        operands += [_operand(context, str(i), node) for i, node in enumerate(positional)]
        operands += [_operand(context, key, value) for key, (_, value) in keywords.items()]
        return Construct(name, method, tuple(operands), relations=_relations(operands))
    finally:
        context.close()


def _operator_sides(node: Node) -> list[Node | None]:
    """An operator's operands in slot order: `left`, `right`; a unary one's `argument`."""
    if node.type == "binary_operator":
        return [node.child_by_field_name("left"), node.child_by_field_name("right")]
    return [node.child_by_field_name("argument")]


def _relations(operands: Sequence[Operand], broadcast: bool = False) -> frozenset[str]:
    """How positional operands 0 and 1 relate (`Construct.relations`); shapes only between an
    operator's operands (`broadcast`), which must broadcast: a `tl.dot`'s differ by design."""
    a = next((o for o in operands if o.slot == "0"), None)
    b = next((o for o in operands if o.slot == "1"), None)
    if a is None or b is None:
        return frozenset()
    found = set()
    if a.value_dtype and b.value_dtype and a.value_dtype != b.value_dtype:
        found.add("dtype")
    if broadcast and a.dims and b.dims and len(a.dims) == len(b.dims) and any(
            x is not None and y is not None and x[0] == x[1] and y[0] == y[1] and 1 not in (x[0], y[0]) and x != y
            for x, y in zip(a.dims, b.dims)):
        found.add("shape")
    fixed = a.dims is not None and all(d is not None and d[0] == d[1] for d in a.dims)
    if fixed and b.sizes and min(b.sizes) > 0 and \
            math.prod(d[0] for d in a.dims or () if d is not None) != math.prod(b.sizes):  # a 0: a permutation
        found.add("numel")
    return frozenset(found)


def _operand(context: KernelContext, slot: str, node: Node) -> Operand:
    if node.type in ("tuple", "list"):  # a shape: `tl.zeros((64, 48), ...)`
        sizes = [_integer(text(e)) if e.type == "integer" else next(
            (v.const for v in context.inferred(e) if isinstance(v.const, int) and not isinstance(v.const, bool)), None)
            for e in node.named_children]
        known = [n for n in sizes if n is not None and n > 0]  # a permutation's 0 is no size
        return Operand(slot, odd_element=any(not _is_pow2(n) for n in known) if known else None,
                       sizes=tuple(n for n in sizes if n is not None) if all(n is not None for n in sizes) else None)
    if node.type in _LITERALS or (node.type == "unary_operator" and node.named_children and
                                  node.named_children[-1].type in ("integer", "float")):
        literal = _integer(text(node)) if node.type in ("integer", "unary_operator") else None
        return Operand(slot, literal=text(node), number=None if literal is None else (literal, literal),
                       pow2=None if literal is None else _is_pow2(literal))
    qualified = context.qualify(node) or ""
    short = qualified.removeprefix("triton.language.")
    if qualified.startswith("triton.language.") and short in DTYPES:
        return Operand(slot, dtype=DTYPES[short], dtype_width=width(DTYPES[short]))
    values = context.inferred(node)
    if not values:
        return Operand(slot)
    dtypes = {v.dtype for v in values}
    ranks = {v.rank for v in values}
    dtype = dtypes.pop() if len(dtypes) == 1 else None
    rank = ranks.pop() if len(ranks) == 1 else None
    dims: tuple[tuple[int, int] | None, ...] | None = None
    if rank:
        per_axis = [[v.shape[axis].size if v.shape is not None else None for v in values] for axis in range(rank)]
        dims = tuple(_span([(size, size) if size is not None else None for size in sizes]) for sizes in per_axis)
    numbers = [v.const for v in values if isinstance(v.const, int) and not isinstance(v.const, bool)]
    number = (min(numbers), max(numbers)) if numbers and len(numbers) == len(values) else None
    pows = {_is_pow2(n) for n in numbers}
    return Operand(slot, value_dtype=dtype, value_width=width(dtype), rank=rank, dims=dims, number=number,
                   pow2=pows.pop() if number is not None and len(pows) == 1 else None)


def _integer(raw: str) -> int | None:
    try:
        return int(raw.replace(" ", ""), 0)
    except ValueError:
        return None


def _is_pow2(number: int) -> bool:
    return number > 0 and number & (number - 1) == 0


def shared(constructs: Sequence[Construct], *, across: bool = False) -> Construct | None:
    """What every construct agrees on (the same function or method; per operand slot, each fact
    all of them have, the element types seen and the range of sizes), or None when they are not
    one construct. `across`: calls of different `tl` functions may merge (their names go to
    `also`); methods never do."""
    if not constructs:
        return None
    first = constructs[0]
    if first.operator is not None:  # operators merge with operators only, and with as many operands
        if any(c.operator is None or len(c.operands) != len(first.operands) for c in constructs) or \
                (not across and any(c.operator != first.operator for c in constructs)):
            return None
    elif across:
        if any(c.method is not None or c.function is None for c in constructs):
            return None
    elif any(c.function != first.function or c.method != first.method for c in constructs):
        return None
    slots = [o.slot for o in first.operands if all(any(p.slot == o.slot for p in c.operands) for c in constructs)]
    operands = []
    for slot in slots:
        found = [next(p for p in c.operands if p.slot == slot) for c in constructs]

        def agreed(attribute: str, found: list[Operand] = found) -> object:
            values = {getattr(p, attribute) for p in found}
            return values.pop() if len(values) == 1 else None

        facts = {a: agreed(a) for a in ("literal", "dtype", "dtype_width", "value_dtype", "value_width", "rank",
                                        "pow2", "odd_element")}
        types = [p.element_types for p in found]
        if facts["value_dtype"] is None and all(types):
            facts["value_dtypes"] = tuple(sorted({t for ts in types for t in ts}))
        numbers = [p.number for p in found]
        if all(n is not None for n in numbers):
            facts["number"] = (min(n[0] for n in numbers if n), max(n[1] for n in numbers if n))
        elif facts["pow2"] is not None:
            facts["pow2"] = None
        if facts["rank"] and all(p.dims is not None and len(p.dims) == facts["rank"] for p in found):
            facts["dims"] = tuple(_span([p.dims[axis] for p in found if p.dims is not None])
                                  for axis in range(int(facts["rank"])))  # type: ignore[call-overload]
        operands.append(Operand(slot, **facts))  # type: ignore[arg-type]
    relations = frozenset.intersection(*(c.relations for c in constructs))
    if first.operator is not None:
        ops = list(dict.fromkeys(c.operator for c in constructs if c.operator))
        return Construct(None, None, tuple(operands), also=tuple(sorted(ops[1:])), operator=ops[0], relations=relations)
    names = list(dict.fromkeys(c.function for c in constructs if c.function))
    function = names[0] if names else None
    return Construct(function, first.method, tuple(operands), also=tuple(sorted(names[1:])), relations=relations)


def _span(ranges: Sequence[tuple[int, int] | None]) -> tuple[int, int] | None:
    if not ranges or any(r is None for r in ranges):
        return None
    return min(r[0] for r in ranges if r), max(r[1] for r in ranges if r)


def queries(construct: Construct, named: Iterable[str] | None = None) -> list[str]:
    """Tree-sitter queries for the construct, most precise first: every agreed fact (literal
    values, dtype widths, inferred widths and ranks), then exact dtypes in place of widths, then
    the literal and dtype operands alone. Each is followed by its sized forms, which add what the
    failures' sizes say: a compile-time integer that is not a power of two, else at most the
    largest (then at least the smallest) integer and block dimension seen. Verification takes the
    first that fires on no known-good code, so a size narrows a matcher only where the types
    alone would flag correct code (`tl.dot` of fp16 blocks is fine; with K at most 8 it is not).
    Never the bare call: a matcher says what about the call is wrong."""
    said = None if named is None else set(named)
    out = [q for q in _ladder(construct, said) if q is not None]
    return list(dict.fromkeys(out))


def _ladder(construct: Construct, said: set[str] | None) -> list[str | None]:
    """`queries` before the incidental ones are dropped: where the messages name no type
    (`said` empty), a query that says nothing but the operands' inferred types (every `tl.permute`
    that failed was of fp32 blocks) describes the kernels, not the mistake."""
    def query(**options: object) -> str | None:
        return _query(construct, incidental=said is not None and not said, **options)  # type: ignore[arg-type]

    out: list[str | None] = []
    # First, the operands whose types the compiler's messages name (`named`: the mask of
    # `'tt.load' op operand #1 must be ... but got 'tensor<512xi32>'`), by the kind of their types
    # and nothing else: the rest of the call is the kernel's, not the mistake.
    slots = {o.slot for o in construct.operands if o.literal is None and set(o.element_types) & (said or set())}
    if slots and len(slots) < len([o for o in construct.operands if o.element_types or o.literal or o.dtype]):
        out.append(query(widths=False, classes=True, only=slots))
    # Then, where an operand failed with two or more types of one kind (fp16 and fp32; i32 and
    # i64), the whole kind: the types the failures happened to have are a sample of it.
    kinds = query(widths=False, classes=True)
    if kinds != query(widths=False):
        out.append(kinds)
    for widths, inferred in ((True, True), (False, True), (True, False)):
        for sized in (None, "<=", ">="):
            out.append(query(widths=widths, inferred=inferred, sized=sized))
    return out


def _kind(types: Sequence[str]) -> tuple[str, ...]:
    """Every element type of the kind of `types` when they are two or more of one kind (floats;
    integers, booleans left out), else `types`."""
    if len(set(types)) < 2:
        return tuple(types)
    if all(is_float(t) for t in types):
        return tuple(sorted({t for t in DTYPES.values() if is_float(t)}))
    if all(is_int(t) and t != "i1" for t in types):
        return tuple(sorted({t for t in DTYPES.values() if is_int(t) and t != "i1"}))
    return tuple(types)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _bound(sized: str, span: tuple[int, int] | None) -> str:
    """`<=largest` or `>=smallest` of a size range; `_` (any) for an unknown size."""
    if span is None:
        return '"_"'
    return f'"{sized}{span[1] if sized == "<=" else span[0]}"'


def _query(construct: Construct, *, widths: bool, inferred: bool = True, sized: str | None = None,
           classes: bool = False, only: set[str] | None = None, incidental: bool = False) -> str | None:
    """One query of `queries`' ladder; None when it would say nothing, or, with `incidental`,
    nothing but inferred element types."""
    predicates: list[str] = []
    telling = bool(construct.relations)  # a condition beyond an inferred element type
    children: list[str] = []
    positions: dict[int, str] = {}  # positional index -> its capture
    facts = 0
    object_capture = ""
    for i, o in enumerate(construct.operands):
        capture = f"@o{i}"
        conditions: list[str] = []
        related = o.slot in ("0", "1") and bool(construct.relations)
        if only is not None and o.slot not in only:
            if related:  # captured for the relation only
                facts += 1
                positions[int(o.slot)] = capture
            continue
        if o.literal is not None or o.dtype is not None or o.dtype_width is not None or o.odd_element:
            telling = True
        if o.literal is not None:
            conditions.append(f'(#eq? {capture} "{_escape(o.literal)}")')
        elif o.dtype is not None or o.dtype_width is not None:
            if o.dtype_width is not None and (widths or o.dtype is None):
                conditions.append(f'(#ts-bitwidth? {capture} "{o.dtype_width}")')
            elif o.dtype is not None:
                conditions.append(f'(#ts-qualified? {capture} "triton.language.{_long(o.dtype)}")')
        elif inferred:
            if o.value_width is not None and widths:
                conditions.append(f'(#ts-bitwidth? {capture} "{o.value_width}")')
            elif o.element_types:
                types = _kind(o.element_types) if classes else o.element_types
                conditions.append(f"(#ts-dtype? {capture} " + " ".join(f'"{t}"' for t in types) + ")")
            if o.rank is not None:
                conditions.append(f'(#ts-rank? {capture} "{o.rank}")')
        if o.odd_element:  # a shape with an odd size fails whatever else the call says
            conditions.append(f'(#ts-any-int? {capture} "!pow2")')
        if sized is not None:
            if o.literal is None and o.number is not None:
                bound = '"!pow2"' if o.pow2 is False else _bound(sized, o.number)
                conditions.append(f"(#ts-int? {capture} {bound})")
            if inferred and o.dims and any(d is not None for d in o.dims):
                conditions.append(f"(#ts-shape? {capture} " + " ".join(_bound(sized, d) for d in o.dims) + ")")
            telling = telling or any(c.startswith(("(#ts-int?", "(#ts-shape?")) for c in conditions)
        if not conditions and not related:
            continue
        facts += 1
        predicates += conditions
        if o.slot == "object":
            object_capture = f" {capture}"
        elif o.slot.isdigit():
            positions[int(o.slot)] = capture
        else:
            children.append(f'(keyword_argument name: (identifier) @k{i} value: (_) {capture})')
            predicates.append(f'(#eq? @k{i} "{o.slot}")')
    if facts == 0 or (incidental and not telling):
        return None
    if 0 in positions and 1 in positions:  # both captured whenever they relate
        predicates += [f"(#ts-{name}-differs? {positions[0]} {positions[1]})" for name in sorted(construct.relations)]
    if construct.operator:
        ops = " ".join(f'"{_escape(op)}"' for op in construct.operators)
        captures = [positions.get(i, "") for i in range(2)]
        if len(construct.operands) <= 1:
            shape = f"(unary_operator operator: _ @op argument: (_){' ' + captures[0] if captures[0] else ''})"
        else:
            shape = (f"(binary_operator left: (_){' ' + captures[0] if captures[0] else ''} operator: _ @op "
                     f"right: (_){' ' + captures[1] if captures[1] else ''})")
        return f"({shape} @flag\n (#any-of? @op {ops})\n " + "\n ".join(predicates) + ")"
    # Positional operands as one anchored chain from the first argument: `. (_) @o1 . (_) @o2`.
    positional = [". " + " . ".join(f"(_) {positions[i]}" if i in positions else "(_)"
                                    for i in range(max(positions) + 1))] if positions else []
    arguments = f" arguments: (argument_list {' '.join(positional + children)})" if positional or children else ""
    if construct.method:
        function = f"function: (attribute object: (_){object_capture} attribute: (identifier) @m)"
        predicates.insert(0, f'(#eq? @m "{construct.method}")')
    else:
        function = "function: (_) @fn"
        predicates.insert(0, "(#ts-qualified? @fn " + " ".join(f'"{name}"' for name in construct.functions) + ")")
    return f"((call {function}{arguments}) @flag\n " + "\n ".join(predicates) + ")"


_INTEGER = re.compile(r"^-?\d+$")
_SAME_WIDTH_INT = {8: "int8", 16: "int16", 32: "int32", 64: "int64"}


def near_misses(source: str, row: int, column: int, construct: Construct) -> list[str]:
    """Variants of `source` that change one operand of the failing construct the way a fix
    would (an integer literal, also one inside a shape tuple, to 0, one less or a neighbouring
    power of two, a dtype to the integer type of the operand's width, `True` to `False`; an
    operator's floating-point operand converted to the integer of its width); which of them
    compile is for a compiler to say."""
    document = Document(source)
    call = locate(document.root, row, column)
    if call is None:
        return []
    if call.type in _OPERATORS:
        return _operator_near_misses(document.source, call, construct)
    arguments = call.child_by_field_name("arguments")
    if arguments is None:
        return []
    object_width = next((o.value_width for o in construct.operands if o.slot == "object"), None)
    out: list[str] = []
    data = document.source
    values: list[Node] = []
    for argument in arguments.named_children:
        value = argument.child_by_field_name("value") if argument.type == "keyword_argument" else argument
        if value is not None:
            values.append(value)
            if value.type in ("tuple", "list"):  # a shape: `tl.reshape(x, (8, 16))`, `tl.zeros((100,), ...)`
                values += [item for item in value.named_children if item.type == "integer"]
    for value in values:
        replacements: list[str] = []
        raw = text(value)
        if value.type == "integer" and _INTEGER.match(raw):
            number = int(raw)
            # Sizes move to a neighbouring power of two (100 -> 128; 16 -> 8 or 32), indices to 0 or one less.
            pow2 = number > 0 and number & (number - 1) == 0
            sizes = (number // 2, number * 2) if pow2 else (1 << max(number - 1, 0).bit_length(),)
            replacements = [str(v) for v in dict.fromkeys((0, number - 1, *sizes)) if v != number and v >= 0]
        elif value.type == "true":
            replacements = ["False"]
        elif value.type in ("attribute", "identifier") and raw.rsplit(".", 1)[-1] in DTYPES:
            name = raw.rsplit(".", 1)[-1]
            prefix = raw[: len(raw) - len(name)]
            if object_width in _SAME_WIDTH_INT and width(DTYPES[name]) != object_width:
                replacements = [prefix + _SAME_WIDTH_INT[object_width]]
            # Types of the same width and kind (float8e5 next to float8e4nv, bfloat16 next to
            # float16): one that compiles keeps a width from standing for the type.
            kind = is_float(DTYPES[name])
            replacements += [prefix + other for other, short in DTYPES.items()
                             if other != name and width(short) == width(DTYPES[name]) and is_float(short) == kind
                             and short != "i1"][:3]
        for replacement in replacements:
            variant = data[: value.start_byte] + replacement.encode() + data[value.end_byte:]
            out.append(variant.decode("utf-8", "replace"))
    return out


def _operator_near_misses(data: bytes, node: Node, construct: Construct) -> list[str]:
    """An operator's floating-point operands, each converted to the integer of its width
    (`x_ptr + i.to(tl.int32)`; `~x.to(tl.int32)`): where that compiles, the types were the mistake."""
    out = []
    for operand, side in zip(construct.operands, _operator_sides(node), strict=False):
        integer = _SAME_WIDTH_INT.get(operand.value_width or 0)
        if side is None or integer is None or not operand.element_types or \
                not all(is_float(t) for t in operand.element_types):
            continue
        converted = f"({text(side)}).to(tl.{integer})".encode()
        out.append((data[: side.start_byte] + converted + data[side.end_byte:]).decode("utf-8", "replace"))
    return out


def sibling_variants(source: str, row: int, column: int, construct: Construct,
                     exclude: Sequence[str] = ()) -> list[tuple[str, str]]:
    """The failing `tl.<function>(...)` call rewritten to each function of its family that the
    construct and `exclude` do not already name (`tl.atomic_max` -> `tl.atomic_xchg`, ...),
    as (qualified name, variant source), at most a few: the compiler then says which fail the
    same way (they join the matcher) and which compile (they join the contrast set)."""
    if construct.method is not None or construct.function is None:
        return []
    short = construct.function.rsplit(".", 1)[-1]
    named = {name.rsplit(".", 1)[-1] for name in (*construct.functions, *exclude)}
    family = next((f for f in _FAMILIES if short in f), ())
    document = Document(source)
    call = locate(document.root, row, column)
    function = call.child_by_field_name("function") if call is not None else None
    attribute = function.child_by_field_name("attribute") if function is not None and function.type == "attribute" \
        else None
    if attribute is None or text(attribute) != short:
        return []
    data = document.source
    out = []
    for sibling in [f for f in family if f not in named][:_MAX_SIBLINGS]:
        variant = data[: attribute.start_byte] + sibling.encode() + data[attribute.end_byte:]
        out.append((f"triton.language.{sibling}", variant.decode("utf-8", "replace")))
    return out


def rewritten(construct: Construct, source: str, variant: str) -> str | None:
    """How a near miss writes the failing construct (`.to(tl.float8e5)` for `.to(tl.float8e4nv)`),
    when the one text it changed is in the construct as a statement shows it; else None."""
    start = next((i for i, (a, b) in enumerate(zip(source, variant)) if a != b), None)
    if start is None:
        return None
    end = 0
    while end < min(len(source), len(variant)) - start and source[-1 - end] == variant[-1 - end]:
        end += 1
    # Widen to whole words: `float8e4nv` -> `float8e5`, not `4nv` -> `5`.
    while start > 0 and (source[start - 1].isalnum() or source[start - 1] == "_"):
        start -= 1
    while end > 0 and (source[len(source) - end].isalnum() or source[len(source) - end] == "_"):
        end -= 1
    old, new = source[start:len(source) - end], variant[start:len(variant) - end]
    shown = construct.shown
    conversion = re.fullmatch(r"\((.*)\)(\.to\(tl\.\w+\))", new, re.DOTALL)
    if construct.operator and conversion is not None and conversion.group(1) == old:
        # An operator's operand converted: `... + (...).to(tl.int32)`, `~(...).to(tl.int32)`.
        right = len(construct.operands) == 2 and source[:start].rstrip().endswith(construct.operator)
        side = 1 if right else 0
        parts = ["...", "..."]
        parts[side] = f"(...){conversion.group(2)}"
        return f"{construct.operator}{parts[0]}" if len(construct.operands) == 1 else \
            f"{parts[0]} {construct.operator} {parts[1]}"
    if not old or shown.count(old) != 1:
        return None
    return shown.replace(old, new)


def construct_statement(rule: Rule, construct: Construct, targets: Sequence[str] = (),
                        fixes: Sequence[str] = ()) -> tuple[str, str | None]:
    """A statement a user can act on, from the failing construct and what its operands were
    (`.to(tl.int16, bitcast=True)` on an fp32 block), the compiler's words with what every
    message says there (`fill`: `K >= 16` stays, a size that varies does not), and the advice of
    a builtin rule whose signature matches the same failures; and that advice as the rule's
    how-to-fix. No regex, line number or local name."""
    subject = next((o for o in construct.operands if o.slot == "object"), None)
    on = ""
    if subject is not None and (subject.value_dtype or subject.rank is not None):
        kind = "blocks" if subject.rank not in (None, 0) else "scalars"
        shape = f"{subject.rank}-D " if subject.rank not in (None, 0) else ""
        on = " on " + " ".join(part for part in (subject.value_dtype, shape + kind) if part)
    elif construct.function or construct.operator:  # an operator's typed operand, else a call's first
        typed = next((o for o in construct.operands if (o.slot == "0" or construct.operator)
                      and (o.rank is not None or o.element_types)), None)
        if typed is not None:
            kind = f"{typed.rank}-D blocks" if typed.rank else ("scalars" if typed.rank == 0 else "values")
            on = " on " + " ".join(part for part in ("/".join(typed.element_types), kind) if part)
    said = fill(rule.template, rule.examples) if rule.template else (rule.examples[0] if rule.examples else "")
    said = re.sub(r"^\w+(?:Error|Exception): ", "", said.split(" | ")[0])
    for placeholder, shown in (("<n>", "N"), ("<name>", "..."), ("<dtype>", "T"), ("<op>", "this operation"),
                               ("<shape>", "..."), ("<layout>", "...")):
        said = said.replace(placeholder, shown)
    said = said.strip().rstrip(".")
    advice = None
    for builtin in load_rules(pack_paths(None, include_user=False)):
        if builtin.signatures and any(builtin.matches_error(e) for e in rule.examples):
            advice = builtin.how_to_fix or builtin.fix
            break
    where = f" for {'/'.join(targets)}" if targets else ""
    statement = f"You cannot write {construct.named}{on}{where}: Triton rejects it (\"{said}\")."
    if advice is None and fixes:  # what the compiler accepted in its place, the closest first
        closest = sorted(fixes, key=lambda fix: -difflib.SequenceMatcher(None, fix, construct.shown).ratio())
        advice = "Write " + " or ".join(f"`{fix}`" for fix in closest[:2]) + " instead: it compiles"
    if advice:
        statement += f" {advice.rstrip('.')}."
    return statement, advice
