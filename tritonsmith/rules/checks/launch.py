"""Category J: launch configuration and runtime (catalogue J1-J10).

Launch sites (`kernel[grid](...)`), direct calls and `triton.Config` options belong to the kernel
they launch or tune, so these are kernel checks whose hits may point outside the kernel.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Iterator

from tree_sitter import Node, Query, QueryCursor

from ...analysis.document import PY_LANGUAGE
from ...analysis.index import LaunchSite
from ...analysis.syntax import call_args, string_value, text, unparen, walk
from ...analysis.values import evaluate, is_power_of_two
from ..context import KernelContext
from .registry import Hit, check, did_you_mean, edit, fix, related

MAX_WARPS = 32  # 1024 threads per block on NVIDIA (and 16 warps of 64 on AMD)

# Keywords `JITFunction.run` takes itself, and the deprecated ones it asserts against.
_RUN_KEYWORDS = frozenset({"grid", "warmup", "stream", "device", "device_type"})
# Compile options a launch may pass: the fields of every backend's options dataclass in the 3.x
# releases (triton/backends/nvidia/compiler.py CUDAOptions, amd/compiler.py HIPOptions, and the
# Intel XPU backend), so that no version's valid option is reported.
# fmt: off
LAUNCH_OPTIONS = frozenset(
    {
        # NVIDIA (3.0-3.9)
        "num_warps", "num_ctas", "num_stages", "warp_size", "maxnreg", "cluster_dims", "ptx_version",
        "ptx_options", "ir_override", "enable_fp_fusion", "sched4reg", "enable_reflect_ftz",
        "launch_cooperative_grid", "launch_pdl", "clc", "supported_fp8_dtypes",
        "deprecated_fp8_dot_operand_dtypes", "default_dot_input_precision",
        "allowed_dot_input_precisions", "max_num_imprecise_acc_default", "extern_libs", "debug",
        "backend_name", "sanitize_overflow", "arch", "instrumentation_mode", "fpsan_homomorphic_casts",
        "min_shared_mem", "enable_warp_specialization", "enable_persistent", "optimize_epilogue",
        "allow_fp8e4nv", "allow_fp8e4b15", "num_buffers_warp_spec", "num_consumer_groups",
        "reg_dec_producer", "reg_inc_consumer", "maxNReg",
        # AMD
        "waves_per_eu", "matrix_instr_nonkdim", "kpack", "allow_flush_denorm",
        "instruction_sched_variant", "schedule_hint", "llvm_fn_attrs", "wgp_cu_mode", "use_buffer_ops",
        "buffer_ops", "num_buffers",
        # Intel XPU
        "grf_mode", "generate_native_code", "advanced_path", "one_matrix_per_load_for_bt",
        "enable_tile_load_linear_layout", "split_barriers_scope", "threads_per_warp",
    }
)
# fmt: on
# The options a user actually passes; suggestions for a misspelt keyword come from these.
_COMMON_OPTIONS = (
    "num_warps",
    "num_stages",
    "num_ctas",
    "maxnreg",
    "enable_fp_fusion",
    "debug",
    "launch_cooperative_grid",
    "launch_pdl",
    "waves_per_eu",
    "matrix_instr_nonkdim",
    "kpack",
)
# Decorators that pass launch keywords through unchanged.
_TRANSPARENT_DECORATORS = (
    "triton.jit",
    "triton.autotune",
    "triton.heuristics",
    "triton.runtime.jit",
    "triton.runtime.autotune",
    "triton.runtime.heuristics",
)


# -- shared helpers (also used by the autotune checks) -----------------------------------------


def enclosing_function(node: Node) -> Node | None:
    current = node.parent
    while current is not None:
        if current.type == "function_definition":
            return current
        current = current.parent
    return None


def _function_decorators(function: Node) -> list[Node]:
    parent = function.parent
    if parent is None or parent.type != "decorated_definition":
        return []
    return [c for c in parent.named_children if c.type == "decorator"]


# The shapes a binding of a name needs in a function's text: `name =` (or `+=` and the like),
# `name,`, `name:`, `name)`, `name]`, `name in`, or `name` in the words after `def`, `class`,
# `as`, `import` or `del`. Read with fixed patterns: one pattern per name was compiled anew for
# nearly every launch of a cold check (a file has more launched names than `re` caches).
# Lookaheads keep every occurrence in view (`import a as\n b` has two keywords).
_WORD_BEFORE_BINDING = re.compile(rb"\b(\w+)(?=\s*(?:[-+*/%&|^@<>]{0,2}=(?!=)|,|:|\)|\])|\s+in\b)")
_WORDS_AFTER_KEYWORD = re.compile(rb"\b(?:def|class|as|import|del)(?=\s+([\w\x80-\xff., ]*))")
_WORD = re.compile(rb"\w+")


def _may_bind(source: bytes, name: str) -> bool:
    """Whether `name` occurs in `source` in a shape that could bind it (the pre-filter of
    `_local_bindings`: nearly always a launched name is only used in a host function)."""
    word = name.encode()
    if b"\\" in source:  # a line continued by a backslash reads as one line
        source = source.replace(b"\\\r\n", b"   ").replace(b"\\\n", b"  ")
    if _WORD.fullmatch(word) is None:  # not an ASCII word: the patterns above cannot see it
        # (`\b` does not see the edge of a word that starts or ends with a UTF-8 byte.)
        alone = rb"(?<![\w\x80-\xff])" + re.escape(word) + rb"(?![\w\x80-\xff])"
        binding = (alone + rb"\s*(?:[-+*/%&|^@<>]{0,2}=(?!=)|,|:|\)|\])"
                   rb"|\b(?:def|class|as|import|del)\s+[\w\x80-\xff., ]*" + alone + rb"|" + alone + rb"\s+in\b")
        return re.search(binding, source) is not None
    return word in source and word in _binding_words(source)


@functools.lru_cache(maxsize=64)
def _binding_words(source: bytes) -> frozenset[bytes]:
    """Every word of `source` in a shape that could bind it: read once per host function, which
    a file's launches ask about name after name (the scans were 2% of a cold check)."""
    words = set(_WORD_BEFORE_BINDING.findall(source))
    for after in _WORDS_AFTER_KEYWORD.findall(source):
        words.update(_WORD.findall(after))
    return frozenset(words)


