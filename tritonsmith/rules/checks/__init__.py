"""Static checks: the Python predicates behind the rules, registered by name.

A rule in a pack names its check (`check = "arange_pow2"`); the check is a function that takes
the `KernelContext` of one kernel and yields `Hit`s. The matcher turns hits into findings with the
rule's code, severity and message. Checks live in one module per catalogue category.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tree_sitter import Node

from ..context import KernelContext
from ..findings import Edit, Fix, Related, Span

__all__ = ["CHECKS", "Check", "Hit", "check", "edit", "fix", "related"]


@dataclass
class Hit:
    """One violation found by a check: where, optionally what exactly, and how to fix it."""

    node: Node | Span
    message: str | None = None
    related: list[Related] = field(default_factory=list)
    fix: Fix | None = None


Check = Callable[[KernelContext], Iterable[Hit]]
CHECKS: dict[str, Check] = {}


def check(name: str) -> Callable[[Check], Check]:
    def register(function: Check) -> Check:
        if name in CHECKS:
            raise ValueError(f"duplicate check name {name}")
        CHECKS[name] = function
        return function

    return register


def edit(node: Node | Span, new_text: str) -> Edit:
    return Edit(node if isinstance(node, Span) else Span.of(node), new_text)


def fix(title: str, *edits: Edit) -> Fix:
    return Fix(title, tuple(edits))


def related(node: Node | None, message: str) -> list[Related]:
    return [] if node is None else [Related(Span.of(node), message)]


# The check modules register themselves on import; they need the names above.
from . import (  # noqa: E402, F401
    atomics,
    autotune,
    calls,
    control_flow,
    data_structures,
    dot,
    launch,
    memory,
    reshape,
    shapes,
    types,
)
