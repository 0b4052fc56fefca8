"""Category G: arithmetic and dtypes (catalogue G1-G7)."""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from ...analysis.syntax import call_args, operator_of, text, unparen
from ..context import KernelContext
from .registry import Hit, check

# What `semantic.to_tensor` can represent: int32, uint32, int64 and uint64 literals.
INT_MIN = -(2**63)
INT_END = 2**64

_FLOAT_DTYPES = frozenset(
    {
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "float8e4nv",
        "float8e5",
        "float8e4b15",
        "float8e4b8",
        "float8e5b16",
        "fp16",
        "bf16",
        "fp32",
        "fp64",
    }
)
_BITWISE = frozenset({"&", "|", "^", "<<", ">>"})


def _int_value(node: Node) -> int | None:
    try:
        return int(text(node).replace("_", ""), 0)
    except ValueError:
        return None


def _constexpr_context(ctx: KernelContext, node: Node) -> bool:
    """Whether `node` sits in a place that is folded on the host: a `tl.static_assert`, or a
    local annotated `tl.constexpr`."""
    current: Node | None = node.parent
    while current is not None and current != ctx.kernel.node:
        if current.type == "call" and ctx.imports.is_triton(
            ctx.call_name(current), "static_assert", "static_print"
        ):
            return True
        if current.type == "assignment" and current.child_by_field_name("type") is not None:
            return text(current.child_by_field_name("type")).endswith("constexpr")
        if current.type in ("expression_statement", "block"):
            return False
        current = current.parent
    return False


@check("int_literal_range")
def int_literal_range(ctx: KernelContext) -> Iterator[Hit]:
    flagged: list[Node] = []
    for literal in ctx.nodes("integer"):
        if not ctx.in_body(literal):
            continue
        value = _int_value(literal)
        # Only a literal near the edge of the range can be out of it with a minus sign: skip
        # the rest before asking for `.parent` (a walk from the root in tree-sitter).
        if value is None or -value >= INT_MIN and value < INT_END:
            continue
        node = literal
        parent = literal.parent
        if (
            parent is not None
            and parent.type == "unary_operator"
            and operator_of(parent) == "-"
        ):
            value, node = -value, parent
        if INT_MIN <= value < INT_END:
            continue
        if _constexpr_context(ctx, node):
            continue
        flagged.append(node)
        yield Hit(
            node, f"the integer {text(node)} does not fit in 64 bits; Triton cannot represent it"
        )
    # What only folding shows (`x + 2**64`, `x - (2**63 + 1)`), unless a literal above said it.
    from .typed import typed_hits

    for hit in typed_hits(ctx, "int-nonrepresentable"):
        at = hit.node
        if isinstance(at, Node) and not any(at.start_byte <= n.start_byte and n.end_byte <= at.end_byte for n in flagged):
            yield hit


def _is_float_literal(node: Node | None) -> bool:
    node = unparen(node)
    if node is not None and node.type == "unary_operator":
        node = unparen(node.child_by_field_name("argument"))
    return node is not None and node.type == "float"


def _is_tensor_operand(ctx: KernelContext, node: Node | None) -> bool:
    """A block tensor or a runtime scalar parameter: something that is not folded on the host."""
    node = unparen(node)
    if node is None:
        return False
    return ctx.is_block(node) or ctx.is_runtime_param(node)


@check("floordiv_float", needles=(b'//',))
def floordiv_float(ctx: KernelContext) -> Iterator[Hit]:
    for node in ctx.nodes("binary_operator"):
        if operator_of(node) != "//" or not ctx.in_body(node):
            continue
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if _is_float_literal(right) and _is_tensor_operand(ctx, left):
            literal = right
        elif _is_float_literal(left) and _is_tensor_operand(ctx, right):
            literal = left
        else:
            continue
        yield Hit(
            node,
            f"`//` with the float {text(literal)} makes a floating-point floor division, which Triton does not "
            f"support (use an integer divisor, or tl.floor({text(left)} / {text(right)}) on floats)",
        )
    for node in ctx.nodes("augmented_assignment"):
        if operator_of(node) != "//=" or not ctx.in_body(node):
            continue
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if _is_float_literal(right) and _is_tensor_operand(ctx, left):
            yield Hit(
                node,
                f"`//=` with the float {text(right)} makes a floating-point floor division, which "
                "Triton does not support",
            )


def _float_dtype(ctx: KernelContext, node: Node | None) -> bool:
    qualified = ctx.qualify(unparen(node))
    return (
        qualified is not None
        and qualified.startswith("triton.language.")
        and qualified.rsplit(".", 1)[-1] in _FLOAT_DTYPES
    )


def _creates_float(ctx: KernelContext, node: Node | None, depth: int = 0) -> bool:
    """Whether an expression is certainly a floating-point tensor: `.to(tl.float32)` (not a
    bitcast), `tl.zeros/full(..., tl.float32)`, or a local assigned only such values."""
    node = unparen(node)
    if node is None or depth > 5:
        return False
    if node.type == "identifier":
        name = text(node)
        values = ctx.assignments.get(name)
        if not values or ctx.kernel.param(name) is not None:
            return False
        # Every assignment must be a plain `=` producing a float (augmented ones keep the type).
        for value in values:
            parent = value.parent
            if parent is None or parent.type != "assignment":
                return False
            if not _creates_float(ctx, value, depth + 1):
                return False
        return True
    if node.type != "call":
        return False
    function = node.child_by_field_name("function")
    positional, keywords = call_args(node)
    if (
        function is not None
        and function.type == "attribute"
        and text(function.child_by_field_name("attribute")) == "to"
    ):
        qualified = ctx.qualify(function.child_by_field_name("object"))
        if qualified is not None and qualified.split(".")[0] in ("triton", "torch"):
            return False
        if "bitcast" in keywords or len(positional) > 1:
            return False
        dtype = positional[0] if positional else keywords.get("dtype", (None, None))[1]
        return _float_dtype(ctx, dtype)
    name = ctx.call_name(node) or ""
    if ctx.imports.is_triton(name, "zeros"):
        return _float_dtype(ctx, ctx.arg(node, 1, "dtype"))
    if ctx.imports.is_triton(name, "full"):
        return _float_dtype(ctx, ctx.arg(node, 2, "dtype"))
    return False


@check("bitwise_on_float", needles=(b'&', b'|', b'^', b'~', b'<<', b'>>'))
def bitwise_on_float(ctx: KernelContext) -> Iterator[Hit]:
    seen: set[tuple[int, int]] = set()
    for node in ctx.nodes("binary_operator"):
        operator = operator_of(node)
        if operator not in _BITWISE or not ctx.in_body(node):
            continue
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        for operand in (left, right):
            if _creates_float(ctx, operand):
                seen.add((node.start_byte, node.end_byte))
                yield Hit(
                    node,
                    f"`{operator}` is a bitwise operator, but {text(operand)} is a floating-point "
                    "tensor (bitcast it to an integer type first)",
                )
                break
    # What only the inferred types show (`x = tl.load(fp32_ptr + offs); x >> 1`, `~x`).
    from .typed import typed_hits

    for hit in typed_hits(ctx, "float-bitwise"):
        at = hit.node
        if isinstance(at, Node) and (at.start_byte, at.end_byte) not in seen:
            yield hit
