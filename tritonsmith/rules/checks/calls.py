"""Category D: calls, functions and kernels (catalogue D1-D8).

Several checks here ask whether a value is only known at run time (a `tl.tensor` while the
kernel is traced) rather than a constexpr. `runtime(ctx)` answers that with a forward taint:
non-constexpr parameters of a kernel that is launched (or that nothing else in the file calls),
`tl.program_id`, `tl.load`, `tl.arange`, ... and every local assigned from them. Parameters of
a jit helper called by another jit function may receive constexprs, so they are not tainted.
Unknown means "not runtime": an error-level check must not guess.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator

from tree_sitter import Node

from ...analysis.syntax import call_args, text, unparen, walk
from ..context import KernelContext
from .registry import Hit, check, edit, fix
from .shapes import tl_alias

__all__ = ["Runtime", "is_launched", "runtime"]

# tl calls whose result is a run-time tensor whatever their arguments.
_RUNTIME_SOURCES = frozenset(
    {
        "program_id",
        "num_programs",
        "load",
        "arange",
        "zeros",
        "zeros_like",
        "full",
        "full_like",
        "rand",
        "randn",
        "randint",
        "randint4x",
        "rand4x",
        "randn4x",
        "atomic_add",
        "atomic_max",
        "atomic_min",
        "atomic_and",
        "atomic_or",
        "atomic_xor",
        "atomic_xchg",
        "atomic_cas",
        "make_block_ptr",
        "advance",
        "load_tensor_descriptor",
        "inline_asm_elementwise",
        "dot",
        "dot_scaled",
    }
)
# Attributes of a tensor that are compile-time values.
_CONSTEXPR_ATTRS = frozenset(
    {
        "shape",
        "dtype",
        "numel",
        "type",
        "element_ty",
        "ndim",
        "primitive_bitwidth",
        "block_shape",
        "value",
    }
)
# Builtins whose result is a Python value whatever they are applied to.
_STATIC_BUILTINS = frozenset(
    {"len", "isinstance", "type", "getattr", "hasattr", "print", "str", "repr"}
)


def is_launched(ctx: KernelContext) -> bool:
    """Whether the function is certainly a kernel (launched here, autotuned or with heuristics),
    so that its non-constexpr parameters are scalars and pointers, never blocks or constexprs."""
    kernel = ctx.kernel
    return bool(kernel.launches or kernel.autotune is not None or kernel.heuristics)


def _is_upper(name: str) -> bool:
    return any(c.isalpha() for c in name) and name == name.upper()


class Runtime:
    """Which names and expressions of one kernel hold run-time values."""

    def __init__(self, ctx: KernelContext) -> None:
        self.ctx = ctx
        self.params = self._runtime_params()
        self.names = self._runtime_locals()

    def _runtime_params(self) -> set[str]:
        ctx = self.ctx
        kernel = ctx.kernel
        if any(
            p.node.parent is not None
            and p.node.parent.type in ("list_splat_pattern", "dictionary_splat_pattern")
            for p in kernel.params
        ):
            return set()
        meta: set[str] = set(kernel.heuristics)
        if kernel.autotune is not None:
            for config in kernel.autotune.configs:
                meta |= set(config.values)
        candidates = {p.name for p in kernel.params if not p.is_constexpr and p.name not in meta}
        if is_launched(ctx):
            return candidates
        # Called from a jit function's body (the index's answer: on an index carried across an
        # edit it searches the text, where reading every body would re-read every kernel).
        if ctx.module.callers_of(kernel.name) or not any(ctx.tl_calls("program_id")):
            return set()  # a helper: its callers may pass constexprs (or tensors)
        # Neither launched nor called here but reading its program id: a kernel launched from
        # another file. Upper-case names and shape arguments are constexprs by convention.
        shapes: set[str] = set()
        for call in ctx.tl_calls("arange", "zeros", "full", "static_range"):
            for node in walk(call.child_by_field_name("arguments")):
                if node.type == "identifier":
                    shapes.add(text(node))
        return {n for n in candidates if not _is_upper(n) and n not in shapes}

    def _runtime_locals(self) -> set[str]:
        names: set[str] = set()
        loops = self._loop_targets()
        for _ in range(4):
            before = len(names)
            self.names = names
            for name, values in self.ctx.assignments.items():
                if name not in names and any(self.is_runtime(v) for v in values):
                    names.add(name)
            for name, iterable in loops:
                if name not in names and self._loop_is_runtime(iterable):
                    names.add(name)
            if len(names) == before:
                break
        return names

    def _loop_targets(self) -> list[tuple[str, Node]]:
        out = []
        for loop in self.ctx.nodes("for_statement"):
            left, right = loop.child_by_field_name("left"), loop.child_by_field_name("right")
            if left is not None and left.type == "identifier" and right is not None:
                out.append((text(left), right))
        return out

    def _loop_is_runtime(self, loop_iterable: Node) -> bool:
        iterable = unparen(loop_iterable)
        if iterable is None or iterable.type != "call":
            return False
        name = self.ctx.call_name(iterable)
        if name == "range" or self.ctx.imports.is_triton(name, "range"):
            return True  # an scf.for induction variable, whatever the bounds
        if self.ctx.imports.is_triton(name, "static_range"):
            positional, _ = call_args(iterable)
            return any(self.is_runtime(a) for a in positional)
        return False

    def is_runtime(self, node: Node | None, depth: int = 0) -> bool:
        node = unparen(node)
        if node is None or depth > 40:
            return False
        kind = node.type
        if kind == "identifier":
            name = text(node)
            return name in self.names or name in self.params
        if kind in (
            "binary_operator",
            "comparison_operator",
            "boolean_operator",
            "unary_operator",
            "not_operator",
            "conditional_expression",
        ):
            if kind == "conditional_expression":
                children = node.named_children[:2]  # the condition picks, it is not the value
                return any(self.is_runtime(c, depth + 1) for c in children)
            return any(self.is_runtime(c, depth + 1) for c in node.named_children)
        if kind == "subscript":
            return self.is_runtime(node.child_by_field_name("value"), depth + 1)
        if kind == "attribute":
            if text(node.child_by_field_name("attribute")) in _CONSTEXPR_ATTRS:
                return False
            return self.is_runtime(node.child_by_field_name("object"), depth + 1)
        if kind == "call":
            name = self.ctx.call_name(node) or ""
            positional, keywords = call_args(node)
            arguments = positional + [v for _, v in keywords.values()]
            if self.ctx.imports.is_triton(name, *_RUNTIME_SOURCES):
                return True
            if name in _STATIC_BUILTINS or self.ctx.imports.is_triton(
                name, "constexpr", "static_range"
            ):
                return False
            function = node.child_by_field_name("function")
            # A method, `x.to(...)` or `x.sum()`, is run-time when its object is.
            if (
                function is not None
                and function.type == "attribute"
                and not (name or "").startswith(("triton", "math", "torch", "numpy"))
                and self.is_runtime(function.child_by_field_name("object"), depth + 1)
            ):
                return True
            return any(self.is_runtime(a, depth + 1) for a in arguments)
        return False


_RUNTIMES: weakref.WeakKeyDictionary[KernelContext, Runtime] = weakref.WeakKeyDictionary()


def runtime(ctx: KernelContext) -> Runtime:
    """The (cached) run-time taint of one kernel."""
    found = _RUNTIMES.get(ctx)
    if found is None:
        found = Runtime(ctx)
        _RUNTIMES[ctx] = found
    return found



def _local_names(ctx: KernelContext) -> set[str]:
    """Names bound inside the kernel: parameters, assignments, loop targets, imports."""
    names = set(ctx.assignments) | {p.name for p in ctx.kernel.params}
    for loop in ctx.nodes("for_statement"):
        names |= {
            text(n) for n in walk(loop.child_by_field_name("left")) if n.type == "identifier"
        }
    for node in ctx.nodes("assignment"):
        left = node.child_by_field_name("left")
        if left is not None and left.type in ("pattern_list", "tuple_pattern", "list_pattern"):
            names |= {text(n) for n in walk(left) if n.type == "identifier"}
    return names


def _in_class(node: Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type == "class_definition":
            return True
        parent = parent.parent
    return False


def _plain_function(ctx: KernelContext, name: str) -> Node | None:
    """The module-level, undecorated `def name` (a plain Python function), if that is what the
    name means in the module."""
    if name in ctx.module.jit_names or name in ctx.imports.names or name in ctx.module.globals:
        return None
    node = ctx.module.functions.get(name)
    if node is None or node.type != "function_definition" or _in_class(node):
        return None
    return node


# -- D1 ------------------------------------------------------------------------------------------


@check("non_jit_call")
def non_jit_call(ctx: KernelContext) -> Iterator[Hit]:
    """A plain Python function called from a kernel, or passed as a reduce/scan combine_fn."""
    shadowed = _local_names(ctx)
    for call in ctx.nodes("call"):
        if not ctx.in_body(call):
            continue
        function = call.child_by_field_name("function")
        if function is not None and function.type == "identifier":
            name = text(function)
            if name not in shadowed and _plain_function(ctx, name) is not None:
                yield Hit(
                    function,
                    f"'{name}' is called from a Triton kernel but is not decorated with "
                    "@triton.jit (use @triton.jit, or @triton.constexpr_function for a helper that "
                    "only computes constexprs)",
                )
        if ctx.imports.is_triton(ctx.call_name(call), "reduce", "associative_scan"):
            combine = unparen(ctx.arg(call, 2, "combine_fn"))
            if combine is not None and combine.type == "identifier":
                name = text(combine)
                if name not in shadowed and _plain_function(ctx, name) is not None:
                    yield Hit(combine, f"combine_fn '{name}' is not decorated with @triton.jit")


# -- D2 ------------------------------------------------------------------------------------------

_HOST_MODULES = ("math.", "torch.", "numpy.")
# Host functions with a tl equivalent of the same meaning (the fix's replacement name).
_TL_EQUIVALENT = {
    "exp": "exp",
    "exp2": "exp2",
    "log": "log",
    "log2": "log2",
    "sqrt": "sqrt",
    "sin": "sin",
    "cos": "cos",
    "floor": "floor",
    "ceil": "ceil",
    "erf": "erf",
    "abs": "abs",
    "fabs": "abs",
    "sigmoid": "sigmoid",
    "maximum": "maximum",
    "minimum": "minimum",
    "where": "where",
    "rsqrt": "rsqrt",
}


@check("host_lib_on_tensor", needles=(b'math', b'torch', b'numpy', b'np.'))
def host_lib_on_tensor(ctx: KernelContext) -> Iterator[Hit]:
    candidates = []
    for call in ctx.nodes("call"):
        name = ctx.call_name(call)
        if name is None or not name.startswith(_HOST_MODULES) or not ctx.in_body(call):
            continue
        if name.count(".") != 1:
            continue  # torch.cuda.*, numpy.random.*: not element-wise maths
        candidates.append((call, name))
    if not candidates:
        return  # the run-time analysis below is the costly part: skip it when nothing to ask
    rt = runtime(ctx)
    tl = tl_alias(ctx)
    for call, name in candidates:
        positional, keywords = ctx.args(call)
        culprit = next((a for a in positional if rt.is_runtime(a)), None)
        if culprit is None:
            continue
        module, short = name.split(".")
        function = call.child_by_field_name("function")
        replacement = _TL_EQUIVALENT.get(short)
        the_fix = None
        if replacement is not None and function is not None and not keywords:
            the_fix = fix(f"Use {tl}.{replacement}", edit(function, f"{tl}.{replacement}"))
        yield Hit(
            call,
            f"{text(function)}() runs on the host: it cannot take the run-time tensor "
            f"'{text(culprit)}'" + (f" (use {tl}.{replacement})" if replacement else ""),
            fix=the_fix,
        )


# -- D3 ------------------------------------------------------------------------------------------


@check("host_helper_on_runtime", needles=(b'cdiv', b'next_power_of_2'))
def host_helper_on_runtime(ctx: KernelContext) -> Iterator[Hit]:
    candidates = [
        (call, name) for call in ctx.nodes("call")
        if (name := ctx.call_name(call)) in ("triton.cdiv", "triton.next_power_of_2")
        and ctx.in_body(call)
    ]
    if not candidates:
        return
    rt = runtime(ctx)
    tl = tl_alias(ctx)
    for call, name in candidates:
        positional, keywords = ctx.args(call)
        culprit = next(
            (a for a in positional + [v for _, v in keywords.values()] if rt.is_runtime(a)), None
        )
        if culprit is None:
            continue
        function = call.child_by_field_name("function")
        if name == "triton.cdiv":
            yield Hit(
                call,
                f"triton.cdiv is a host helper and only takes constexprs; '{text(culprit)}' is a "
                f"run-time value: use {tl}.cdiv",
                fix=fix(f"Use {tl}.cdiv", edit(function, f"{tl}.cdiv")) if function is not None else None,
            )
        else:
            yield Hit(
                call,
                f"triton.next_power_of_2 only takes constexprs; '{text(culprit)}' is a run-time "
                "value (compute it on the host and pass it as a tl.constexpr)",
            )


# -- D7 ------------------------------------------------------------------------------------------


@check("program_id_axis", needles=(b'program_id', b'num_programs'))
def program_id_axis(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.tl_calls("program_id", "num_programs"):
        axis = ctx.arg(call, 0, "axis")
        if axis is None:
            continue
        what = text(call.child_by_field_name("function"))
        reported = False
        for value, _ in ctx.values(axis):
            if isinstance(value, bool) or not isinstance(value, int) or value in (0, 1, 2):
                continue
            yield Hit(axis, f"{what} axis must be 0, 1 or 2, not {value}")
            reported = True
            break
        literal = unparen(axis)
        if literal is not None and literal.type == "integer":
            continue  # the common `tl.program_id(0)`: no need for the run-time analysis
        if not reported and is_launched(ctx) and runtime(ctx).is_runtime(axis):
            yield Hit(
                axis,
                f"{what} axis must be the constexpr 0, 1 or 2, not the run-time value '{text(axis)}'",
            )


# -- D4 ------------------------------------------------------------------------------------------

_SPLATS = frozenset(
    {"list_splat_pattern", "dictionary_splat_pattern", "keyword_separator", "positional_separator"}
)


@check("jit_call_arity")
def jit_call_arity(ctx: KernelContext) -> Iterator[Hit]:
    shadowed = _local_names(ctx)
    by_name = ctx.module.kernels_by_name
    for call in ctx.nodes("call"):
        function = call.child_by_field_name("function")
        if function is None or function.type != "identifier" or not ctx.in_body(call):
            continue
        name = text(function)
        targets = by_name.get(name, [])
        if len(targets) != 1 or name in shadowed or name in ctx.imports.names:
            continue
        helper = targets[0]
        parameters = helper.node.child_by_field_name("parameters")
        if parameters is None or any(c.type in _SPLATS for c in parameters.named_children):
            continue
        if parameters.has_error or len(helper.params) != sum(
            1 for c in parameters.named_children if c.type != "comment"
        ):
            continue
        arguments = call.child_by_field_name("arguments")
        if arguments is None or arguments.type != "argument_list" or arguments.has_error:
            continue
        if any(c.type in ("list_splat", "dictionary_splat") for c in arguments.named_children):
            continue
        positional, keywords = call_args(call)
        params = [p.name for p in helper.params]
        message = None
        if len(positional) > len(params):
            message = f"{name}() takes {len(params)} argument(s) but {len(positional)} were given"
        else:
            bound = set(params[: len(positional)])
            unknown = [k for k in keywords if k not in params]
            twice = [k for k in keywords if k in bound]
            missing = [
                p.name
                for p in helper.params
                if p.default is None and p.name not in bound and p.name not in keywords
            ]
            if unknown:
                message = f"{name}() got an unexpected keyword argument '{unknown[0]}'"
            elif twice:
                message = f"{name}() got multiple values for argument '{twice[0]}'"
            elif missing:
                message = f"{name}() is missing the required argument(s) {', '.join(repr(m) for m in missing)}"
        if message is not None:
            yield Hit(call, message)


# -- D6 ------------------------------------------------------------------------------------------


def _enclosing_function(node: Node) -> Node | None:
    parent = node.parent
    while parent is not None and parent.type not in ("function_definition", "lambda"):
        parent = parent.parent
    return parent


@check("launched_kernel_returns", needles=(b'return',))
def launched_kernel_returns(ctx: KernelContext) -> Iterator[Hit]:
    if not ctx.kernel.launches:
        return
    rt = runtime(ctx)
    for node in ctx.nodes("return_statement"):
        if _enclosing_function(node) != ctx.kernel.node:
            continue
        value = next((c for c in node.named_children if c.type != "comment"), None)
        if value is None or not rt.is_runtime(value):
            continue
        yield Hit(
            node,
            f"kernel '{ctx.kernel.name}' is launched with {ctx.kernel.name}[grid](...) and must "
            f"not return a value; store '{text(value)}' through a pointer instead",
        )


# -- D8 ------------------------------------------------------------------------------------------


@check("unused_advance", needles=(b'advance',))
def unused_advance(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.tl_calls("advance"):
        statement = call.parent
        if statement is None or statement.type != "expression_statement":
            continue
        base = unparen(ctx.arg(call, 0, "base"))
        the_fix = None
        if base is not None and base.type == "identifier":
            the_fix = fix(
                f"Assign the result to '{text(base)}'", edit(call, f"{text(base)} = {text(call)}")
            )
        yield Hit(
            call,
            "the result of tl.advance is not used: it returns a new block pointer and does not "
            "move its argument",
            fix=the_fix,
        )
