"""The registry the check modules add to (`@check`, `@rule_check`), what a check yields (`Hit`),
the helpers that build a hit's fix, and each check's pre-filter (`NEEDLES`). The package imports
every check module, so importing `tritonsmith.rules.checks` fills the registry."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tree_sitter import Node

from ..context import KernelContext
from ..findings import Fix, Related, Span, SpanEdit
from ..model import Rule

__all__ = ["CHECKS", "NEEDLES", "RULE_CHECKS", "Check", "Hit", "RuleCheck", "check", "did_you_mean", "edit", "fix",
           "related", "rule_check"]


@dataclass
class Hit:
    """One violation found by a check: where, optionally what exactly, and how to fix it."""

    node: Node | Span
    message: str | None = None
    related: list[Related] = field(default_factory=list)
    fix: Fix | None = None
    secondary: bool = False  # another place of a mistake another hit reports (`Finding.secondary`)


Check = Callable[[KernelContext], Iterable[Hit]]
CHECKS: dict[str, Check] = {}
NEEDLES: dict[str, tuple[bytes, ...]] = {}
"""A pre-filter that keeps checking fast: a check with needles (`@check(name, needles=...)`) can
only find something when one of its byte strings occurs in the kernel's text, its launch sites
or the module's imports (which catch `from triton.language import arange as ar`). A check
without needles always runs."""


def check(name: str, *, needles: tuple[bytes, ...] | None = None) -> Callable[[Check], Check]:
    """Register a check under `name`, with its pre-filter (`NEEDLES`) when it has one."""

    def register(function: Check) -> Check:
        if name in CHECKS:
            raise ValueError(f"duplicate check name {name}")
        CHECKS[name] = function
        if needles is not None:
            NEEDLES[name] = needles
        return function

    return register


# A generic check bound to one rule: (check, pre-filter needles or None); raises ValueError with
# the reason when the rule cannot be checked this way.
RuleCheck = Callable[[Rule], "tuple[Check, tuple[bytes, ...] | None]"]
RULE_CHECKS: dict[str, RuleCheck] = {}


def rule_check(name: str) -> Callable[[RuleCheck], RuleCheck]:
    def register(function: RuleCheck) -> RuleCheck:
        if name in CHECKS or name in RULE_CHECKS:
            raise ValueError(f"duplicate check name {name}")
        RULE_CHECKS[name] = function
        return function

    return register


def edit(node: Node | Span, new_text: str) -> SpanEdit:
    return SpanEdit(node if isinstance(node, Span) else Span.of(node), new_text)


def fix(title: str, *edits: SpanEdit) -> Fix:
    return Fix(title, tuple(edits))


def did_you_mean(key_node: Node, key: str, candidates: Iterable[str]) -> tuple[str, Fix | None]:
    """For a misspelt name in a string key (`meta["BLOCK_SZE"]`): a "; did you mean ...?" hint
    and a fix that swaps in the closest candidate, or ("", None) when nothing is close."""
    close = difflib.get_close_matches(key, sorted(candidates), n=1, cutoff=0.6)
    if not close:
        return "", None
    raw = key_node.text or b""
    quote = '"' if raw.endswith(b'"') else "'"
    return f"; did you mean '{close[0]}'?", fix(f"Use '{close[0]}'", edit(key_node, f"{quote}{close[0]}{quote}"))


def related(node: Node | None, message: str) -> list[Related]:
    return [] if node is None else [Related(Span.of(node), message)]