def _local_bindings(function: Node, name: str, tables: dict[tuple[int, int], dict[str, list[Node]]]) -> list[Node]:
    """What `name` is bound to inside a host function: the right-hand sides of `name = ...`,
    nested `def name(...)`, and the parameter node if it is a parameter. `tables` (one per file,
    `_binding_tables`) keeps each function's bindings of every name from one walk of it."""
    out: list[Node] = []
    # Every binding form below needs one of the shapes `_may_bind` looks for: without one, the
    # answer is known without walking the function.
    if not _may_bind(function.text or b"", name):
        return out
    params = function.child_by_field_name("parameters")
    if params is not None:
        for child in params.named_children:
            ident = child if child.type == "identifier" else child.child_by_field_name("name")
            if ident is not None and ident.type == "identifier" and text(ident) == name:
                out.append(child)
    key = (function.start_byte, function.end_byte)
    table = tables.get(key)
    if table is None:
        table = tables[key] = _body_bindings(function)
    return out + table.get(name, [])


def _body_bindings(function: Node) -> dict[str, list[Node]]:
    """Every name a host function's body binds, as Python's scoping has it (its symbol table:
    the test compares with `symtable`), with the nodes `_local_bindings` answers for it: the
    value of `name = value` or `(name := value)`, a nested `def`, and otherwise the binding
    statement or target (`for`, `with`/`except ... as`, `import`, `class`, `del`, `+=`, an
    annotation). The bodies of nested functions, lambdas and classes are scopes of their own, and
    so are comprehensions, except for their `:=`; `match` patterns are not read. The forms are
    found by one tree-sitter query (a walk in C; the Python walk of every node was 2% of a cold
    check) and taken in the order of a walk that visits a node before its children and children
    right to left (`(-end, start)`)."""
    out: dict[str, list[Node]] = {}

    def bind(names: Iterable[str], node: Node) -> None:
        for name in dict.fromkeys(names):  # once per name, in order
            out.setdefault(name, []).append(node)

    body = function.child_by_field_name("body")
    if body is None:
        return out
    found = QueryCursor(_binding_query()).captures(body).get("node", [])
    found.sort(key=lambda n: (-n.end_byte, n.start_byte))
    # The last nested scope's body taken: nothing inside binds here, and in this order what is
    # inside it comes right after it, so one range is enough (a list was quadratic in them).
    closed_start, closed_end = 1, 0
    for node in found:
        start, end = node.start_byte, node.end_byte
        if closed_start <= start and end <= closed_end:
            continue
        kind = node.type
        if kind == "assignment":
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            if left is not None and left.type == "identifier":
                bind([text(left)], right if right is not None else node)  # `x: int` binds too
            elif left is not None:
                bind(_target_names(left), left)
        elif kind == "named_expression":
            name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if name is not None:
                bind([text(name)], value if value is not None else node)
        elif kind == "for_statement":
            left = node.child_by_field_name("left")
            if left is not None:
                bind(_target_names(left), left)
        elif kind == "as_pattern":  # `with ... as x`, `except E as x`
            alias = node.child_by_field_name("alias")
            if alias is not None:
                bind(_target_names(alias), alias)
        elif kind == "augmented_assignment":
            left = node.child_by_field_name("left")
            if left is not None:
                bind(_target_names(left), node)
        elif kind == "delete_statement":
            bind([name for target in node.named_children for name in _target_names(target)], node)
        elif kind in ("import_statement", "import_from_statement"):
            bind(_imported_names(node), node)
        else:  # a nested function, class or lambda: its body is a scope of its own
            if kind in ("function_definition", "class_definition"):
                name = node.child_by_field_name("name")
                if name is not None:
                    bind([text(name)], node)
            # (Not its parameters' defaults, which are read here: `lambda w=(v := 1): w` binds `v`.)
            inner = node.child_by_field_name("body")
            if inner is not None:
                closed_start, closed_end = inner.start_byte, inner.end_byte
    return out


