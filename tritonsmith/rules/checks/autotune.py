"""Category K: autotune and heuristics (catalogue K1-K5).

A kernel's `@triton.autotune` configs, its `@triton.heuristics` and its launch sites are all in
`ctx.kernel`, so these are kernel checks whose hits usually point at decorator arguments or
launch keywords rather than into the kernel body.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from tree_sitter import Node

from ...analysis.syntax import call_args, iter_descendants, operator_of, string_value, text, unparen
from ..context import KernelContext
from ..findings import Span
from .launch import LAUNCH_OPTIONS, enclosing_function, launch_sites, meta_keys
from .registry import Hit, check, did_you_mean, edit, fix, related

# Options every Config passes to the kernel (Config.all_kwargs), so a launch cannot pass them too.
_ALWAYS_SET_OPTIONS = ("num_warps", "num_stages", "num_ctas")
_CONFIG_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "pre_hook", "ir_override")
# Atomics that read only: they do not accumulate across benchmark runs.
_READ_ONLY_ATOMICS = frozenset({"atomic_load", "atomic_poll"})


def _remove_argument(keyword: Node) -> Span | None:
    """The span to delete to remove one argument from a call, with its separating comma."""
    previous = keyword.prev_sibling
    while previous is not None and previous.type == "comment":
        previous = previous.prev_sibling
    if previous is not None and previous.type == ",":
        return Span.between(previous, keyword)
    following = keyword.next_sibling
    if following is not None and following.type == ",":
        after = following.next_sibling
        if after is not None and after.type not in (")", "comment"):
            return Span(
                start=(keyword.start_point[0], keyword.start_point[1]),
                end=(after.start_point[0], after.start_point[1]),
                start_byte=keyword.start_byte,
                end_byte=after.start_byte,
            )
        return Span.between(keyword, following)
    return Span.of(keyword)


@check("autotune_launch_conflict", needles=(b'autotune',))
def autotune_launch_conflict(ctx: KernelContext) -> Iterator[Hit]:
    autotune = ctx.kernel.autotune
    if autotune is None:
        return
    tuned: dict[str, Node] = {}
    for config in autotune.configs:
        for key, node in config.key_nodes.items():
            tuned.setdefault(key, node)
        for option in ("maxnreg", "ir_override"):
            if option in config.options:
                tuned.setdefault(option, config.options[option])
    for site in launch_sites(ctx):
        for name, (keyword, _) in site.keywords.items():
            if name in tuned:
                message = (
                    f"{name} is tuned by @triton.autotune; passing it at the launch conflicts with the "
                    "Config value"
                )
                where = related(tuned[name], f"{name} is set by this triton.Config")
            elif name in _ALWAYS_SET_OPTIONS:
                message = (
                    f"{name} is set by every triton.Config of this autotuned kernel; passing it at the "
                    "launch gives it twice (set it in the Configs instead)"
                )
                where = related(autotune.node.child_by_field_name("function"), "autotuned here")
            else:
                continue
            span = _remove_argument(keyword)
            the_fix = (
                fix(f"Remove {name}= from the launch", edit(span, "")) if span is not None else None
            )
            yield Hit(keyword, message, where, the_fix)


def _name_lists(ctx: KernelContext) -> Iterator[tuple[str, str, Node]]:
    """(argument, name, string node) for the names in autotune's key, reset_to_zero and
    restore_value lists."""
    autotune = ctx.kernel.autotune
    if autotune is None:
        return
    for name, node in autotune.key:
        yield "key", name, node
    for argument in ("reset_to_zero", "restore_value"):
        value = unparen(_keyword(autotune.node, argument))
        if value is None:
            continue
        if value.type == "identifier":
            value = unparen(ctx.module.globals.get(text(value)))
        if value is None or value.type not in ("list", "tuple"):
            continue
        for child in value.named_children:
            literal = string_value(child)
            if literal is not None:
                yield argument, literal, child


@check("autotune_key_not_param", needles=(b'autotune',))
def autotune_key_not_param(ctx: KernelContext) -> Iterator[Hit]:
    params = [p.name for p in ctx.kernel.params]
    for argument, name, node in _name_lists(ctx):
        if name in params:
            continue
        close = difflib.get_close_matches(name, params, n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        quote = '"' if text(node).endswith('"') else "'"
        the_fix = (
            fix(f"Use '{close[0]}'", edit(node, f"{quote}{close[0]}{quote}")) if close else None
        )
        if argument == "key":
            message = (
                f"autotune key '{name}' is not a parameter of {ctx.kernel.name}: before Triton 3.9 it is "
                f"silently ignored (the tuned config is reused for every {name}), from 3.9 it is an "
                f"error{hint}"
            )
        else:
            message = (
                f"{argument} names '{name}', which is not a parameter of {ctx.kernel.name}: the "
                f"autotuner fails with a KeyError (a ValueError from Triton 3.9){hint}"
            )
        yield Hit(node, message, fix=the_fix)


def _keyword(call: Node, name: str) -> Node | None:
    _, keywords = call_args(call)
    return keywords[name][1] if name in keywords else None


def _has_many_configs(ctx: KernelContext) -> bool:
    autotune = ctx.kernel.autotune
    if autotune is None:
        return False
    if autotune.configs_known:
        return len(autotune.configs) > 1
    positional, keywords = call_args(autotune.node)
    configs = (
        keywords["configs"][1] if "configs" in keywords else (positional[0] if positional else None)
    )
    configs = unparen(configs)
    # A comprehension over configs almost always yields several.
    return configs is not None and configs.type in ("list_comprehension", "generator_expression")


def _resets_state(ctx: KernelContext) -> bool:
    autotune = ctx.kernel.autotune
    if autotune is None:
        return True
    args = autotune.node.child_by_field_name("arguments")
    if args is not None and any(c.type == "dictionary_splat" for c in args.named_children):
        return True  # `**kwargs` may hold reset_to_zero / restore_value
    for name in ("reset_to_zero", "restore_value", "pre_hook"):
        value = unparen(_keyword(autotune.node, name))
        if value is None or value.type == "none":
            continue
        if value.type in ("list", "tuple") and not [
            c for c in value.named_children if c.type != "comment"
        ]:
            continue
        return True
    return any("pre_hook" in config.options for config in autotune.configs)


def _base_pointer(ctx: KernelContext, node: Node | None, depth: int = 0) -> str | None:
    """The kernel parameter a pointer expression is based on: the leftmost term of its `+`/`-`
    chain, followed through locals assigned once (`x_ptrs = x_ptr + offs`)."""
    node = unparen(node)
    if node is None or depth > 8:
        return None
    if node.type == "binary_operator" and operator_of(node) in ("+", "-"):
        return _base_pointer(ctx, node.child_by_field_name("left"), depth + 1)
    if node.type == "identifier":
        name = text(node)
        param = ctx.kernel.param(name)
        if param is not None:
            return None if param.is_constexpr else name
        values = [
            v
            for v in ctx.assignments.get(name, [])
            if v.parent is not None and v.parent.type == "assignment"
        ]
        bases = {_base_pointer(ctx, v, depth + 1) for v in values}
        return bases.pop() if len(bases) == 1 else None
    # Hints that return their argument: tl.multiple_of(ptr, 16), tl.max_contiguous(...).
    if node.type == "call" and ctx.imports.is_triton(
        ctx.call_name(node), "multiple_of", "max_contiguous", "max_constancy"
    ):
        return _base_pointer(ctx, ctx.arg(node, 0, "input"), depth + 1)
    return None


@check("autotune_inplace", needles=(b'autotune',))
def autotune_inplace(ctx: KernelContext) -> Iterator[Hit]:
    if not _has_many_configs(ctx) or _resets_state(ctx):
        return
    autotune = ctx.kernel.autotune
    assert autotune is not None
    where = related(
        autotune.node.child_by_field_name("function"), "autotuned with several configs here"
    )
    for call in ctx.nodes("call"):
        name = ctx.call_name(call)
        short = name.rsplit(".", 1)[-1] if name else ""
        if (
            short.startswith("atomic_")
            and short not in _READ_ONLY_ATOMICS
            and ctx.imports.is_triton(name, short)
            and ctx.in_body(call)
        ):
            yield Hit(
                call,
                f"tl.{short} accumulates into memory, and autotuning runs the kernel once per config "
                "and benchmark repeat: the result is applied many times",
                where,
            )
            return
    # In place: the kernel reads a buffer before it first writes it (a buffer written first and
    # read back later is scratch space that each run rewrites).
    first_store: dict[str, Node] = {}
    for call in ctx.tl_calls("store"):
        base = _base_pointer(ctx, ctx.arg(call, 0, "pointer"))
        if base is not None:
            first_store.setdefault(base, call)
    for call in ctx.tl_calls("load"):
        base = _base_pointer(ctx, ctx.arg(call, 0, "pointer"))
        store = first_store.get(base) if base is not None else None
        if store is not None and call.start_byte < store.start_byte:
            yield Hit(
                store,
                f"this kernel updates '{base}' in place, and autotuning runs it once per config and "
                "benchmark repeat: the update is applied many times",
                where + related(call, f"'{base}' is read here before it is written"),
            )
            return


@check("config_key_not_param", needles=(b'Config',))
def config_key_not_param(ctx: KernelContext) -> Iterator[Hit]:
    autotune = ctx.kernel.autotune
    if autotune is None:
        return
    if _keyword(autotune.node, "prune_configs_by") is not None:
        return  # an early_config_prune function may rewrite the configs before they are used
    params = [p.name for p in ctx.kernel.params]
    constexprs = [p.name for p in ctx.kernel.params if p.is_constexpr]
    for config in autotune.configs:
        for key, node in config.key_nodes.items():
            if key in params:
                continue
            if key in _CONFIG_OPTIONS or key in LAUNCH_OPTIONS:
                yield Hit(
                    node,
                    f"'{key}' is a launch option, not a meta-parameter: pass it as "
                    f"triton.Config({{...}}, {key}=...) instead of inside the dict",
                )
                continue
            candidates = [c for c in constexprs if c not in config.values] or [
                p for p in params if p not in config.values
            ]
            close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            quote = '"' if text(node).endswith('"') else "'"
            the_fix = (
                fix(f"Use '{close[0]}'", edit(node, f"{quote}{close[0]}{quote}")) if close else None
            )
            yield Hit(
                node,
                f"triton.Config sets '{key}', which is not a parameter of {ctx.kernel.name}{hint}",
                fix=the_fix,
            )


def _heuristic_functions(ctx: KernelContext, node: Node) -> list[Node]:
    value = unparen(node)
    if value is None:
        return []
    if value.type == "lambda":
        return [value]
    if value.type == "identifier" and text(value) in ctx.module.functions:
        # The definition in force when the decorator ran: the last one above the kernel.
        name = text(value)
        root = ctx.kernel.outer
        while root.parent is not None:
            root = root.parent
        before = [
            node
            for node in iter_descendants(root)
            if node.type == "function_definition"
            and text(node.child_by_field_name("name")) == name
            and node.start_byte < ctx.kernel.outer.start_byte
            and (node.parent is None or node.parent.type != "decorated_definition")
        ]
        if before and enclosing_function(before[-1]) is None:
            return [before[-1]]
    return []


@check("heuristics_unknown_arg", needles=(b'heuristics',))
def heuristics_unknown_arg(ctx: KernelContext) -> Iterator[Hit]:
    params = [p.name for p in ctx.kernel.params]
    for target, value in ctx.kernel.heuristics.items():
        for function in _heuristic_functions(ctx, value):
            for key_node, key in meta_keys(function):
                if key in params:
                    continue
                hint, the_fix = did_you_mean(key_node, key, params)
                yield Hit(
                    key_node,
                    f"the heuristic for {target} reads args['{key}'], but '{key}' is not a parameter "
                    f"of {ctx.kernel.name}{hint}",
                    fix=the_fix,
                )
