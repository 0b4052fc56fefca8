"""Category C: Python data structures and builtins (catalogue C1-C8).

List *literals* are how shapes are written (`tl.zeros([BM, BN], ...)`) and are never reported;
only building lists up, comprehensions over non-tuples, dicts and sets are. Builtins are only
reported when the name is really Python's (not shadowed by an import such as libdevice's `pow`,
a module function, a parameter or a local).
"""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from ...analysis.syntax import call_args, text, unparen
from ..context import KernelContext
from .builtins import local_names, unsupported_builtin_name
from .control_flow import in_kernel_scope, is_runtime, is_tl, scoped
from .registry import Hit, check, edit, fix, related
from .shapes import tl_alias

# -- C1 -------------------------------------------------------------------------------------------


@check("dict_set_literal", needles=(b'{',))
def dict_set_literal(ctx: KernelContext) -> Iterator[Hit]:
    for node in scoped(ctx, "dictionary", "set"):
        what = "dict" if node.type == "dictionary" else "set"
        yield Hit(
            node,
            f"{what} literals are not supported in Triton kernels",
        )


# -- C2 / C4 ----------------------------------------------------------------------------------------

_MUTATORS = frozenset({"append", "extend", "insert"})
_LIST_ONLY_MUTATORS = frozenset({"pop", "remove", "clear", "sort", "reverse"})


def _sequence_names(ctx: KernelContext) -> set[str]:
    """Locals assigned a list or tuple literal (or `list(...)`)."""
    out = set()
    for name, values in ctx.assignments.items():
        for raw in values:
            value = unparen(raw)
            if value is None:
                continue
            if value.type in ("list", "tuple") or (
                value.type == "call" and ctx.call_name(value) == "list"
            ):
                out.add(name)
    return out



@check("list_mutation")
def list_mutation(ctx: KernelContext) -> Iterator[Hit]:
    sequences = _sequence_names(ctx)
    locals_ = local_names(ctx)
    for call, obj, attr in ctx.method_calls(*(_MUTATORS | _LIST_ONLY_MUTATORS)):
        if not in_kernel_scope(ctx, call) or obj.type != "identifier":
            continue
        name, method = text(obj), text(attr)
        if name not in locals_ or (method in _LIST_ONLY_MUTATORS and name not in sequences):
            continue
        yield Hit(
            call,
            f"lists cannot be built up in a Triton kernel ('{name}.{method}'): list literals become "
            "immutable tuples",
        )
    for target in _subscript_targets(ctx):
        base = unparen(target.child_by_field_name("value"))
        if base is not None and base.type == "identifier" and text(base) in sequences:
            yield Hit(
                target,
                f"'{text(base)}' is an immutable tuple in a Triton kernel; item assignment is not "
                "supported",
            )


def _targets(left: Node | None) -> Iterator[Node]:
    left = unparen(left)
    if left is None:
        return
    if left.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list"):
        for child in left.named_children:
            yield from _targets(child)
    else:
        yield left


def _assignment_targets(ctx: KernelContext) -> list[Node]:
    # Three checks read the targets: unpack the assignments once per kernel.
    memo = ctx.__dict__.setdefault("_control_flow_memo", {})
    targets = memo.get("assignment_targets")
    if targets is None:
        targets = memo["assignment_targets"] = [
            target
            for node in scoped(ctx, "assignment", "augmented_assignment")
            for target in _targets(node.child_by_field_name("left"))
        ]
    return targets


def _subscript_targets(ctx: KernelContext) -> list[Node]:
    memo = ctx.__dict__.setdefault("_control_flow_memo", {})
    targets = memo.get("subscript_targets")
    if targets is None:
        targets = memo["subscript_targets"] = [t for t in _assignment_targets(ctx) if t.type == "subscript"]
    return targets


@check("tensor_setitem")
def tensor_setitem(ctx: KernelContext) -> Iterator[Hit]:
    tl = tl_alias(ctx)
    sequences = _sequence_names(ctx)
    for target in _subscript_targets(ctx):
        base = unparen(target.child_by_field_name("value"))
        if base is None or (base.type == "identifier" and text(base) in sequences):
            continue  # a list/tuple: reported by list_mutation
        param = ctx.kernel.param(text(base)) if base.type == "identifier" else None
        if (
            param is not None
            and not param.is_constexpr
            and text(base) not in ctx.assignments
            and not ctx.is_block(base)
        ):
            message = (
                f"item assignment is not supported in Triton; to write memory through the pointer "
                f"'{text(base)}' use {tl}.store({text(base)} + offset, value)"
            )
        else:
            message = (
                f"tensors are immutable in Triton: '{text(target)} = ...' is not supported; build a new "
                f"tensor, e.g. {tl}.where(offs == i, value, {text(base)})"
            )
        yield Hit(target, message)
    if ctx.version == (3, 4):
        return  # 3.4.0 silently accepted attribute assignment
    for target in _assignment_targets(ctx):
        if target.type == "attribute":
            yield Hit(
                target,
                f"attribute assignment ('{text(target)} = ...') is not supported in Triton kernels",
            )