# What a target binds: its names, not those it only reads (`x.attr = v`, `x[i] = v`).
_TARGET_GROUPS = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "expression_list", "tuple", "list",
                            "parenthesized_expression", "list_splat_pattern", "list_splat", "as_pattern_target"})


def _target_names(target: Node) -> list[str]:
    if target.type == "identifier":
        return [text(target)]
    if target.type in _TARGET_GROUPS:
        return [name for child in target.named_children for name in _target_names(child)]
    return []


def _imported_names(statement: Node) -> list[str]:
    """The names an import binds: `import a.b` binds `a`, `import a as b` and `from m import a as
    b` bind `b`, `from m import a` binds `a` (the module of `from m` none)."""
    names = []
    for child in statement.children_by_field_name("name"):
        if child.type == "aliased_import":
            alias = child.child_by_field_name("alias")
            names += [text(alias)] if alias is not None else []
        elif child.type == "dotted_name" and child.named_children:
            names.append(text(child.named_children[0]))
    return names


@functools.cache
def _binding_query() -> Query:
    return Query(PY_LANGUAGE, "[(assignment) (named_expression) (augmented_assignment) (delete_statement) "
                              "(for_statement) (as_pattern) (import_statement) (import_from_statement) "
                              "(function_definition) (class_definition) (lambda)] @node")


def _binding_tables(ctx: KernelContext) -> dict[tuple[int, int], dict[str, list[Node]]]:
    """The file's host functions' bindings (`_local_bindings`), kept on its index: every kernel
    launched from one launcher asks about the same function."""
    tables: dict[tuple[int, int], dict[str, list[Node]]] = ctx.module.__dict__.setdefault("_host_bindings", {})
    return tables


def is_shadowed(site: LaunchSite, name: str, tables: dict[tuple[int, int], dict[str, list[Node]]]) -> bool:
    """Whether the launched name is rebound in the host function around the launch, so that it
    may not be the module's kernel at all."""
    function = enclosing_function(site.node)
    while function is not None:
        if _local_bindings(function, name, tables):
            return True
        function = enclosing_function(function)
    return False


def launch_sites(ctx: KernelContext) -> Iterator[LaunchSite]:
    """`kernel[grid](...)` sites that certainly launch this kernel (worked out once per kernel:
    several checks ask, and each answer walks the host function)."""
    sites = ctx.__dict__.get("_certain_launch_sites")
    if sites is None:
        sites = [s for s in ctx.kernel.launches if not is_shadowed(s, ctx.kernel.name, _binding_tables(ctx))]
        ctx.__dict__["_certain_launch_sites"] = sites
    yield from sites


