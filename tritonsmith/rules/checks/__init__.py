"""Static checks: the Python predicates behind the rules, registered by name.

A rule in a pack names its check (`check = "arange_pow2"`); the check is a function that takes
the `KernelContext` of one kernel and yields `Hit`s. The matcher turns hits into findings with the
rule's code, severity and message. Checks live in one module per catalogue category.

A few checks are generic and need the rule itself: `RULE_CHECKS` maps their names to a function
that binds one rule (its stored tree-sitter query, say) into a check plus its pre-filter, once
per matcher (`query.py`, the check of graduated learned rules).
"""

from __future__ import annotations

from .registry import (
    CHECKS,
    NEEDLES,
    RULE_CHECKS,
    Check,
    Hit,
    RuleCheck,
    check,
    did_you_mean,
    edit,
    fix,
    related,
    rule_check,
)

__all__ = ["CHECKS", "NEEDLES", "RULE_CHECKS", "Check", "Hit", "RuleCheck", "check", "did_you_mean", "edit",
           "fix", "related", "rule_check"]

# The check modules register themselves on import (`registry.py`).
from . import (  # noqa: F401
    atomics,
    autotune,
    calls,
    control_flow,
    data_structures,
    dot,
    launch,
    memory,
    query,
    reshape,
    shapes,
    typed,
    types,
)
