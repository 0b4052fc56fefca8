"""Category B: control flow (catalogue B1-B14).

Every check here stays inside the kernel's own scope: a nested `def` or `lambda` is itself a
violation (reported once, by its own rule), so what is inside it is not reported again. Loops are
"dynamic" (lowered to `scf.for` / `scf.while`) unless they iterate over `tl.static_range`, which
is unrolled at compile time and lifts several of the restrictions.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tree_sitter import Node

from ...analysis.syntax import call_args, text, unparen
from ..context import KernelContext
from .builtins import unsupported_builtin_name
from .registry import Hit, check, edit, fix, related
from .shapes import tl_alias

_SCOPES = frozenset({"function_definition", "lambda", "class_definition"})

# Calls whose result is a runtime tensor even when it is a scalar.
_RUNTIME_SOURCES = frozenset(
    {
        "load",
        "program_id",
        "num_programs",
        "atomic_add",
        "atomic_max",
        "atomic_min",
        "atomic_cas",
        "atomic_xchg",
        "atomic_and",
        "atomic_or",
        "atomic_xor",
        "rand",
        "randn",
        "randint",
        "clock",
        "cycle",
        "globaltimer",
    }
)


# -- shared helpers (data_structures.py uses them too) ------------------------------------------


def _memo(ctx: KernelContext) -> dict[str, Any]:
    """Per-kernel cache shared by the checks of this category and of category C."""
    return ctx.__dict__.setdefault("_control_flow_memo", {})


def _nested_scopes(ctx: KernelContext) -> list[tuple[int, int]]:
    memo = _memo(ctx)
    if "nested_scopes" not in memo:
        memo["nested_scopes"] = [
            (n.start_byte, n.end_byte)
            for n in ctx.nodes(*_SCOPES)
            if n != ctx.kernel.node and ctx.in_body(n)
        ]
    return memo["nested_scopes"]


def in_kernel_scope(ctx: KernelContext, node: Node) -> bool:
    """Whether `node` is in the kernel body and not inside a nested def / lambda / class."""
    if not ctx.in_body(node):
        return False
    return _outside(node.start_byte, node.end_byte, _nested_scopes(ctx))


def _outside(start: int, end: int, scopes: list[tuple[int, int]]) -> bool:
    # `<` on the start: a nested def itself is in the kernel's scope, its contents are not.
    return not any(s < start and end <= e or (s == start and end < e) for s, e in scopes)


def scoped(ctx: KernelContext, *types: str) -> list[Node]:
    """The nodes of these types that `in_kernel_scope` keeps, in order (asked for by most checks:
    one pass per type list and kernel, with the test inlined, as most kernels nest no scope)."""
    memo = _memo(ctx)
    key = "scoped:" + ",".join(types)
    found = memo.get(key)
    if found is None:
        scopes = _nested_scopes(ctx)
        low, high = ctx.body_range
        found = memo[key] = [n for n in ctx.nodes(*types)
                             if low <= (start := n.start_byte) and (end := n.end_byte) <= high
                             and (not scopes or _outside(start, end, scopes))]
    return found


def is_tl(ctx: KernelContext, qualified: str | None, *names: str) -> bool:
    """`is_triton`, also accepting `tl.<name>` when `tl` comes from an import this module cannot
    resolve (a relative `from .compat import tl`)."""
    if ctx.imports.is_triton(qualified, *names):
        return True
    return (
        qualified is not None
        and qualified.startswith("tl.")
        and "tl" not in ctx.imports.names
        and qualified[3:] in names
    )


def is_static_loop(ctx: KernelContext, loop: Node) -> bool:
    """A `for` over `tl.static_range` (unrolled at compile time)."""
    if loop.type != "for_statement":
        return False
    iterator = unparen(loop.child_by_field_name("right"))
    return (
        iterator is not None
        and iterator.type == "call"
        and is_tl(ctx, ctx.call_name(iterator), "static_range")
    )


def _loop_bodies(ctx: KernelContext) -> list[tuple[int, int, Node]]:
    memo = _memo(ctx)
    if "loop_bodies" not in memo:
        bodies = []
        for loop in ctx.nodes("for_statement", "while_statement"):
            body = loop.child_by_field_name("body")
            if body is not None:
                bodies.append((body.start_byte, body.end_byte, loop))
        memo["loop_bodies"] = bodies
    return memo["loop_bodies"]


def enclosing_loops(ctx: KernelContext, node: Node) -> Iterator[Node]:
    """The `for` / `while` statements whose body holds `node`, innermost first, up to the kernel
    or the nearest nested def / lambda / class. Found from byte ranges: walking `.parent` links
    costs a descent from the root per step in tree-sitter."""
    start, end = node.start_byte, node.end_byte
    barrier = max(
        (s for s, e in _nested_scopes(ctx) if s < start and end <= e), default=-1
    )
    loops = [
        (s, loop) for s, e, loop in _loop_bodies(ctx) if s <= start and end <= e and s > barrier
    ]
    for _, loop in sorted(loops, key=lambda item: -item[0]):
        yield loop


def dynamic_loops(ctx: KernelContext) -> Iterator[Node]:
    for loop in scoped(ctx, "for_statement", "while_statement"):
        if not is_static_loop(ctx, loop):
            yield loop


def runtime_params_known(ctx: KernelContext) -> bool:
    """Whether the kernel's unannotated parameters are certainly runtime values. A jit helper
    called from another kernel receives constexpr arguments as constexprs whatever its
    annotations say, so only trust them for entry points: kernels launched or autotuned here, or
    kernels that neither return a value nor are called from another kernel of this module."""
    memo = _memo(ctx)
    if "runtime_params_known" not in memo:
        memo["runtime_params_known"] = _runtime_params_known(ctx)
    return memo["runtime_params_known"]


def _runtime_params_known(ctx: KernelContext) -> bool:
    kernel = ctx.kernel
    if kernel.launches or kernel.autotune is not None or kernel.heuristics_node is not None:
        return True
    if kernel.direct_calls or ctx.is_helper:
        return False
    return not any(r.named_child_count for r in scoped(ctx, "return_statement"))


def is_runtime(ctx: KernelContext, node: Node | None) -> bool:
    """Whether an expression is certainly a runtime tensor (a block, or a scalar that comes from a
    runtime parameter, `tl.load`, `tl.program_id`, ...). Unknown means False."""
    node = unparen(node)
    if node is None:
        return False
    cache: dict[int, bool] = _memo(ctx).setdefault("is_runtime", {})
    if node.id not in cache:
        cache[node.id] = _is_runtime(ctx, node, 0, frozenset())
    return cache[node.id]


def _is_runtime(ctx: KernelContext, node: Node | None, depth: int, seen: frozenset[str]) -> bool:
    node = unparen(node)
    if node is None or depth > 30:
        return False
    kind = node.type
    if kind == "identifier":
        name = text(node)
        if name in ctx.block_names:
            return True
        param = ctx.kernel.param(name)
        if param is not None and name not in ctx.assignments:
            return not param.is_constexpr and runtime_params_known(ctx)
        if name in ctx.assignments and name not in seen and not ctx.is_constexpr_expr(node):
            return any(_is_runtime(ctx, v, depth + 1, seen | {name}) for v in ctx.assignments[name])
        return False
    if kind in (
        "binary_operator",
        "comparison_operator",
        "boolean_operator",
        "unary_operator",
        "not_operator",
    ):
        return any(_is_runtime(ctx, c, depth + 1, seen) for c in node.named_children)
    if kind == "subscript":
        return _is_runtime(
            ctx, node.child_by_field_name("value"), depth + 1, seen
        ) and ctx.is_block(node)
    if kind == "call":
        qualified = ctx.call_name(node)
        if ctx.imports.is_triton(qualified, *_RUNTIME_SOURCES) or ctx.is_block(node):
            return True
        if qualified is not None and qualified.startswith("triton.language"):
            if ctx.imports.is_triton(qualified, "constexpr", "static_range", "cdiv"):
                return False
            positional, keywords = call_args(node)
            return any(_is_runtime(ctx, a, depth + 1, seen) for a in positional) or any(
                _is_runtime(ctx, v, depth + 1, seen)
                for k, (_, v) in keywords.items()
                if k not in ("mask", "other")
            )
        function = node.child_by_field_name("function")
        if (
            function is not None
            and function.type == "attribute"
            and text(function.child_by_field_name("attribute")) == "to"
        ):
            return _is_runtime(ctx, function.child_by_field_name("object"), depth + 1, seen)
    if kind == "attribute":
        return text(node.child_by_field_name("attribute")) == "T" and ctx.is_block(node)
    return False



# -- B1 -------------------------------------------------------------------------------------------


@check("break_continue", needles=(b'break', b'continue'))
def break_continue(ctx: KernelContext) -> Iterator[Hit]:
    for node in scoped(ctx, "break_statement", "continue_statement"):
        word = "break" if node.type == "break_statement" else "continue"
        yield Hit(
            node,
            f"'{word}' is not supported in Triton kernels (in any loop, static_range included)",
        )


# -- B2 -------------------------------------------------------------------------------------------


@check("return_in_loop", needles=(b'return',))
def return_in_loop(ctx: KernelContext) -> Iterator[Hit]:
    for node in scoped(ctx, "return_statement"):
        dynamic = next(
            (loop for loop in enclosing_loops(ctx, node) if not is_static_loop(ctx, loop)), None
        )
        if dynamic is None:
            continue
        what = "while" if dynamic.type == "while_statement" else "for"
        yield Hit(
            node,
            f"'return' inside a dynamic '{what}' loop is not supported",
            related(
                dynamic.children[0] if dynamic.children else dynamic, f"inside this '{what}' loop"
            ),
        )


# -- B3 -------------------------------------------------------------------------------------------


@check("if_block_tensor", needles=(b'if', b'while'))
def if_block_tensor(ctx: KernelContext) -> Iterator[Hit]:
    for node in scoped(
        ctx, "if_statement", "elif_clause", "while_statement", "conditional_expression"
    ):
        if node.type == "conditional_expression":
            named = [c for c in node.named_children if c.type != "comment"]
            condition = named[1] if len(named) == 3 else None
            what = "a conditional expression"
        else:
            condition = node.child_by_field_name("condition")
            what = {"if_statement": "'if'", "elif_clause": "'elif'", "while_statement": "'while'"}[
                node.type
            ]
        if condition is None or not ctx.is_block(condition):
            continue
        yield Hit(condition, f"the condition of {what} is a block tensor, not a scalar")


# -- B4 -------------------------------------------------------------------------------------------

_ITERATORS = ("range", "static_range")


@check("loop_iterator", needles=(b'for',))
def loop_iterator(ctx: KernelContext) -> Iterator[Hit]:
    for loop in scoped(ctx, "for_statement"):
        iterator = unparen(loop.child_by_field_name("right"))
        if iterator is None or iterator.type == "ERROR":
            continue
        if iterator.type == "call":
            qualified = ctx.call_name(iterator)
            if qualified == "range" or is_tl(ctx, qualified, *_ITERATORS):
                continue
            if unsupported_builtin_name(ctx, iterator) is not None:
                continue  # reported as an unsupported builtin (C6)
            function = iterator.child_by_field_name("function")
            if qualified is None or function is None:
                continue
        yield Hit(
            iterator,
            f"a Triton loop can only iterate over range, tl.range or tl.static_range, "
            f"not '{text(iterator)[:60]}'",
        )


# -- B5/B6 ----------------------------------------------------------------------------------------


@check("static_range_runtime", needles=(b'static_range',))
def static_range_runtime(ctx: KernelContext) -> Iterator[Hit]:
    tl = tl_alias(ctx)
    for call in ctx.tl_calls("static_range"):
        if not in_kernel_scope(ctx, call):
            continue
        positional, keywords = call_args(call)
        args = positional + [v for _, (_, v) in keywords.items()]
        for arg in args:
            if ctx.is_constexpr_expr(arg) or not is_runtime(ctx, arg):
                continue
            the_fix = None
            function = call.child_by_field_name("function")
            if function is not None:
                the_fix = fix(f"Use {tl}.range (a dynamic loop)", edit(function, f"{tl}.range"))
            yield Hit(
                arg,
                f"tl.static_range bounds must be tl.constexpr; '{text(arg)}' is a runtime value",
                fix=the_fix,
            )
            break


# -- B7 -------------------------------------------------------------------------------------------


def _statement_of(node: Node) -> Node:
    current = node
    while current.parent is not None and current.parent.type not in ("block", "module"):
        current = current.parent
    return current


def _contains(outer: Node, inner: Node) -> bool:
    return outer.start_byte <= inner.start_byte and inner.end_byte <= outer.end_byte


def _scalar_literal(node: Node | None) -> str | None:
    """'int' / 'float' for a (signed) number literal, else None."""
    node = unparen(node)
    if node is not None and node.type == "unary_operator" and node.named_child_count == 1:
        node = unparen(node.named_children[0])
    if node is None:
        return None
    if node.type == "integer":
        return "int"
    if node.type == "float":
        return "float"
    return None


def _simple_assignments(ctx: KernelContext) -> dict[str, list[Node]]:
    """Assignments and augmented assignments to plain names, by name, in source order."""
    memo = _memo(ctx)
    if "simple_assignments" not in memo:
        out: dict[str, list[Node]] = {}
        for node in scoped(ctx, "assignment", "augmented_assignment"):
            left = node.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                out.setdefault(text(left), []).append(node)
        memo["simple_assignments"] = out
    return memo["simple_assignments"]


def _init_before(ctx: KernelContext, name: str, loop: Node) -> Node | None:
    """The last plain assignment `name = value` before `loop` in a block that contains the loop,
    provided nothing reassigns the name between it and the loop."""
    before = [n for n in _simple_assignments(ctx).get(name, []) if n.end_byte <= loop.start_byte]
    if not before:
        return None
    last = before[-1]
    if last.type != "assignment":
        return None
    block = _statement_of(last).parent
    if block is None or not _contains(block, loop):
        return None  # e.g. assigned in one branch of an `if`: its type at the loop is unknown
    return last


def _float_update(node: Node | None) -> bool:
    node = unparen(node)
    if node is None:
        return False
    if _scalar_literal(node) == "float":
        return True
    return node.type == "binary_operator" and any(
        _scalar_literal(c) == "float" for c in node.named_children
    )


@check("loop_carried_type", needles=(b'for', b'while'))
def loop_carried_type(ctx: KernelContext) -> Iterator[Hit]:
    # What the inferred types show, at the loop's keyword (where the compiler points): any
    # carried value whose type or shape the body changes, literal start or not.
    from .typed import typed_hits

    typed_loops: set[int] = set()
    for hit in typed_hits(ctx, "loop-type"):
        if isinstance(hit.node, Node):
            typed_loops.add(hit.node.start_byte)
        yield hit
    reported: set[int] = set()
    # Only a name that starts as a scalar literal somewhere can change type in a loop: find
    # those first and look at their assignments only.
    simple = _simple_assignments(ctx)
    starts_scalar = [
        name for name, nodes in simple.items()
        if any(n.type == "assignment" and _scalar_literal(n.child_by_field_name("right")) for n in nodes)
    ]
    candidates = sorted((n for name in starts_scalar for n in simple[name]), key=lambda n: n.start_byte)
    for node in candidates:
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if (
            left is None
            or right is None
            or left.type != "identifier"
            or ctx.kernel.param(text(left))
        ):
            continue
        loops = [lp for lp in enclosing_loops(ctx, node) if not is_static_loop(ctx, lp)]
        if not loops:
            continue
        name = text(left)
        block: bool | None = None  # computed only when a scalar-literal start makes it matter
        for loop in loops:
            init = _init_before(ctx, name, loop)
            if init is None:
                continue
            init_kind = _scalar_literal(init.child_by_field_name("right"))
            if init_kind is None:
                continue
            if block is None:
                block = ctx.is_block(right)
            new = None
            if block:
                new = "a block tensor"
            elif init_kind == "int" and _float_update(right):
                new = "a float"
            if new is None or init.start_byte in reported or loop.start_byte in typed_loops:
                continue
            reported.add(init.start_byte)
            init_value = init.child_by_field_name("right")
            tl = tl_alias(ctx)
            yield Hit(
                node,
                f"'{name}' starts as a scalar {init_kind} ({text(init_value)}) but becomes {new} in "
                "this loop; a loop-carried variable must keep its type and shape",
                related(
                    init,
                    f"'{name}' is initialised here; use e.g. {tl}.zeros([...], {tl}.float32)"
                    if new == "a block tensor"
                    else f"'{name}' is initialised here; use a float, e.g. 0.0",
                ),
            )


# -- B8 -------------------------------------------------------------------------------------------


@check("constexpr_reassigned_in_loop", needles=(b'for', b'while'))
def constexpr_reassigned_in_loop(ctx: KernelContext) -> Iterator[Hit]:
    for node in scoped(ctx, "assignment", "augmented_assignment"):
        left = node.child_by_field_name("left")
        if left is None or left.type != "identifier":
            continue
        param = ctx.kernel.param(text(left))
        if param is None or not param.is_constexpr:
            continue
        loop = next((lp for lp in enclosing_loops(ctx, node) if not is_static_loop(ctx, lp)), None)
        if loop is None:
            continue
        yield Hit(
            node,
            f"the tl.constexpr parameter '{param.name}' is reassigned inside a dynamic loop",
            related(param.node, f"'{param.name}' is declared tl.constexpr here"),
        )


# -- B11 ------------------------------------------------------------------------------------------


@check("loop_else", needles=(b'else',))
def loop_else(ctx: KernelContext) -> Iterator[Hit]:
    for loop in scoped(ctx, "for_statement", "while_statement"):
        alternative = loop.child_by_field_name("alternative")
        if alternative is None:
            continue
        keyword = alternative.children[0] if alternative.children else alternative
        what = "while" if loop.type == "while_statement" else "for"
        yield Hit(keyword, f"'{what} ... else' is not supported in Triton kernels")


# -- B12 ------------------------------------------------------------------------------------------

_ORDERINGS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_SIMPLE = frozenset(
    {
        "identifier",
        "integer",
        "float",
        "attribute",
        "call",
        "subscript",
        "parenthesized_expression",
        "true",
        "false",
        "none",
        "string",
    }
)


def _wrapped(node: Node) -> str:
    return text(node) if node.type in _SIMPLE else f"({text(node)})"


@check("chained_comparison")
def chained_comparison(ctx: KernelContext) -> Iterator[Hit]:
    for node in scoped(ctx, "comparison_operator"):
        operators = node.children_by_field_name("operators")
        if len(operators) < 2:
            continue
        operands = [c for c in node.named_children if c.type != "comment"]
        the_fix = None
        if len(operands) == len(operators) + 1 and all(text(op) in _ORDERINGS for op in operators):
            parts = [
                f"({_wrapped(a)} {text(op)} {_wrapped(b)})"
                for a, op, b in zip(operands, operators, operands[1:])
            ]
            the_fix = fix("Split into comparisons joined with &", edit(node, " & ".join(parts)))
        yield Hit(
            node,
            "chained comparisons are not supported before Triton 3.9; split them and join with &",
            fix=the_fix,
        )


# -- B13 ------------------------------------------------------------------------------------------


def _boolean_parent(node: Node) -> Node | None:
    parent = node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        parent = parent.parent
    return parent if parent is not None and parent.type == "boolean_operator" else None


def _boolean_leaves(node: Node, limit: int = 64) -> list[Node] | None:
    """The operands of a tree of `and`/`or`, left to right; None past `limit` of them."""
    out: list[Node] = []
    stack = [node]
    while stack:
        current = unparen(stack.pop()) or node
        if current.type == "boolean_operator":
            right, left = current.child_by_field_name("right"), current.child_by_field_name("left")
            stack.extend(c for c in (right, left) if c is not None)
        else:
            out.append(current)
            if len(out) > limit:
                return None
    return out


def _bitwise(node: Node, top: bool = False) -> str:
    """`a and (b or c)` -> `a & (b | c)`, with every comparison or `not` operand parenthesised."""
    inner = unparen(node) or node
    if inner.type != "boolean_operator":
        return _wrapped(node)
    operator = inner.child_by_field_name("operator")
    left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
    if operator is None or left is None or right is None:
        return text(node) if top else f"({text(node)})"
    symbol = "&" if text(operator) == "and" else "|"
    result = f"{_bitwise(left)} {symbol} {_bitwise(right)}"
    return result if top else f"({result})"


@check("boolop_on_blocks")
def boolop_on_blocks(ctx: KernelContext) -> Iterator[Hit]:
    for node in scoped(ctx, "boolean_operator"):
        if _boolean_parent(node) is not None:
            continue  # reported at the outermost `and`/`or`
        leaves = _boolean_leaves(node)
        if leaves is None or len(leaves) < 2 or not all(ctx.is_block(leaf) for leaf in leaves):
            continue
        replacement = _bitwise(node, top=True)
        yield Hit(
            node,
            "'and'/'or' on block tensors is deprecated (element-wise logical_and/or); use '&' / '|'",
            fix=fix("Use & and |", edit(node, replacement)),
        )


# -- B14 ------------------------------------------------------------------------------------------


@check("try_statement", needles=(b'try',))
def try_statement(ctx: KernelContext) -> Iterator[Hit]:
    for node in scoped(ctx, "try_statement"):
        keyword = node.children[0] if node.children else node
        yield Hit(
            keyword,
            "'try' is not supported in Triton kernels (there are no exceptions on the device)",
        )


@check("lambda_expression", needles=(b'lambda',))
def lambda_expression(ctx: KernelContext) -> Iterator[Hit]:
    for node in scoped(ctx, "lambda"):
        yield Hit(node, "'lambda' is not supported in Triton kernels")


@check("nested_function")
def nested_function(ctx: KernelContext) -> Iterator[Hit]:
    for node in scoped(ctx, "function_definition"):
        name = node.child_by_field_name("name")
        yield Hit(
            name if name is not None else node,
            f"nested function '{text(name)}' is not allowed inside a @triton.jit kernel",
        )


@check("with_statement", needles=(b'with',))
def with_statement(ctx: KernelContext) -> Iterator[Hit]:
    old = ctx.version is not None and ctx.version < (3, 4)
    for node in scoped(ctx, "with_item"):
        value = node.child_by_field_name("value")
        if value is not None and value.type == "as_pattern":
            value = next((c for c in value.named_children if c.type != "as_pattern_target"), None)
        value = unparen(value)
        if value is None:
            continue
        if not old and value.type == "call":
            qualified = ctx.call_name(value)
            if qualified is None or qualified.startswith("triton."):
                continue  # a Triton context manager (3.4+)
        what = (
            "'with' is not supported before Triton 3.4"
            if old
            else (
                f"'with {text(value)[:40]}' is not a Triton context manager; only Triton's own (3.4+) can be used in a kernel"
            )
        )
        yield Hit(value, what)


@check("walrus", needles=(b':=',))
def walrus(ctx: KernelContext) -> Iterator[Hit]:
    for node in scoped(ctx, "named_expression"):
        yield Hit(node, "the walrus operator ':=' is not supported before Triton 3.9")
