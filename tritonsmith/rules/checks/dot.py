"""Category F: `tl.dot` (catalogue F1-F9)."""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from ...analysis.syntax import string_value, text, unparen
from ..context import KernelContext
from .calls import is_launched
from .registry import Hit, check, edit, fix
from .shapes import tl_alias

# tl.dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
#        out_dtype=float32)
_ACC, _PRECISION, _ALLOW_TF32, _OUT_DTYPE = 2, 3, 4, 6


def _dots(ctx: KernelContext) -> Iterator[Node]:
    yield from ctx.tl_calls("dot")


# -- F7 ------------------------------------------------------------------------------------------


@check("dot_bf16_out", needles=(b'out_dtype',))
def dot_bf16_out(ctx: KernelContext) -> Iterator[Hit]:
    tl = tl_alias(ctx)
    for call in _dots(ctx):
        out_dtype = ctx.arg(call, _OUT_DTYPE, "out_dtype")
        if out_dtype is None or not ctx.imports.is_triton(ctx.qualify(out_dtype), "bfloat16"):
            continue
        the_fix = None
        if ctx.arg(call, _ACC, "acc") is None:
            start, end = (
                out_dtype.start_byte - call.start_byte,
                out_dtype.end_byte - call.start_byte,
            )
            source = call.text or b""
            new = (source[:start] + f"{tl}.float32".encode() + source[end:]).decode(
                "utf-8", errors="replace"
            )
            the_fix = fix(
                f"Accumulate in float32 and cast with .to({tl}.bfloat16)",
                edit(call, f"{new}.to({tl}.bfloat16)"),
            )
        yield Hit(
            out_dtype,
            f"tl.dot does not support out_dtype=bfloat16: use float32 (or float16) and cast the "
            f"result with .to({tl}.bfloat16)",
            fix=the_fix,
        )


# -- F8 ------------------------------------------------------------------------------------------

_PRECISIONS = frozenset({"tf32", "tf32x3", "ieee"})
_PRECISIONS_39 = _PRECISIONS | {"bf16x3", "bf16x6"}
_PRECISIONS_ANY = _PRECISIONS_39 | {"hf32"}  # hf32: older AMD backends


def _given(node: Node | None) -> bool:
    node = unparen(node)
    return node is not None and node.type != "none"


@check("dot_precision_args", needles=(b'input_precision', b'allow_tf32'))
def dot_precision_args(ctx: KernelContext) -> Iterator[Hit]:
    if ctx.version is None:
        allowed = _PRECISIONS_ANY
    elif ctx.version >= (3, 9):
        allowed = _PRECISIONS_39
    else:
        allowed = _PRECISIONS | {"hf32"}
    for call in _dots(ctx):
        precision = ctx.arg(call, _PRECISION, "input_precision")
        allow_tf32 = ctx.arg(call, _ALLOW_TF32, "allow_tf32")
        if _given(precision) and _given(allow_tf32):
            _, keywords = ctx.args(call)
            at = keywords["allow_tf32"][0] if "allow_tf32" in keywords else allow_tf32
            if at is None:
                continue
            yield Hit(
                at, "tl.dot takes either input_precision= or the deprecated allow_tf32=, not both"
            )
        if precision is None:
            continue
        value = string_value(precision)
        if value is None:
            values = [v for v, _ in ctx.values(precision) if isinstance(v, str)]
            value = values[0] if values else None
        if value is None or value.lower() in allowed:
            continue
        choices = ", ".join(repr(v) for v in sorted(allowed - {"hf32"}))
        yield Hit(precision, f"input_precision {value!r} is not one of {choices}")


# -- F4 ------------------------------------------------------------------------------------------

_ELEMENTWISE = frozenset(
    {
        "exp",
        "exp2",
        "log",
        "log2",
        "abs",
        "sqrt",
        "rsqrt",
        "sigmoid",
        "cast",
        "erf",
        "sin",
        "cos",
        "floor",
        "ceil",
        "fma",
        "maximum",
        "minimum",
        "where",
    }
)
_REDUCE = frozenset({"sum", "max", "min", "xor_sum"})


