"""Category E: pointers, loads, stores and memory safety (catalogue E1-E14)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from tree_sitter import Node

from ...analysis.syntax import call_args, operator_of, string_value, text, unparen, walk
from ..context import KernelContext
from ..findings import Span
from .registry import Hit, check, edit, fix, related

# Positions of the optional arguments of tl.load / tl.store (the pre-3.9 signatures, which the
# 3.9 ones keep for mask and other).
_LOAD_MASK, _LOAD_OTHER = 1, 2
_STORE_MASK = 2


def _present(node: Node | None) -> bool:
    """An argument that is given and not the literal None."""
    node = unparen(node)
    return node is not None and node.type != "none"


def _load_mask(ctx: KernelContext, call: Node) -> Node | None:
    return ctx.arg(call, _LOAD_MASK, "mask")


def _load_other(ctx: KernelContext, call: Node) -> Node | None:
    return ctx.arg(call, _LOAD_OTHER, "other")


# -- E4 ------------------------------------------------------------------------------------------


@check("other_without_mask", needles=(b'other',))
def other_without_mask(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.tl_calls("load"):
        other = _load_other(ctx, call)
        if _present(other) and not _present(_load_mask(ctx, call)):
            _, keywords = ctx.args(call)
            at = keywords["other"][0] if "other" in keywords else other
            if at is None:
                continue
            yield Hit(
                at,
                "tl.load takes other= only together with mask=: without a mask no lane is masked out",
            )


# -- E4/E10: masked loads whose undefined lanes reach a reduction ----------------------------------

# Reductions over a masked load, and the `other` value that leaves each one unchanged.
_NEUTRAL = {
    "sum": "0.0",
    "xor_sum": "0",
    "cumsum": "0.0",
    "dot": "0.0",
    "max": 'float("-inf")',
    "argmax": 'float("-inf")',
    "min": 'float("inf")',
    "argmin": 'float("inf")',
}
_SUM_LIKE = frozenset({"sum", "xor_sum", "cumsum", "dot"})
_METHOD_REDUCTIONS = frozenset({"sum", "max", "min", "argmax", "argmin", "cumsum"})


def _reductions_reached(ctx: KernelContext, start: Node, scaled: bool = False,
                        hops: int = 0) -> Iterator[tuple[Node, str]]:
    """(reduction call, reduction name) for each reduction that `start`'s value flows into through
    operations that keep masked-out lanes masked-out when `other` is the reduction's neutral value:
    casts for any reduction, and also products and negation for sums and dots; through up to
    three names it is assigned to on the way (`x = tl.load(...)`, `out = -x`, `tl.sum(out)`).
    `scaled`: went through `*` or unary `-` already, so only sum-like reductions stay exact."""
    node = start
    for _ in range(12):
        parent = node.parent
        if parent is None:
            return
        kind = parent.type
        if kind == "assignment" and parent.child_by_field_name("right") == node:
            if hops < 3:
                for ident in _reads_of_single_assignment(ctx, parent):
                    yield from _reductions_reached(ctx, ident, scaled, hops + 1)
            return
        if kind == "parenthesized_expression":
            node = parent
            continue
        if kind == "binary_operator" and operator_of(parent) == "*":
            scaled, node = True, parent
            continue
        if kind == "unary_operator" and operator_of(parent) == "-":
            scaled, node = True, parent
            continue
        if kind == "attribute" and parent.child_by_field_name("object") == node:
            call = parent.parent
            if (
                call is None
                or call.type != "call"
                or call.child_by_field_name("function") != parent
            ):
                return
            method = text(parent.child_by_field_name("attribute"))
            if method == "to":
                node = call
                continue
            if method in _METHOD_REDUCTIONS and not (scaled and method not in _SUM_LIKE):
                yield call, method
            return
        argument = node
        if kind == "keyword_argument":
            argument = parent
            parent = parent.parent
            if parent is None:
                return
            kind = parent.type
        if kind != "argument_list" or parent.parent is None:
            return
        call = parent.parent
        name = ctx.call_name(call)
        short = name.rsplit(".", 1)[-1] if name else ""
        if not ctx.imports.is_triton(name, short):
            return
        positional, keywords = call_args(call)
        if short == "cast" and positional and positional[0] == node:
            node = call
            continue
        if short not in _NEUTRAL or (scaled and short not in _SUM_LIKE):
            return
        operands = {"dot": ("input", "other")}.get(short, ("input",))
        first = positional[: len(operands)]
        is_operand = node in first or (
            argument.type == "keyword_argument"
            and text(argument.child_by_field_name("name")) in operands
        )
        if is_operand:
            yield call, short
        return


@check("masked_load_into_reduction", needles=(b'mask',))
def masked_load_into_reduction(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.tl_calls("load"):
        if not _present(_load_mask(ctx, call)) or _present(_load_other(ctx, call)):
            continue
        positional, keywords = ctx.args(call)
        if len(positional) > 3 or "boundary_check" in keywords or "padding_option" in keywords:
            continue
        reached = list(_reductions_reached(ctx, call))
        if _is_tail_mask(ctx, _load_mask(ctx, call)):
            # A prefix sum never reads later lanes: with only the tail masked off, every lane
            # kept is exact (FlagGems' masked_select, cumsum kernels).
            reached = [(c, short) for c, short in reached if short != "cumsum"]
        if not reached:
            continue
        kinds = sorted({short for _, short in reached})
        values = {_NEUTRAL[k] for k in kinds}
        first_reduction = reached[0][0]
        what = ", ".join(f"tl.{k}" for k in kinds)
        the_fix = None
        arguments = call.child_by_field_name("arguments")
        last = (
            [c for c in arguments.named_children if c.type != "comment"][-1]
            if arguments is not None
            else None
        )
        if len(values) == 1 and last is not None:
            value = values.pop()
            the_fix = fix(
                f"Add other={value} to the load", edit(Span.at(last, end=True), f", other={value}")
            )
        yield Hit(
            call,
            f"masked tl.load without other= feeds {what}: masked-out lanes are undefined and enter the "
            "reduction; give other= the reduction's neutral value",
            related(first_reduction, "the reduction"),
            the_fix,
        )


def _is_tail_mask(ctx: KernelContext, mask: Node | None, depth: int = 0) -> bool:
    """`offs < n` (or `<=`), directly or through a name assigned once: only the lanes past a
    bound are masked off."""
    mask = unparen(mask)
    if mask is None or depth > 3:
        return False
    if mask.type == "comparison_operator":
        return [c.type for c in mask.children if not c.is_named] in (["<"], ["<="])
    if mask.type == "identifier":
        values = ctx.assignments.get(text(mask), [])
        return len(values) == 1 and _is_tail_mask(ctx, values[0], depth + 1)
    return False


def _reads_of_single_assignment(ctx: KernelContext, statement: Node) -> list[Node]:
    """The reads of a name assigned once, outside any loop's target (`x = ...`), else none: a
    name bound twice may hold another value where it is read."""
    target = statement.child_by_field_name("left")
    if target is None or target.type != "identifier":
        return []
    name = text(target)
    if len(ctx.assignments.get(name, [])) != 1 or _rebound_in_loop(ctx, name):
        return []
    return [i for i in ctx.identifiers.get(name, []) if i != target and ctx.in_body(i) and _is_read(i)]


def _rebound_in_loop(ctx: KernelContext, name: str) -> bool:
    for loop in ctx.nodes("for_statement"):
        left = loop.child_by_field_name("left")
        if left is not None and any(
            n.type == "identifier" and text(n) == name for n in walk(left)
        ):
            return True
    return False


def _is_read(ident: Node) -> bool:
    parent = ident.parent
    if parent is None:
        return False
    if parent.type == "keyword_argument" and parent.child_by_field_name("name") == ident:
        return False
    if parent.type == "attribute" and parent.child_by_field_name("attribute") == ident:
        return False
    is_target = (
        parent.type in ("assignment", "augmented_assignment")
        and parent.child_by_field_name("left") == ident
    )
    return not is_target



# -- E7 ------------------------------------------------------------------------------------------


def _is_pointer_arithmetic(ctx: KernelContext, node: Node | None, depth: int = 0) -> bool:
    """`ptr + offsets` (or a local only ever assigned such sums): a tensor of pointers, never a
    block pointer, which cannot take part in arithmetic."""
    node = unparen(node)
    if node is None or depth > 10:
        return False
    if node.type == "binary_operator":
        return operator_of(node) in ("+", "-")
    if node.type == "identifier":
        name = text(node)
        values = ctx.assignments.get(name, [])
        if not values or ctx.kernel.param(name) is not None:
            return False
        for value in values:
            parent = value.parent
            if parent is not None and parent.type == "augmented_assignment":
                if operator_of(parent) not in ("+=", "-="):
                    return False
            elif not _is_pointer_arithmetic(ctx, value, depth + 1):
                return False
        return True
    return False


def _falsy_literal(node: Node | None) -> bool:
    node = unparen(node)
    if node is None:
        return True
    if node.type in ("none", "false"):
        return True
    if node.type in ("tuple", "list"):
        return not [c for c in node.named_children if c.type != "comment"]
    return node.type == "string" and string_value(node) == ""


@check("boundary_check_on_pointer_tensor", needles=(b'boundary_check', b'padding_option'))
def boundary_check_on_pointer_tensor(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.tl_calls("load", "store"):
        _, keywords = ctx.args(call)
        pointer = ctx.arg(call, 0, "pointer")
        if not _is_pointer_arithmetic(ctx, pointer):
            continue
        for name in ("boundary_check", "padding_option"):
            if name in keywords and not _falsy_literal(keywords[name][1]):
                yield Hit(
                    keywords[name][0],
                    f"{name}= only applies to block pointers; '{text(pointer)}' is a "
                    "tensor of pointers: guard it with mask= instead",
                )


# -- E8 ------------------------------------------------------------------------------------------


@check("block_pointer_removed", needles=(b'make_block_ptr', b'advance'))
def block_pointer_removed(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.tl_calls("make_block_ptr", "advance"):
        what = text(call.child_by_field_name("function"))
        yield Hit(
            call,
            f"{what} was removed in Triton 3.9 (block pointers were replaced by tensor descriptors: "
            "tl.make_tensor_descriptor)",
        )


# -- E9 ------------------------------------------------------------------------------------------

_CACHE_MODIFIERS = frozenset({"", ".ca", ".cg", ".cv", ".cs", ".wb", ".wt"})
_CACHE_MODIFIERS_39 = _CACHE_MODIFIERS | {m.lstrip(".") for m in _CACHE_MODIFIERS} | {"none"}
_EVICTION_POLICIES = frozenset({"", "evict_first", "evict_last", "evict_normal"})


@check("cache_eviction_strings", needles=(b'cache_modifier', b'eviction_policy'))
def cache_eviction_strings(ctx: KernelContext) -> Iterator[Hit]:
    modifiers = (
        _CACHE_MODIFIERS
        if ctx.version is not None and ctx.version < (3, 9)
        else _CACHE_MODIFIERS_39
    )
    for call in ctx.tl_calls("load", "store"):
        _, keywords = ctx.args(call)
        for name, valid in (("cache_modifier", modifiers), ("eviction_policy", _EVICTION_POLICIES)):
            if name not in keywords:
                continue
            value_node = keywords[name][1]
            value = string_value(value_node)
            if value is None or value in valid:
                continue
            choices = ", ".join(
                repr(v) for v in sorted(valid - {"", "none"}) if v.startswith((".", "evict"))
            )
            yield Hit(value_node, f"{value!r} is not a valid {name} (one of {choices})")


# -- E2 ------------------------------------------------------------------------------------------

_POINTER_NAME = re.compile(r"(?:^|_)ptrs?$", re.IGNORECASE)


def _is_pointer_param(ctx: KernelContext, node: Node | None) -> bool:
    node = unparen(node)
    if node is None or node.type != "identifier":
        return False
    name = text(node)
    param = ctx.kernel.param(name)
    if (
        param is None
        or param.is_constexpr
        or param.default is not None
        or not _POINTER_NAME.search(name)
    ):
        return False
    for value in ctx.assignments.get(name, []):
        parent = value.parent
        if parent is not None and parent.type == "augmented_assignment":
            if operator_of(parent) not in ("+=", "-="):
                return False
        elif not (
            value.type == "binary_operator"
            and any(c.type == "identifier" and text(c) == name for c in value.named_children)
        ):
            return False
    return True


@check("pointer_plus_pointer")
def pointer_plus_pointer(ctx: KernelContext) -> Iterator[Hit]:
    for node in ctx.nodes("binary_operator"):
        if operator_of(node) != "+" or not ctx.in_body(node):
            continue
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if _is_pointer_param(ctx, left) and _is_pointer_param(ctx, right):
            yield Hit(
                node,
                f"cannot add two pointers ('{text(left)}' + '{text(right)}'): add an integer "
                "offset to one pointer",
            )


# -- E6 ------------------------------------------------------------------------------------------

_INT_OPS = frozenset({"+", "-", "*", "//", "%", "<<", ">>"})


def _is_int_block(ctx: KernelContext, node: Node | None, depth: int = 0) -> bool:
    """An integer block built from tl.arange by arithmetic (never compared): not a mask."""
    node = unparen(node)
    if node is None or depth > 12:
        return False
    if node.type == "call":
        return ctx.imports.is_triton(ctx.call_name(node), "arange")
    if node.type == "binary_operator":
        if operator_of(node) not in _INT_OPS:
            return False
        operands = [node.child_by_field_name("left"), node.child_by_field_name("right")]
        if any(
            (u := unparen(o)) is not None and u.type == "float"
            for o in operands
        ):
            return False
        return any(_is_int_block(ctx, o, depth + 1) for o in operands)
    if node.type == "subscript":
        return _is_int_block(ctx, node.child_by_field_name("value"), depth + 1)
    if node.type == "identifier":
        name = text(node)
        values = ctx.assignments.get(name, [])
        if not values or ctx.kernel.param(name) is not None:
            return False
        for value in values:
            parent = value.parent
            if parent is not None and parent.type == "augmented_assignment":
                if operator_of(parent) not in ("+=", "-=", "*="):
                    return False
                continue
            if not _is_int_block(ctx, value, depth + 1):
                return False
        return any(v.parent is None or v.parent.type != "augmented_assignment" for v in values)
    return False


@check("mask_not_bool", needles=(b'mask',))
def mask_not_bool(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.tl_calls("load", "store"):
        position = _LOAD_MASK if ctx.imports.is_triton(ctx.call_name(call), "load") else _STORE_MASK
        mask = ctx.arg(call, position, "mask")
        if mask is not None and _is_int_block(ctx, mask):
            yield Hit(
                mask,
                f"mask '{text(mask)}' is an integer offset block, not a boolean: compare it with "
                f"the bound (e.g. mask={text(mask)} < n)",
            )


# -- E10 -----------------------------------------------------------------------------------------

_SIZE_NAME = re.compile(r"^[MNKLTBHD]$|^n$|^n_|_n$|numel|size|len|^num_|elements|rows|cols")


def _origins(ctx: KernelContext, node: Node | None, seen: set[str], depth: int = 0) -> set[str]:
    """Which of tl.program_id / tl.arange an expression is computed from (through locals)."""
    out: set[str] = set()
    if node is None or depth > 8:
        return out
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "subscript":
            out.add("tile")  # `[:, None]` indexing: a 2-D tile, often known to divide the shape
        if current.type == "call":
            name = ctx.call_name(current)
            if ctx.imports.is_triton(name, "program_id"):
                out.add("program_id")
            elif ctx.imports.is_triton(name, "arange"):
                out.add("arange")
            elif ctx.imports.is_triton(name, "load", "atomic_add", "where"):
                continue  # offsets read from memory (or selected) are not a plain pid * BLOCK grid
        elif current.type == "binary_operator" and operator_of(current) == "%":
            # `idx % OW`: wrapped below the modulus, however far idx grows; extra lanes rewrite
            # in-bounds elements, so only the modulus itself can carry an origin.
            right = current.child_by_field_name("right")
            if right is not None:
                stack.append(right)
            continue
        elif current.type == "identifier" and _is_read(current):
            name = text(current)
            if name in seen:
                continue
            seen.add(name)
            for value in ctx.assignments.get(name, []):
                out |= _origins(ctx, value, seen, depth + 1)
        stack.extend(current.named_children)
    return out


def _inside_if(ctx: KernelContext, node: Node) -> bool:
    parent = node.parent
    while parent is not None and parent != ctx.kernel.node:
        if parent.type in ("if_statement", "conditional_expression"):
            return True
        parent = parent.parent
    return False


@check("unmasked_store_out_of_bounds", needles=(b'store',))
def unmasked_store_out_of_bounds(ctx: KernelContext) -> Iterator[Hit]:
    """A 1-D store at `program_id * BLOCK + tl.arange(...)` with no mask, in a kernel that takes a
    size but masks nothing at all: the last block writes past the end unless n % BLOCK == 0.
    Tiled (2-D) and dot kernels are left alone: their tiles are often known to divide the shape."""
    if not any(ctx.tl_calls("program_id")):
        return
    sizes = [p for p in ctx.kernel.params if not p.is_constexpr and _SIZE_NAME.search(p.name)]
    if not sizes:
        return
    loads = list(ctx.tl_calls("load"))
    stores = list(ctx.tl_calls("store"))
    if any(_present(_load_mask(ctx, c)) for c in loads) or any(
        _present(ctx.arg(c, _STORE_MASK, "mask")) for c in stores
    ):
        return
    if any(
        ctx.tl_calls(
            "make_block_ptr", "make_tensor_descriptor", "device_assert", "static_assert", "dot"
        )
    ):
        return
    for call in stores:
        pointer = unparen(ctx.arg(call, 0, "pointer"))
        if (
            pointer is None
            or _inside_if(ctx, call)
            or ctx.arg(call, 3, "boundary_check") is not None
        ):
            continue
        origins = _origins(ctx, pointer, set())
        if origins >= {"program_id", "arange"} and "tile" not in origins:
            yield Hit(
                call,
                "this store has no mask, but its offsets grow with tl.program_id: unless every size "
                "is a multiple of the block, the last program writes out of bounds",
            )