# -- C3 -------------------------------------------------------------------------------------------

_NON_TUPLE_ITERABLES = ("range", "static_range", "arange")


@check("comprehension", needles=(b'for',))
def comprehension(ctx: KernelContext) -> Iterator[Hit]:
    old = ctx.version is not None and ctx.version < (3, 5)
    for node in scoped(
        ctx,
        "list_comprehension",
        "set_comprehension",
        "dictionary_comprehension",
        "generator_expression",
    ):
        clauses = [c for c in node.named_children if c.type == "for_in_clause"]
        if node.type == "generator_expression":
            if ctx.version is not None and ctx.version < (3, 9):
                continue  # 3.5-3.8 accept tuple(f(x) for x in t) (catalogue C3); 3.9 does not
            yield Hit(
                node,
                "generator expressions are not supported by Triton 3.9; use a list comprehension over "
                "a tuple, e.g. [f(v) for v in t]",
            )
            continue
        if node.type != "list_comprehension":
            what = "set" if node.type == "set_comprehension" else "dict"
            yield Hit(node, f"{what} comprehensions are not supported in Triton kernels")
            continue
        if old:
            yield Hit(node, "list comprehensions are not supported before Triton 3.5")
            continue
        if len(clauses) > 1:
            yield Hit(node, "nested comprehensions are not supported in Triton kernels")
            continue
        iterable = unparen(clauses[0].child_by_field_name("right")) if clauses else None
        if iterable is None:
            continue
        over_range = iterable.type == "call" and (
            ctx.call_name(iterable) == "range"
            or is_tl(ctx, ctx.call_name(iterable), *_NON_TUPLE_ITERABLES)
        )
        if over_range or ctx.is_block(iterable):
            yield Hit(
                node,
                f"only comprehensions over a tuple are supported in Triton kernels, not over "
                f"'{text(iterable)[:40]}'",
            )


# -- C5 -------------------------------------------------------------------------------------------

# tl functions that return a tuple of tensors: indexing their result is tuple indexing.
_TUPLE_RETURNING = (
    "split",
    "philox",
    "randint4x",
    "rand4x",
    "randn4x",
    "associative_scan",
    "inline_asm_elementwise",
    "reduce",
    "max",
    "min",
    "topk",
)


def _maybe_tuple(ctx: KernelContext, node: Node | None, depth: int = 0) -> bool:
    node = unparen(node)
    if node is None or depth > 10:
        return True
    if node.type in ("tuple", "list", "pattern_list"):
        return True
    if node.type == "identifier":
        return any(_maybe_tuple(ctx, v, depth + 1) for v in ctx.assignments.get(text(node), []))
    if node.type == "call":
        qualified = ctx.call_name(node)
        if ctx.imports.is_triton(qualified, *_TUPLE_RETURNING):
            return True
        function = node.child_by_field_name("function")
        if function is not None and function.type == "attribute":
            return text(function.child_by_field_name("attribute")) in _TUPLE_RETURNING
        return not (qualified or "").startswith("triton.language")
    return False


def _bad_index(element: Node) -> bool:
    if element.type in ("none", "ellipsis", "comment"):
        return False
    if element.type == "slice":
        return bool(element.named_children)
    return True


@check("block_index", needles=(b'[',))
def block_index(ctx: KernelContext) -> Iterator[Hit]:
    targets = {(t.start_byte, t.end_byte) for t in _subscript_targets(ctx)}
    for node in scoped(ctx, "subscript"):
        if (node.start_byte, node.end_byte) in targets:
            continue
        base = node.child_by_field_name("value")
        if base is None or not ctx.is_block(base) or _maybe_tuple(ctx, base):
            continue
        elements = node.children_by_field_name("subscript")
        bad = [e for e in elements if _bad_index(e)]
        if not bad:
            continue
        what = "slice" if bad[0].type == "slice" else "index"
        yield Hit(
            node,
            f"a block tensor can only be indexed with None and ':' (x[:, None]); the {what} "
            f"'{text(bad[0])}' is not supported",
        )


