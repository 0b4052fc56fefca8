"""Which builtins a kernel may not call, and which names it binds itself (a local or parameter
shadows a builtin): shared by the loop checks (control_flow.py) and the builtin check (C6,
data_structures.py)."""

from __future__ import annotations

from tree_sitter import Node

from ...analysis.syntax import text, walk
from ..context import KernelContext

__all__ = ["UNSUPPORTED_BUILTINS", "local_names", "unsupported_builtin_name"]


def local_names(ctx: KernelContext) -> set[str]:
    """The names a kernel binds: its parameters, assignments and loop targets (memoised per kernel)."""
    memo = ctx.__dict__.setdefault("_control_flow_memo", {})
    if "local_names" not in memo:
        memo["local_names"] = _find_local_names(ctx)
    return memo["local_names"]


def _find_local_names(ctx: KernelContext) -> set[str]:
    names = set(ctx.assignments) | {p.name for p in ctx.kernel.params}
    for loop in ctx.nodes("for_statement"):
        left = loop.child_by_field_name("left")
        if left is not None:
            names |= {text(n) for n in walk(left) if n.type == "identifier"}
    return names


# Python builtins the Triton code generator does not resolve (it only knows len, list, range,
# float, int, isinstance, getattr, hasattr, print, min, max and tuple).
UNSUPPORTED_BUILTINS = frozenset(
    {
        "abs",
        "sum",
        "any",
        "all",
        "round",
        "sorted",
        "reversed",
        "enumerate",
        "zip",
        "map",
        "filter",
        "pow",
        "divmod",
        "iter",
        "next",
        "bool",
        "str",
        "type",
        "hex",
        "bin",
        "oct",
        "ord",
        "chr",
        "repr",
        "hash",
        "id",
        "dict",
        "set",
        "frozenset",
        "callable",
        "setattr",
        "delattr",
        "vars",
        "dir",
        "format",
    }
)


def unsupported_builtin_name(ctx: KernelContext, call: Node) -> str | None:
    """The builtin's name when `call` calls an unsupported Python builtin that no import, module
    function, parameter or local shadows."""
    function = call.child_by_field_name("function")
    if function is None or function.type != "identifier":
        return None
    name = text(function)
    if name not in UNSUPPORTED_BUILTINS:
        return None
    if (
        name in ctx.imports.names
        or name in ctx.module.functions
        or name in ctx.module.globals
        or name in local_names(ctx)
    ):
        return None
    return name
