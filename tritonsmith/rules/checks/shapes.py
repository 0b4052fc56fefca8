"""Category A: shapes, `tl.constexpr` and globals (catalogue A1-A14)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tree_sitter import Node

from ...analysis.syntax import string_value, text, unparen, walk
from ...analysis.values import UNKNOWN, evaluate, is_power_of_two
from ..context import KernelContext, Scenario
from ..findings import Related, Span
from .builtins import local_names
from .registry import Hit, check, edit, fix, related

MAX_NUMEL = 1 << 20


def tl_alias(ctx: KernelContext) -> str:
    """How this module spells `triton.language` (for the text of fixes)."""
    for local, qualified in ctx.imports.names.items():
        if qualified == "triton.language":
            return local
    return "triton.language" if "triton" in ctx.imports.names else "tl"


def _origin_related(scenario: Scenario, names: set[str]) -> list[Related]:
    """Point at the Config entry or launch keyword that gave the offending values."""
    out = []
    for name in sorted(names):
        source = scenario.sources.get(name)
        if source is not None and scenario.origin is not None:
            out.append(Related(Span.of(source), f"{name} = {text(source)} comes from {scenario.label}"))
    return out


def _names_in(node: Node) -> set[str]:
    if node.type == "identifier":
        return {text(node)}
    out: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            out.add(text(current))
        stack.extend(current.named_children)
    return out


def _origin_hits(
    ctx: KernelContext, scenario: Scenario, names: set[str], at: Node, message: str, the_fix: Any = None,
) -> Iterator[Hit]:
    """A second finding on the Config value or launch keyword itself, pointing back at the use
    (with the primary's fix, so it is offered at either place)."""
    if scenario.origin is None:
        return
    for name in sorted(names):
        source = scenario.sources.get(name)
        if source is not None and not ctx.in_body(source):
            yield Hit(source, message, related(at, "used here"), the_fix, secondary=True)


@check("arange_pow2", needles=(b'arange',))
def arange_pow2(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.tl_calls("arange"):
        start = ctx.arg(call, 0, "start")
        end = ctx.arg(call, 1, "end")
        if start is None or end is None:
            continue
        for lo, hi, scenario in _bounds(ctx, start, end):
            if not isinstance(lo, int) or not isinstance(hi, int) or hi <= lo:
                continue
            size = hi - lo
            if is_power_of_two(size):
                continue
            names = _names_in(start) | _names_in(end)
            given = ", ".join(f"{n}={scenario.env[n]}" for n in sorted(names) if n in scenario.sources)
            where = f" with {given} from {scenario.label}" if scenario.origin is not None and given else ""
            message = f"tl.arange range {size} ({lo}..{hi}) is not a power of 2{where}"
            the_fix = _round_up_fix(ctx, scenario, start, end, lo, size)
            yield Hit(call, message, _origin_related(scenario, names), the_fix)
            yield from _origin_hits(
                ctx, scenario, names, call,
                f"{given} makes {text(call)} span {size} elements, which is not a power of 2", the_fix,
            )


def _round_up_fix(ctx: KernelContext, scenario: Scenario, start: Node, end: Node, lo: int, size: int) -> Any:
    """`BLOCK=1000` at a launch (or in a Config) as the next power of 2, for `tl.arange(0,
    BLOCK)`: the literal that gave the block, and the same literal in the launch grid's
    `cdiv(..., 1000)` so the grid still covers the data once. Offered only where every load and
    store of the kernel is masked, as the extra lanes must be."""
    end = unparen(end) or end
    if lo != 0 or text(start) != "0" or end.type != "identifier" or scenario.origin is None:
        return None
    source = scenario.sources.get(text(end))
    if source is None or source.type != "integer" or ctx.in_body(source):
        return None
    masks = [ctx.arg(c, 1, "mask") for c in ctx.tl_calls("load")] + [ctx.arg(c, 2, "mask") for c in ctx.tl_calls("store")]
    if None in masks:
        return None
    rounded = 1 << (size - 1).bit_length()
    edits = [edit(source, str(rounded))]
    site = next((site for site in ctx.kernel.launches if site.node == scenario.origin), None)
    if site is not None and site.grid is not None:
        for call in walk(site.grid):
            if call.type == "call" and text(call.child_by_field_name("function")).rsplit(".", 1)[-1] == "cdiv":
                _, keywords = ctx.args(call)
                positional = [a for a in (call.child_by_field_name("arguments") or call).named_children
                              if a.type != "comment"]
                if len(positional) == 2 and not keywords and positional[1].type == "integer" \
                        and text(positional[1]) == text(source):
                    edits.append(edit(positional[1], str(rounded)))
    return fix(f"Round {text(end)} up to {rounded} (the next power of 2; the masks cover the extra lanes)", *edits)


def _shape_args(ctx: KernelContext) -> Iterator[tuple[Node, Node]]:
    """(call, shape-element) pairs for every shape-taking call: arange bounds and the elements
    of `tl.zeros` / `tl.full` shapes."""
    for call in ctx.tl_calls("arange"):
        for position, name in ((0, "start"), (1, "end")):
            arg = ctx.arg(call, position, name)
            if arg is not None:
                yield call, arg
    for call in ctx.tl_calls("zeros", "full"):
        shape = unparen(ctx.arg(call, 0, "shape"))
        if shape is not None and shape.type in ("tuple", "list"):
            for element in shape.named_children:
                if element.type != "comment":
                    yield call, element


@check("arange_constexpr", needles=(b'arange', b'zeros', b'full'))
def arange_constexpr(ctx: KernelContext) -> Iterator[Hit]:
    """A runtime parameter used as a block size: the classic missing `tl.constexpr`."""
    if ctx.is_helper:
        return
    flagged: set[str] = set()
    tl = tl_alias(ctx)
    for call, arg in _shape_args(ctx):
        for ident in [arg] if arg.type == "identifier" else [n for n in walk(arg) if n.type == "identifier"]:
            name = text(ident)
            param = ctx.kernel.param(name)
            if param is None or param.is_constexpr or name in ctx.assignments:
                continue
            if param.annotation is not None:
                annotation_node = param.node.parent.child_by_field_name("type") if param.node.parent else None
                the_fix = fix(
                    f"Annotate '{name}' as {tl}.constexpr",
                    edit(annotation_node, f"{tl}.constexpr"),
                ) if annotation_node is not None else None
            else:
                the_fix = fix(f"Annotate '{name}' as {tl}.constexpr", edit(Span.at(param.node, end=True), f": {tl}.constexpr"))
            yield Hit(
                ident,
                f"'{name}' is used as a block shape in {text(call.child_by_field_name('function'))}() "
                f"but is not annotated {tl}.constexpr",
                related(param.node, f"'{name}' is declared here without {tl}.constexpr"),
                the_fix,
            )
            if name not in flagged:
                flagged.add(name)



@check("arange_order", needles=(b'arange',))
def arange_order(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.tl_calls("arange"):
        start, end = ctx.arg(call, 0, "start"), ctx.arg(call, 1, "end")
        if start is None or end is None:
            continue
        for (lo, hi), scenario in _pairs(ctx, start, end):
            if hi <= lo:
                yield Hit(call, f"tl.arange end ({hi}) must be greater than its start ({lo})",
                          _origin_related(scenario, _names_in(start) | _names_in(end)))
                break


def _bounds(ctx: KernelContext, a: Node, b: Node) -> list[tuple[Any, Any, Scenario]]:
    """`a` and `b` folded in each scenario, in order. Three checks fold the same `tl.arange`
    bounds in every scenario: fold them once per kernel."""
    memo = ctx.__dict__.setdefault("_shapes_bounds", {})
    key = (a.id, b.id)
    bounds: list[tuple[Any, Any, Scenario]] | None = memo.get(key)
    if bounds is None:
        bounds = []
        for scenario in ctx.scenarios():
            env = ctx.local_env(scenario)
            bounds.append((evaluate(a, env, ctx.qualify), evaluate(b, env, ctx.qualify), scenario))
        memo[key] = bounds
    return bounds


def _pairs(ctx: KernelContext, a: Node, b: Node) -> Iterator[tuple[tuple[int, int], Scenario]]:
    for lo, hi, scenario in _bounds(ctx, a, b):
        if isinstance(lo, int) and isinstance(hi, int):
            yield (lo, hi), scenario


@check("arange_signature", needles=(b'arange',))
def arange_signature(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.tl_calls("arange"):
        positional, keywords = ctx.args(call)
        count = len(positional) + sum(1 for k in keywords if k in ("start", "end"))
        if count == 1:
            only = positional[0] if positional else None
            the_fix = fix("Use tl.arange(0, end)", edit(only, f"0, {text(only)}")) if only is not None else None
            yield Hit(call, "tl.arange takes (start, end); a single argument is not its end", fix=the_fix)
        elif len(positional) > 2:
            yield Hit(call, "tl.arange has no step argument: use tl.arange(start, end) * step")


def _shape_elements(ctx: KernelContext, call: Node, position: int, name: str) -> list[Node]:
    shape = unparen(ctx.arg(call, position, name))
    if shape is None or shape.type not in ("tuple", "list"):
        return []
    return [e for e in shape.named_children if e.type != "comment"]


def _block_shapes(ctx: KernelContext) -> Iterator[tuple[Node, list[Node]]]:
    for call in ctx.tl_calls("zeros", "full"):
        yield call, _shape_elements(ctx, call, 0, "shape")
    for call in ctx.tl_calls("reshape"):
        yield call, _shape_elements(ctx, call, 1, "shape")
    for call in ctx.tl_calls("make_block_ptr"):
        yield call, _shape_elements(ctx, call, 4, "block_shape")


@check("shape_pow2", needles=(b'zeros', b'full', b'reshape', b'make_block_ptr'))
def shape_pow2(ctx: KernelContext) -> Iterator[Hit]:
    for _call, elements in _block_shapes(ctx):
        for index, element in enumerate(elements):
            for value, scenario in ctx.values(element):
                if isinstance(value, int) and not isinstance(value, bool) and not is_power_of_two(value):
                    where = f" ({scenario.label})" if scenario.origin is not None else ""
                    yield Hit(element, f"block shape element {index} is {value}, not a power of 2{where}",
                              _origin_related(scenario, _names_in(element)))
                    break


@check("shape_sequence", needles=(b'zeros', b'full'))
def shape_sequence(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.tl_calls("zeros", "full"):
        shape = unparen(ctx.arg(call, 0, "shape"))
        if shape is None or shape.type in ("tuple", "list"):
            continue
        if shape.type == "identifier":
            name = text(shape)
            values = ctx.assignments.get(name, [])
            if any(unparen(v) is not None and unparen(v).type in ("tuple", "list") for v in values):  # type: ignore[union-attr]
                continue
            if ctx.kernel.param(name) is None and not values:
                continue  # unknown origin (a global or a helper's argument): stay quiet
        elif shape.type not in ("integer", "binary_operator"):
            continue
        yield Hit(shape, f"the shape of {text(call.child_by_field_name('function'))}() must be a tuple or list, "
                  f"not {text(shape)}", fix=fix("Wrap the shape in a tuple", edit(shape, f"({text(shape)},)")))


@check("max_numel", needles=(b'zeros', b'full', b'reshape', b'make_block_ptr', b'arange'))
def max_numel(ctx: KernelContext) -> Iterator[Hit]:
    for call, elements in _block_shapes(ctx):
        if not elements:
            continue
        for scenario in ctx.scenarios():
            env = ctx.local_env(scenario)
            values = [evaluate(e, env, ctx.qualify) for e in elements]
            if all(isinstance(v, int) for v in values):
                numel = 1
                for v in values:
                    numel *= v
                if numel > MAX_NUMEL:
                    yield Hit(call, f"this block has {numel} elements; Triton allows at most {MAX_NUMEL}")
                    break
    for call in ctx.tl_calls("arange"):
        start, end = ctx.arg(call, 0, "start"), ctx.arg(call, 1, "end")
        if start is None or end is None:
            continue
        for (lo, hi), _ in _pairs(ctx, start, end):
            if hi - lo > MAX_NUMEL:
                yield Hit(call, f"this tl.arange has {hi - lo} elements; Triton allows at most {MAX_NUMEL}")
                break


_DTYPE_NAMES = {
    "float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16", "float64": "float64", "fp64": "float64",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
    "uint32": "uint32", "int1": "int1", "bool": "int1", "float": "float32", "int": "int32",
}


@check("dtype_argument", needles=(b'zeros', b'full', b'cast', b'.to'))
def dtype_argument(ctx: KernelContext) -> Iterator[Hit]:
    tl = tl_alias(ctx)
    candidates: list[tuple[Node, Node | None, str]] = []
    for call in ctx.tl_calls("zeros"):
        candidates.append((call, ctx.arg(call, 1, "dtype"), "tl.zeros"))
    for call in ctx.tl_calls("full"):
        candidates.append((call, ctx.arg(call, 2, "dtype"), "tl.full"))
    for call in ctx.tl_calls("cast"):
        candidates.append((call, ctx.arg(call, 1, "dtype"), "tl.cast"))
    for call, _, _ in ctx.method_calls("to"):
        candidates.append((call, ctx.arg(call, 0, "dtype"), ".to"))
    for call, dtype, what in candidates:
        if dtype is None:
            if what in ("tl.zeros", "tl.full"):
                yield Hit(call, f"{what}() needs a dtype, e.g. {tl}.float32")
            continue
        value = string_value(dtype)
        if value is None:
            continue
        proper = _DTYPE_NAMES.get(value.lower())
        the_fix = fix(f"Use {tl}.{proper}", edit(dtype, f"{tl}.{proper}")) if proper else None
        yield Hit(dtype, f"dtype must be a tl.dtype such as {tl}.{proper or 'float32'}, not the string {text(dtype)}",
                  fix=the_fix)


_DTYPES = frozenset(set(_DTYPE_NAMES.values()) | {"float8e4nv", "float8e5", "float8e4b15", "uint16", "uint64"})


@check("dtype_call")
def dtype_call(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.nodes("call"):
        name = ctx.call_name(call)
        if name is None or not name.startswith("triton.language."):
            continue
        dtype = name.rsplit(".", 1)[-1]
        if dtype not in _DTYPES or not ctx.in_body(call):
            continue
        positional, keywords = ctx.args(call)
        if len(positional) != 1 or keywords:
            continue
        function = call.child_by_field_name("function")
        arg = positional[0]
        if not _python_number(ctx, arg):
            arg_text = text(arg) if arg.type in ("identifier", "attribute", "call", "subscript",
                                                 "parenthesized_expression") else f"({text(arg)})"
            the_fix = fix(f"Use .to({text(function)})", edit(call, f"{arg_text}.to({text(function)})"))
        else:
            # A Python number (`tl.float32(-float("inf"))`), or what may be one, has no `.to`:
            # tl.cast turns it into a tensor of that dtype first, and casts a tensor as `.to` does.
            cast = f"{tl_alias(ctx)}.cast"
            the_fix = fix(f"Use {cast}(x, {text(function)})", edit(call, f"{cast}({text(arg)}, {text(function)})"))
        how = the_fix.title[len("Use "):] if the_fix.title.startswith("Use ") else f"x.to({text(function)})"
        yield Hit(call, f"{text(function)}(x) is not a cast: use {how}", fix=the_fix)


_NUMBER_CALLS = frozenset({"float", "int", "bool", "abs", "min", "max", "round"})


def _python_number(ctx: KernelContext, node: Node) -> bool:
    """Whether `node` is (or may be) a Python number rather than a tensor: built from
    literals, `float("inf")`-style calls and constexprs, or inferred a constexpr or literal."""
    node = unparen(node) or node
    if node.type in ("integer", "float", "true", "false") or ctx.is_constexpr_expr(node):
        return True
    if node.type == "unary_operator":
        return _python_number(ctx, node.named_children[-1])
    if node.type == "binary_operator":
        return all(_python_number(ctx, c) for c in node.named_children if c.type != "comment")
    if node.type == "call" and text(node.child_by_field_name("function")) in _NUMBER_CALLS:
        return True
    return any(v.constexpr or v.weak for v in ctx.inferred(node))


@check("global_not_constexpr")
def global_not_constexpr(ctx: KernelContext) -> Iterator[Hit]:
    locals_ = local_names(ctx)
    reported: set[str] = set()
    body = (ctx.kernel.body.text if ctx.kernel.body is not None else b"") or b""
    words = set(re.findall(rb"[A-Za-z_]\w*", body))  # one C-level pass instead of a walk
    candidates = [n for n in ctx.module.globals if n.encode() in words and n not in locals_]
    if not candidates:
        return
    for ident in sorted((i for n in candidates for i in ctx.identifiers.get(n, [])), key=lambda i: i.start_byte):
        name = text(ident)
        if name in reported or not ctx.in_body(ident):
            continue
        if name in ctx.module.functions or name in ctx.imports.names:
            continue
        parent = ident.parent
        if parent is not None and parent.type in ("keyword_argument",) and parent.child_by_field_name("name") == ident:
            continue
        if parent is not None and parent.type == "attribute" and parent.child_by_field_name("attribute") == ident:
            continue
        value = unparen(ctx.module.globals[name])
        if value is None:
            continue
        assignment = value.parent if value.type != "assignment" else value
        annotated = assignment is not None and assignment.type == "assignment" and assignment.child_by_field_name("type") is not None
        if value.type == "call" and ctx.imports.is_triton(ctx.call_name(value), "constexpr"):
            continue
        if annotated and ctx.version is not None and ctx.version < (3, 3):
            continue  # `G: tl.constexpr = 1` was accepted before 3.3
        if value.type not in ("integer", "float", "string", "true", "false", "list", "tuple", "dictionary",
                              "binary_operator", "unary_operator", "assignment"):
            continue
        reported.add(name)
        tl = tl_alias(ctx)
        global_value = text(value) if value.type != "assignment" else None
        the_fix = None
        if global_value is not None and value.type in ("integer", "float", "string", "true", "false",
                                                        "binary_operator", "unary_operator"):
            the_fix = fix(f"Define {name} as {tl}.constexpr({global_value})",
                          edit(value, f"{tl}.constexpr({global_value})"))
        yield Hit(ident, f"kernel reads the global '{name}', which is not a {tl}.constexpr",
                  related(value, f"'{name}' is defined here"), the_fix)


# A value's type, shape and element count are known when compiling even when the value is not:
# `x.dtype.primitive_bitwidth`, `x.numel >> n`, `len(x.shape) - 1`, `ptr.type.element_ty`.
_COMPILE_TIME_ATTRS = frozenset({"shape", "numel", "dtype", "type", "element_ty", "primitive_bitwidth", "ndim",
                                 "is_floating", "is_int", "is_int_signed", "is_fp8", "is_fp16", "is_bf16",
                                 "is_fp32", "is_fp64", "scalar", "int_bitwidth", "fp_mantissa_width"})


def _compile_time_use(identifier: Node) -> bool:
    """Whether `identifier` is only read for its type or shape (`x.shape`, `x.dtype.…`)."""
    parent = identifier.parent
    if parent is None or parent.type != "attribute" or parent.child_by_field_name("object") != identifier:
        return False
    attribute = parent.child_by_field_name("attribute")
    return attribute is not None and text(attribute) in _COMPILE_TIME_ATTRS


def _compile_time_only(ctx: KernelContext, value: Node) -> bool:
    """Whether every name in `value` that is not a call's function is read for its type or shape
    only, or is a constexpr, and at least one is read for its type or shape (so the value is a
    compile-time function of types and shapes)."""
    names = [n for n in walk(value) if n.type == "identifier"]
    data = [n for n in names if not _function_position(n) and not _attribute_name(n)]
    return bool(data) and any(_compile_time_use(n) for n in data) and \
        all(_compile_time_use(n) or ctx.is_constexpr_name(text(n)) or _is_constant_name(n) or
            (n.parent is not None and n.parent.type == "keyword_argument") for n in data)


def _function_position(node: Node) -> bool:
    current = node
    while current.parent is not None and current.parent.type == "attribute" and \
            current.parent.child_by_field_name("object") == current:
        current = current.parent
    parent = current.parent
    return parent is not None and parent.type == "call" and parent.child_by_field_name("function") == current


def _attribute_name(node: Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type == "attribute" and parent.child_by_field_name("attribute") == node


def _is_constant_name(node: Node) -> bool:
    """`tl`, `None`-like module names and upper-case constants are not data."""
    name = text(node)
    return name in ("tl", "triton", "None", "True", "False") or name.isupper()


@check("static_assert_runtime", needles=(b'static_assert',))
def static_assert_runtime(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.tl_calls("static_assert"):
        condition = ctx.arg(call, 0, "cond")
        if condition is None:
            continue
        runtime = [n for n in walk(condition) if n.type == "identifier" and ctx.is_runtime_param(n)
                   and not _compile_time_use(n)]
        if runtime:
            yield Hit(condition, f"tl.static_assert needs a constexpr condition; '{text(runtime[0])}' is a "
                      "runtime value (use tl.device_assert, or make it tl.constexpr)")


@check("local_constexpr_runtime", needles=(b'constexpr',))
def local_constexpr_runtime(ctx: KernelContext) -> Iterator[Hit]:
    for node in ctx.nodes("assignment"):
        annotation = node.child_by_field_name("type")
        value = node.child_by_field_name("right")
        if annotation is None or value is None or not text(annotation).endswith("constexpr"):
            continue
        if ctx.is_constexpr_expr(value) or evaluate(value, {}, ctx.qualify) is not UNKNOWN:
            continue
        if _compile_time_only(ctx, value):
            continue
        runtime = [n for n in walk(value) if n.type == "identifier" and ctx.is_runtime_param(n)]
        if runtime or ctx.is_block(value) or any(
            ctx.imports.is_triton(ctx.call_name(c), "load", "program_id") for c in walk(value) if c.type == "call"
        ):
            yield Hit(node, "this local is annotated tl.constexpr but its value is only known at run time; "
                      "the annotation is not enforced and later shape uses will fail")
