"""Category H: shape manipulation — reshape, view, cat, permute (catalogue H1-H8)."""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from ...analysis.syntax import argument_list, call_args, text, unparen
from ...analysis.values import evaluate
from ..context import KernelContext
from ..findings import Span, SpanEdit
from .registry import Hit, check, edit, fix


def _tensor_method_calls(ctx: KernelContext, *names: str) -> Iterator[tuple[Node, Node, Node]]:
    """`x.name(...)` on a value in the kernel body (not through `tl`/`triton`/`torch`)."""
    for call, obj, attr in ctx.method_calls(*names):
        if ctx.in_body(call):
            yield call, obj, attr


def _add_keyword(call: Node, keyword: str, value: str) -> SpanEdit | None:
    """An edit that sets `keyword=value` on a call: replace an existing value or append it."""
    _, keywords = call_args(call)
    if keyword in keywords:
        return edit(keywords[keyword][1], value)
    args = argument_list(call)
    if args is None:
        return None
    last = None
    for child in args.named_children:
        if child.type != "comment":
            last = child
    if last is None:
        return None
    return edit(Span.at(last, end=True), f", {keyword}={value}")


def _is_true(node: Node | None) -> bool:
    node = unparen(node)
    return node is not None and node.type == "true"


@check("cat_can_reorder", needles=(b'cat',))
def cat_can_reorder(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.tl_calls("cat"):
        positional, _ = ctx.args(call)
        value = ctx.arg(call, 2, "can_reorder")
        if value is not None and (_is_true(value) or unparen(value).type not in ("false", "none")):  # type: ignore[union-attr]
            continue  # True, or something we cannot fold
        the_edit = _add_keyword(call, "can_reorder", "True") if len(positional) <= 2 else None
        yield Hit(
            call,
            "tl.cat needs can_reorder=True before Triton 3.9 (its result may reorder elements)",
            fix=fix("Pass can_reorder=True", the_edit) if the_edit is not None else None,
        )


@check("view_deprecated", needles=(b'view',))
def view_deprecated(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.tl_calls("view"):
        function = call.child_by_field_name("function")
        the_fix = None
        if function is not None and function.type == "attribute":
            attr = function.child_by_field_name("attribute")
            keyword = _add_keyword(call, "can_reorder", "True")
            if attr is not None and keyword is not None:
                obj = text(function.child_by_field_name("object"))
                the_fix = fix(
                    f"Use {obj}.reshape(..., can_reorder=True)", edit(attr, "reshape"), keyword
                )
        yield Hit(
            call,
            "tl.view is deprecated and may reorder elements: use tl.reshape (with can_reorder=True "
            "only where element order does not matter)",
            fix=the_fix,
        )
    for call, _, attr in _tensor_method_calls(ctx, "view"):
        keyword = _add_keyword(call, "can_reorder", "True")
        the_fix = (
            fix("Use .reshape(..., can_reorder=True)", edit(attr, "reshape"), keyword)
            if keyword
            else None
        )
        yield Hit(
            call,
            "tensor.view is deprecated and may reorder elements: use .reshape (with can_reorder=True "
            "only where element order does not matter)",
            fix=the_fix,
        )


def _empty_shape(node: Node | None) -> bool:
    node = unparen(node)
    if node is None:
        return False
    if node.type in ("tuple", "list"):
        return not [c for c in node.named_children if c.type != "comment"]
    return False


@check("reshape_to_scalar", needles=(b'reshape',))
def reshape_to_scalar(ctx: KernelContext) -> Iterator[Hit]:
    calls = [(call, 1) for call in ctx.tl_calls("reshape")]
    calls += [(call, 0) for call, _, _ in _tensor_method_calls(ctx, "reshape")]
    for call, position in calls:
        positional, keywords = ctx.args(call)
        shape = positional[position:]
        if "shape" in keywords:
            shape = [keywords["shape"][1]]
        if len(shape) == 1 and _empty_shape(shape[0]):
            yield Hit(
                call,
                "reshaping to a 0-d (scalar) block is not supported before Triton 3.4; "
                "reduce it instead (e.g. tl.sum(x, axis=0)) ",
            )


def _dims(ctx: KernelContext, nodes: list[Node]) -> Iterator[list[int]]:
    """Each distinct value the dims argument(s) take across the kernel's scenarios."""
    if len(nodes) == 1:
        single = unparen(nodes[0])
        if single is not None and single.type in ("tuple", "list"):
            nodes = [c for c in single.named_children if c.type != "comment"]
        elif single is not None and single.type == "identifier":
            # A tuple of dims held in a constexpr: try to fold it.
            seen = set()
            for value, _ in ctx.values(single):
                if isinstance(value, tuple | list) and all(isinstance(v, int) for v in value):
                    key = tuple(value)
                    if key not in seen:
                        seen.add(key)
                        yield list(value)
            return
    if not nodes:
        return
    seen_lists: set[tuple[int, ...]] = set()
    for scenario in ctx.scenarios():
        env = ctx.local_env(scenario)
        values = [evaluate(n, env, ctx.qualify) for n in nodes]
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            key = tuple(values)
            if key not in seen_lists:
                seen_lists.add(key)
                yield list(values)


@check("permute_dims", needles=(b'permute', b'trans'))
def permute_dims(ctx: KernelContext) -> Iterator[Hit]:
    calls: list[tuple[Node, list[Node]]] = []
    for call in ctx.tl_calls("permute", "trans"):
        positional, keywords = ctx.args(call)
        dims = positional[1:]
        if "dims" in keywords:
            dims = [keywords["dims"][1]]
        calls.append((call, dims))
    for call, _, _ in _tensor_method_calls(ctx, "permute", "trans"):
        positional, keywords = ctx.args(call)
        dims = list(positional)
        if "dims" in keywords:
            dims = [keywords["dims"][1]]
        calls.append((call, dims))
    for call, dims in calls:
        if not dims:
            continue
        for values in _dims(ctx, dims):
            if values and sorted(values) != list(range(len(values))):
                yield Hit(
                    call,
                    f"permute dims {tuple(values)} are not a permutation of "
                    f"{tuple(range(len(values)))}",
                )
                break