def _module_int_env(ctx: KernelContext) -> dict[str, object]:
    env: dict[str, object] = dict(ctx.module_constexprs)
    for name, node in ctx.module.globals.items():
        value = unparen(node)
        if (
            name not in env
            and value is not None
            and value.type in ("integer", "binary_operator", "unary_operator")
        ):
            folded = evaluate(value, env, ctx.qualify)
            if isinstance(folded, int) and not isinstance(folded, bool):
                env[name] = folded
    return env


def num_warps_nodes(ctx: KernelContext) -> Iterator[tuple[Node, str]]:
    """Every `num_warps` value given to this kernel: in its Configs and at its launch sites."""
    if ctx.kernel.autotune is not None:
        for config in ctx.kernel.autotune.configs:
            if "num_warps" in config.options:
                yield config.options["num_warps"], "this triton.Config"
    for site in launch_sites(ctx):
        if "num_warps" in site.keywords:
            yield site.keywords["num_warps"][1], "this launch"


def _num_warps_values(ctx: KernelContext) -> Iterator[tuple[Node, int, str]]:
    env = _module_int_env(ctx)
    for node, where in num_warps_nodes(ctx):
        value = evaluate(node, env, ctx.qualify)
        if isinstance(value, int) and not isinstance(value, bool):
            yield node, value, where


# -- J1 / J2 -----------------------------------------------------------------------------------


@check("num_warps_pow2", needles=(b'num_warps',))
def num_warps_pow2(ctx: KernelContext) -> Iterator[Hit]:
    for node, value, where in _num_warps_values(ctx):
        if not is_power_of_two(value):
            lower = 1 << max(value.bit_length() - 1, 0) if value > 0 else 1
            yield Hit(
                node,
                f"num_warps must be a power of 2, not {value} ({where})",
                fix=fix(f"Use num_warps={lower}", edit(node, str(lower))),
            )


@check("num_warps_too_many", needles=(b'num_warps',))
def num_warps_too_many(ctx: KernelContext) -> Iterator[Hit]:
    for node, value, where in _num_warps_values(ctx):
        if value > MAX_WARPS:
            yield Hit(
                node,
                f"num_warps={value} is {value * 32} threads per program; GPUs allow at most 1024 "
                f"(num_warps <= {MAX_WARPS}) ({where})",
                fix=fix(f"Use num_warps={MAX_WARPS}", edit(node, str(MAX_WARPS))),
            )


# -- J6 ----------------------------------------------------------------------------------------


def _passes_keywords_through(ctx: KernelContext, *, allow_wrappers: bool = True) -> bool:
    """Whether every decorator is one whose launch keywords we know (triton's own, or, when
    `allow_wrappers`, a caching `libentry`-style wrapper)."""
    for decorator in ctx.kernel.decorators:
        expr = next((c for c in decorator.named_children if c.type != "comment"), None)
        target = (
            expr.child_by_field_name("function")
            if expr is not None and expr.type == "call"
            else expr
        )
        qualified = ctx.qualify(target) or ""
        if decorator == ctx.kernel.jit_decorator or qualified in _TRANSPARENT_DECORATORS:
            continue
        if allow_wrappers and ("libentry" in qualified.lower() or "libcache" in qualified.lower()):
            continue
        return False
    return True


@check("unknown_launch_keyword")
def unknown_launch_keyword(ctx: KernelContext) -> Iterator[Hit]:
    """Only keywords that look like a misspelt parameter or option are reported: vendor forks of
    Triton (Cambricon, Kunlunxin, ...) accept launch options of their own."""
    if not _passes_keywords_through(ctx):
        return
    params = [p.name for p in ctx.kernel.params]
    for site in launch_sites(ctx):
        for name, (keyword, _) in site.keywords.items():
            if name in params or name in LAUNCH_OPTIONS or name in _RUN_KEYWORDS:
                continue
            taken = set(site.keywords) - {name}
            close = difflib.get_close_matches(
                name, [p for p in params if p not in taken], n=1, cutoff=0.6
            )
            if not close:
                options = [o for o in _COMMON_OPTIONS if o not in taken]
                close = difflib.get_close_matches(name, options, n=1, cutoff=0.8)
            if not close:
                continue
            name_node = keyword.child_by_field_name("name")
            the_fix = (
                fix(f"Rename to {close[0]}", edit(name_node, close[0]))
                if name_node is not None
                else None
            )
            yield Hit(
                keyword,
                f"'{name}' is neither a parameter of {ctx.kernel.name} nor a launch option; "
                f"did you mean '{close[0]}'?",
                related(
                    ctx.kernel.node.child_by_field_name("parameters"),
                    f"{ctx.kernel.name}'s parameters",
                ),
                the_fix,
            )


