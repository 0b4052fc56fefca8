"""The validity-rule memory: the rule model, packs, the static matcher and error signatures."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .findings import Finding, Fix, Related, Span, SpanEdit
from .model import Rule, Severity, VersionRange, parse_version
from .pack import RuleSet, import_adaexplore, load_pack, load_rules, match_rules, pack_paths

if TYPE_CHECKING:
    from .matcher import Matcher, select_rules, suppressed_codes

_MATCHER_NAMES = frozenset({"Matcher", "select_rules", "suppressed_codes"})


def __getattr__(name: str) -> Any:
    # The matcher brings every check and the analysis with it (0.15 s of imports): a `check`
    # answered from its cache (check_cache.py) reads findings and rules without it.
    if name in _MATCHER_NAMES:
        from . import matcher

        return getattr(matcher, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "SpanEdit",
    "Finding",
    "Fix",
    "Matcher",
    "Related",
    "Rule",
    "RuleSet",
    "Severity",
    "Span",
    "VersionRange",
    "import_adaexplore",
    "load_pack",
    "load_rules",
    "match_rules",
    "pack_paths",
    "parse_version",
    "select_rules",
    "suppressed_codes",
]