# -- C6 -------------------------------------------------------------------------------------------

_ALTERNATIVES = {
    "abs": "tl.abs(x)",
    "sum": "tl.sum(x)",
    "any": "tl.reduce_or / tl.max(x) != 0",
    "all": "tl.reduce_and / tl.min(x) != 0",
    "round": "libdevice.rint / libdevice.round",
    "pow": "libdevice.pow (imported by name) or x * x",
    "enumerate": "tl.static_range with indexing",
    "zip": "tl.static_range with indexing",
    "sorted": "tl.sort",
}


def _blockish(ctx: KernelContext, node: Node | None) -> bool:
    """A block, or `abs(block)` (which becomes `tl.abs(block)` once fixed)."""
    node = unparen(node)
    if node is not None and node.type == "call" and unsupported_builtin_name(ctx, node) == "abs":
        positional, _ = call_args(node)
        return len(positional) == 1 and _blockish(ctx, positional[0])
    return ctx.is_block(node)


@check("unsupported_builtin")
def unsupported_builtin(ctx: KernelContext) -> Iterator[Hit]:
    tl = tl_alias(ctx)
    for call in scoped(ctx, "call"):
        name = unsupported_builtin_name(ctx, call)
        if name is None:
            continue
        positional, keywords = call_args(call)
        the_fix = None
        function = call.child_by_field_name("function")
        if (
            function is not None
            and len(positional) == 1
            and not keywords
            and (name == "abs" or (name == "sum" and _blockish(ctx, positional[0])))
        ):
            the_fix = fix(f"Use {tl}.{name}", edit(function, f"{tl}.{name}"))
        instead = _ALTERNATIVES.get(name)
        message = f"the Python builtin '{name}' is not available in Triton kernels"
        if instead is not None:
            message += f"; use {instead.replace('tl.', tl + '.')}"
        yield Hit(function or call, message, fix=the_fix)


# -- C7 -------------------------------------------------------------------------------------------


def _operator(node: Node) -> str:
    # An operator is an anonymous node whose type is its own text: no need to decode it.
    operator = node.child_by_field_name("operator")
    return operator.type if operator is not None else ""


@check("pow_on_tensor", needles=(b'**',))
def pow_on_tensor(ctx: KernelContext) -> Iterator[Hit]:
    tl = tl_alias(ctx)
    for node in scoped(ctx, "binary_operator", "augmented_assignment"):
        if _operator(node) not in ("**", "**="):
            continue
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None or not (is_runtime(ctx, left) or is_runtime(ctx, right)):
            continue
        the_fix = None
        base = unparen(left)
        if node.type == "binary_operator" and base is not None and base.type == "identifier":
            exponent = text(unparen(right))
            if exponent == "2":
                the_fix = fix(
                    f"Write {text(base)} * {text(base)}", edit(node, f"{text(base)} * {text(base)}")
                )
            elif exponent == "0.5":
                the_fix = fix(f"Use {tl}.sqrt", edit(node, f"{tl}.sqrt({text(base)})"))
        yield Hit(
            node,
            "'**' is not supported on Triton tensors",
            fix=the_fix,
        )


@check("matmul_operator", needles=(b'@',))
def matmul_operator(ctx: KernelContext) -> Iterator[Hit]:
    body = ctx.kernel.body
    if body is None or b"@" not in (body.text or b""):  # decorators have '@' too: look at the body
        return
    for node in scoped(ctx, "binary_operator", "augmented_assignment"):
        if _operator(node) in ("@", "@="):
            yield Hit(node, "the '@' operator is not implemented in Triton kernels")


# -- C8 -------------------------------------------------------------------------------------------


@check("fstring_runtime", needles=(b'f"', b"f'", b'F"', b"F'"))
def fstring_runtime(ctx: KernelContext) -> Iterator[Hit]:
    for string in scoped(ctx, "string"):
        for part in string.named_children:
            if part.type != "interpolation":
                continue
            expression = part.child_by_field_name("expression")
            if expression is None or not is_runtime(ctx, expression):
                continue
            yield Hit(
                part,
                f"f-strings can only format tl.constexpr values; '{text(expression)}' is a runtime value",
                related(string, "in this f-string"),
            )