# -- J7 ----------------------------------------------------------------------------------------

_KERNEL_LIKE_DECORATOR_WORDS = (
    "jit",
    "triton",
    "libentry",
    "autotune",
    "heuristics",
    "kernel",
    "builtin",
    "extern",
    "constexpr_function",
    "inline",
    "device",
)


_DEVICE_ONLY = frozenset(
    {"program_id", "num_programs", "load", "store", "arange", "dot", "atomic_add"}
)


def _inside_device_code(ctx: KernelContext, node: Node) -> bool:
    """Whether a call sits in a function that may itself be device code: one decorated by
    something that could be a jit, or one that uses device-only tl functions (a kernel whose
    @triton.jit is applied elsewhere, `kernel = triton.jit(fn)`)."""
    function = enclosing_function(node)
    while function is not None:
        for decorator in _function_decorators(function):
            if any(word in text(decorator).lower() for word in _KERNEL_LIKE_DECORATOR_WORDS):
                return True
        for call in walk(function):
            if call.type == "call":
                qualified = ctx.qualify(call.child_by_field_name("function")) or ""
                if (
                    qualified.startswith("triton.language.")
                    and qualified.rsplit(".", 1)[-1] in _DEVICE_ONLY
                ):
                    return True
        function = enclosing_function(function)
    return False


@check("jit_called_without_grid")
def jit_called_without_grid(ctx: KernelContext) -> Iterator[Hit]:
    # A project decorator above @triton.jit (pointwise_dynamic, ...) may make the kernel callable.
    if not _passes_keywords_through(ctx, allow_wrappers=False):
        return
    for site in ctx.kernel.direct_calls:
        if is_shadowed(site, ctx.kernel.name, _binding_tables(ctx)) or _inside_device_code(ctx, site.node):
            continue
        yield Hit(
            site.node,
            f"{ctx.kernel.name} is a @triton.jit kernel: launch it as {ctx.kernel.name}[grid](...)",
            related(ctx.kernel.node.child_by_field_name("name"), "defined here"),
        )


# -- J5 ----------------------------------------------------------------------------------------


def _callable_definitions(site: LaunchSite, ctx: KernelContext) -> list[Node]:
    """The lambdas / functions a launch's grid may be: inline, or bound to a name in the host
    function or the module."""
    grid = unparen(site.grid)
    if grid is None:
        return []
    if grid.type == "lambda":
        return [grid]
    if grid.type != "identifier":
        return []
    name = text(grid)
    function = enclosing_function(site.node)
    innermost = True
    while function is not None:
        bindings = [
            b for b in (unparen(b) for b in _local_bindings(function, name, _binding_tables(ctx))) if b is not None
        ]
        if bindings:
            if innermost:
                # The binding in force at the launch: the nearest one before it, and only when
                # it sits in a block around the launch (not in a sibling branch).
                before = [b for b in bindings if b.start_byte < site.node.start_byte]
                if not before:
                    return []
                binding = max(before, key=lambda b: b.start_byte)
                if not _encloses(_statement_block(binding), site.node):
                    return []
            elif len(bindings) == 1:
                binding = bindings[0]
            else:
                return []
            if binding.type not in ("lambda", "function_definition") or _function_decorators(
                binding
            ):
                return []
            return [binding]
        function = enclosing_function(function)
        innermost = False
    if name in ctx.module.functions:
        definition = ctx.module.functions[name]
        if definition.type == "decorated_definition":
            return []  # a decorated grid function may rewrite its argument
        return [definition]
    value = unparen(ctx.module.globals.get(name))
    if value is not None and value.type == "lambda":
        return [value]
    return []


def _statement_block(node: Node) -> Node | None:
    """The block (or module) holding the statement that contains `node`."""
    current: Node | None = node
    while current is not None and current.parent is not None:
        if current.parent.type in ("block", "module"):
            return current.parent
        current = current.parent
    return None


