"""Every builtin rule flags its bad example at the expected range and passes its good one."""

from __future__ import annotations

import pytest

from tritonsmith.rules import Matcher, Rule, load_rules, pack_paths
from tritonsmith.rules.checks import CHECKS

KNOWN_VERSIONS = [(3, minor) for minor in range(0, 10)]
BUILTIN = load_rules(pack_paths(None, include_user=False))
STATIC = [r for r in BUILTIN if r.check]


def example_version(rule: Rule) -> tuple[int, int]:
    """The newest Triton version the rule applies to: the one its examples are written for."""
    return max(v for v in KNOWN_VERSIONS if rule.applies_to(v))


def findings(rule: Rule, source: str):
    matcher = Matcher([rule], version=example_version(rule))
    return matcher.check_source(source)


def test_builtin_pack_loads_cleanly():
    assert not BUILTIN.errors, [e.user_message for e in BUILTIN.errors]
    assert len(BUILTIN) >= 40


def test_builtin_covers_every_catalogue_category():
    assert {r.category for r in BUILTIN} >= set("ABCDEFGHIJK")


def test_codes_and_names_are_unique():
    rules = list(BUILTIN)
    assert len({r.code for r in rules}) == len(rules)
    assert len({r.name for r in rules}) == len(rules)


@pytest.mark.parametrize("rule", STATIC, ids=lambda r: r.code)
def test_rule_names_a_registered_check(rule: Rule):
    assert rule.check in CHECKS


@pytest.mark.parametrize("rule", STATIC, ids=lambda r: r.code)
def test_bad_example_is_flagged_at_expected_range(rule: Rule):
    assert rule.bad and rule.expect, f"{rule.code} needs a bad example and its expected range"
    source = rule.bad.encode()
    found = findings(rule, rule.bad)
    texts = sorted(source[f.span.start_byte : f.span.end_byte].decode() for f in found)
    assert texts == sorted(rule.expect), f"{rule.code} flagged {texts}"


@pytest.mark.parametrize("rule", STATIC, ids=lambda r: r.code)
def test_good_example_is_not_flagged(rule: Rule):
    assert rule.good, f"{rule.code} needs a good example"
    assert findings(rule, rule.good) == []


@pytest.mark.parametrize("rule", [r for r in STATIC if r.fix], ids=lambda r: r.code)
def test_fix_makes_the_finding_go_away(rule: Rule):
    from tritonsmith.rules.fixes import apply_fixes

    fixed = apply_fixes(rule.bad.encode(), [f for f in findings(rule, rule.bad) if f.fix])
    assert fixed != rule.bad.encode(), f"{rule.code} says it has a fix but offered none"
    assert findings(rule, fixed.decode()) == [], fixed.decode()