class _Ranks:
    """The rank of block expressions where it is certain: 1 for tl.arange, len(shape) for
    tl.zeros / tl.full, `[:, None]` indexing, broadcasting arithmetic, loads through such
    pointers. Anything else is None (unknown)."""

    def __init__(self, ctx: KernelContext) -> None:
        self.ctx = ctx
        # Parameters of a real kernel are scalars (or scalar pointers); a helper's may be blocks.
        self.scalars = {p.name for p in ctx.kernel.params} if is_launched(ctx) else set()
        self.cache: dict[str, int | None] = {}
        self.visiting: set[str] = set()

    def rank(self, node: Node | None, depth: int = 0) -> int | None:
        node = unparen(node)
        if node is None or depth > 30:
            return None
        kind = node.type
        if kind in ("integer", "float", "true", "false"):
            return 0
        if kind == "identifier":
            return self._name(text(node), depth)
        if kind in ("binary_operator", "comparison_operator"):
            ranks = [self.rank(c, depth + 1) for c in node.named_children if c.type != "comment"]
            return None if not ranks or any(r is None for r in ranks) else max(ranks)  # type: ignore[type-var]
        if kind == "unary_operator":
            return self.rank(node.child_by_field_name("argument"), depth + 1)
        if kind == "subscript":
            base = self.rank(node.child_by_field_name("value"), depth + 1)
            indices = node.children_by_field_name("subscript")
            if base is None or not indices or any(i.type not in ("slice", "none") for i in indices):
                return None
            if sum(1 for i in indices if i.type == "slice") != base:
                return None
            return len(indices)
        if kind == "call":
            return self._call(node, depth)
        return None

    def _name(self, name: str, depth: int) -> int | None:
        ctx = self.ctx
        if name in self.cache:
            return self.cache[name]
        values = ctx.assignments.get(name)
        if not values:
            param = ctx.kernel.param(name)
            if param is not None and (param.is_constexpr or name in self.scalars):
                return 0
            return None
        if name in self.visiting:
            return None
        self.visiting.add(name)
        try:
            ranks = set()
            for value in values:
                parent = value.parent
                if parent is not None and parent.type == "augmented_assignment":
                    continue  # `acc += x` keeps acc's rank (broadcasting aside)
                ranks.add(self.rank(value, depth + 1))
            result = ranks.pop() if len(ranks) == 1 else None
        finally:
            self.visiting.discard(name)
        self.cache[name] = result
        return result

    def _call(self, node: Node, depth: int) -> int | None:
        ctx = self.ctx
        name = ctx.call_name(node)
        positional, keywords = ctx.args(node)
        short = name.rsplit(".", 1)[-1] if name else ""
        if ctx.imports.is_triton(name, short):
            if short == "arange":
                return 1
            if short in ("zeros", "full"):
                shape = unparen(ctx.arg(node, 0, "shape"))
                if shape is not None and shape.type in ("tuple", "list"):
                    return len([c for c in shape.named_children if c.type != "comment"])
                return None
            if short == "load":
                if "boundary_check" in keywords or "padding_option" in keywords:
                    return None
                return self.rank(ctx.arg(node, 0, "pointer"), depth + 1)
            if short in _ELEMENTWISE:
                ranks = [self.rank(a, depth + 1) for a in positional[:3] if a is not None]
                if short == "cast":
                    ranks = ranks[:1]
                return None if not ranks or any(r is None for r in ranks) else max(ranks)  # type: ignore[type-var]
            if short in _REDUCE:
                if "keep_dims" in keywords or len(positional) > 2:
                    return None
                base = self.rank(ctx.arg(node, 0, "input"), depth + 1)
                axis = unparen(ctx.arg(node, 1, "axis"))
                if base is None:
                    return None
                if axis is None or axis.type == "none":
                    return 0
                return base - 1 if axis.type == "integer" and base >= 1 else None
            if short == "dot":
                return self.rank(positional[0] if positional else None, depth + 1)
            return None
        function = node.child_by_field_name("function")
        if (
            function is not None
            and function.type == "attribute"
            and text(function.child_by_field_name("attribute")) == "to"
        ):
            return self.rank(function.child_by_field_name("object"), depth + 1)
        return None


@check("dot_rank", needles=(b'dot',))
def dot_rank(ctx: KernelContext) -> Iterator[Hit]:
    ranks = _Ranks(ctx)
    for call in _dots(ctx):
        for position, name in ((0, "input"), (1, "other")):
            operand = ctx.arg(call, position, name)
            rank = ranks.rank(operand)
            if operand is not None and rank is not None and rank < 2:
                what = "a scalar" if rank == 0 else "1-D"
                yield Hit(
                    operand,
                    f"tl.dot operands must be 2-D or 3-D blocks; '{text(operand)}' is {what} "
                    "(use tl.sum(a * b) for a vector product, or a[:, None] / b[None, :] to add a dimension)",
                )
