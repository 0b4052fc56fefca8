"""Category I: atomics (catalogue I1-I5)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from tree_sitter import Node

from ...analysis.syntax import string_value, text
from ..context import KernelContext
from .registry import Hit, check, edit, fix

SEMANTICS = ("acquire", "release", "acq_rel", "relaxed")
SCOPES = ("gpu", "cta", "sys")

# Positions of `sem` and `scope` in each atomic's signature (triton/language/core.py).
_POSITIONS = {
    "atomic_add": (3, 4),
    "atomic_max": (3, 4),
    "atomic_min": (3, 4),
    "atomic_and": (3, 4),
    "atomic_or": (3, 4),
    "atomic_xor": (3, 4),
    "atomic_xchg": (3, 4),
    "atomic_cas": (3, 4),
    "atomic_store": (3, 4),
    "atomic_load": (2, 3),
    "atomic_poll": (2, 3),
}
# Atomics that accept only some of the semantics.
_ALLOWED = {
    "atomic_load": ("acquire", "relaxed"),
    "atomic_poll": ("acquire", "relaxed"),
    "atomic_store": ("release", "relaxed"),
}
_ALIASES = {
    "seq_cst": "acq_rel",
    "acquire_release": "acq_rel",
    "acqrel": "acq_rel",
    "strong": "acq_rel",
    "monotonic": "relaxed",
    "weak": "relaxed",
    "none": "relaxed",
    "device": "gpu",
    "global": "gpu",
    "agent": "gpu",
    "block": "cta",
    "cluster": "gpu",
    "system": "sys",
    "workgroup": "cta",
    "threadblock": "cta",
}


def _suggest(value: str, valid: tuple[str, ...]) -> str | None:
    alias = _ALIASES.get(value.lower())
    if alias in valid:
        return alias
    if value.lower() in valid:
        return value.lower()
    close = difflib.get_close_matches(value.lower(), valid, n=1, cutoff=0.5)
    return close[0] if close else None


def _requote(node: Node, value: str) -> str:
    quote = '"' if text(node).endswith('"') else "'"
    return f"{quote}{value}{quote}"


def _atomics(ctx: KernelContext) -> Iterator[tuple[Node, str, bool]]:
    """(call, op, is_method) for every atomic in the kernel body."""
    for call in ctx.nodes("call"):
        name = ctx.call_name(call)
        short = name.rsplit(".", 1)[-1] if name else None
        if short in _POSITIONS and ctx.imports.is_triton(name, short) and ctx.in_body(call):
            yield call, short, False  # type: ignore[misc]
    for call, _, attr in ctx.method_calls(*_POSITIONS):
        if ctx.in_body(call):
            yield call, text(attr), True


@check("atomic_sem_scope", needles=(b'atomic',))
def atomic_sem_scope(ctx: KernelContext) -> Iterator[Hit]:
    for call, op, method in _atomics(ctx):
        sem_pos, scope_pos = _POSITIONS[op]
        if method:  # `ptr.atomic_add(val, ...)`: the pointer is the receiver
            sem_pos, scope_pos = sem_pos - 1, scope_pos - 1
        for what, position, valid in (
            ("sem", sem_pos, _ALLOWED.get(op, SEMANTICS)),
            ("scope", scope_pos, SCOPES),
        ):
            node = ctx.arg(call, position, what)
            value = string_value(node)
            if node is None or value is None or value == "" or value in valid:
                continue
            if what == "sem" and value in SEMANTICS:
                message = f"tl.{op} only supports {' and '.join(valid)} semantics, not {value!r}"
            elif what == "sem":
                message = f"{value!r} is not a memory semantic; use one of {', '.join(valid)}"
            else:
                message = f"{value!r} is not a memory scope; use one of {', '.join(valid)}"
            suggestion = _suggest(value, valid)
            the_fix = (
                fix(f"Use {what}={suggestion!r}", edit(node, _requote(node, suggestion)))
                if suggestion is not None
                else None
            )
            yield Hit(node, message, fix=the_fix)