def _encloses(outer: Node | None, node: Node) -> bool:
    return (
        outer is not None
        and outer.start_byte <= node.start_byte
        and node.end_byte <= outer.end_byte
    )


def _first_param(definition: Node) -> str | None:
    params = definition.child_by_field_name("parameters")
    if params is None:
        return None
    for child in params.named_children:
        if child.type == "identifier":
            return text(child)
        if child.type in ("default_parameter", "typed_parameter", "typed_default_parameter"):
            name = child.child_by_field_name("name") or next(
                (c for c in child.named_children if c.type == "identifier"), None
            )
            return text(name) if name is not None else None
        return None
    return None


def meta_keys(definition: Node) -> Iterator[tuple[Node, str]]:
    """String keys read as `meta['X']` from the first parameter of a lambda or function."""
    name = _first_param(definition)
    if name is None:
        return
    body = definition.child_by_field_name("body")
    if body is None:
        return
    for node in walk(body):
        if node.type != "subscript":
            continue
        value = node.child_by_field_name("value")
        key = node.child_by_field_name("subscript")
        if value is None or key is None or value.type != "identifier" or text(value) != name:
            continue
        literal = string_value(key)
        if literal is not None:
            yield key, literal


def known_meta_names(ctx: KernelContext) -> set[str]:
    names = {p.name for p in ctx.kernel.params}
    if ctx.kernel.autotune is not None:
        for config in ctx.kernel.autotune.configs:
            names |= set(config.values)
    names |= set(ctx.kernel.heuristics)
    return names


@check("grid_meta_key")
def grid_meta_key(ctx: KernelContext) -> Iterator[Hit]:
    known = known_meta_names(ctx)
    seen: set[int] = set()
    for site in launch_sites(ctx):
        for definition in _callable_definitions(site, ctx):
            for key_node, key in meta_keys(definition):
                if key in known or key in LAUNCH_OPTIONS or key_node.start_byte in seen:
                    continue
                seen.add(key_node.start_byte)
                hint, the_fix = did_you_mean(key_node, key, known)
                yield Hit(
                    key_node,
                    f"the grid reads meta['{key}'], but '{key}' is not a parameter of "
                    f"{ctx.kernel.name}{hint}",
                    related(site.node, "launched here"),
                    the_fix,
                )


# -- J9 / J10 ----------------------------------------------------------------------------------


@check("print_in_kernel", needles=(b'print',))
def print_in_kernel(ctx: KernelContext) -> Iterator[Hit]:
    for call in ctx.nodes("call"):
        function = call.child_by_field_name("function")
        if (
            function is None
            or function.type != "identifier"
            or text(function) != "print"
            or not ctx.in_body(call)
        ):
            continue
        if ctx.qualify(function) != "print":
            continue
        yield Hit(
            call, "print() in a kernel becomes tl.device_print: every thread that reaches it prints"
        )


def _debug_enabled(ctx: KernelContext) -> bool:
    """`@triton.jit(debug=True)`, or a launch passing debug=True (or anything not literally False)."""
    expr = next((c for c in ctx.kernel.jit_decorator.named_children if c.type != "comment"), None)
    if expr is not None and expr.type == "call":
        _, keywords = call_args(expr)
        if "debug" in keywords and unparen(keywords["debug"][1]).type != "false":  # type: ignore[union-attr]
            return True
    for site in ctx.kernel.launches:
        if "debug" in site.keywords and unparen(site.keywords["debug"][1]).type != "false":  # type: ignore[union-attr]
            return True
    return False


@check("device_assert_noop", needles=(b'assert',))
def device_assert_noop(ctx: KernelContext) -> Iterator[Hit]:
    if _debug_enabled(ctx):
        return
    for call in ctx.tl_calls("device_assert"):
        yield Hit(call, "tl.device_assert is compiled out unless debug=True (or TRITON_DEBUG=1)")
    for node in ctx.nodes("assert_statement"):
        if ctx.in_body(node):
            yield Hit(
                node,
                "assert in a kernel is tl.device_assert: compiled out unless debug=True "
                "(or TRITON_DEBUG=1); use tl.static_assert for constexpr conditions",
            )
