"""The validity-rule memory: the rule model, packs, the static matcher and error signatures."""

from __future__ import annotations

from .findings import Edit, Finding, Fix, Related, Span
from .matcher import Matcher, select_rules, suppressed_codes
from .model import Rule, Severity, VersionRange, parse_version
from .pack import RuleSet, import_adaexplore, load_pack, load_rules, pack_paths

__all__ = [
    "Edit",
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
    "pack_paths",
    "parse_version",
    "select_rules",
    "suppressed_codes",
]
