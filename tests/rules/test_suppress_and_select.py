"""Suppression comments, rule selection and version gating in the matcher."""

from __future__ import annotations

import pytest

from tritonsmith.rules import Matcher, Rule, VersionRange, load_rules, pack_paths, select_rules
from tritonsmith.rules.matcher import suppressed_codes

BUILTIN = load_rules(pack_paths(None, include_user=False))
TS101 = BUILTIN.get("TS101")
TS102 = BUILTIN.get("TS102")

# Line 6 breaks TS101 (a range of 100) and TS102 (N is not constexpr) at once.
SOURCE = """import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, N):
    offs = tl.arange(0, 100) + tl.arange(0, N){comment}
    tl.store(x_ptr + offs, offs)
"""


def codes(source: str, rules=(TS101, TS102), **kwargs) -> list[str]:
    return sorted(f.code for f in Matcher(list(rules), version=(3, 9), **kwargs).check_source(source))


def with_comment(comment: str) -> str:
    return SOURCE.format(comment=comment)


def test_both_rules_fire_without_a_comment():
    assert codes(with_comment("")) == ["TS101", "TS102"]


@pytest.mark.parametrize("comment", [
    "  # tritonsmith: ignore[TS101]",
    "  # tritonsmith: ignore[arange-non-power-of-two]",
    "  # tritonsmith:ignore[ TS101 ]",
    "  # TritonSmith: Ignore[TS101]",
    "  # noqa: E501  # tritonsmith: ignore[TS101, TS999]",
])
def test_suppress_one_rule_by_code_or_name(comment):
    assert codes(with_comment(comment)) == ["TS102"]


def test_suppress_several_rules():
    assert codes(with_comment("  # tritonsmith: ignore[TS101, block-size-not-constexpr]")) == []


def test_bare_ignore_suppresses_every_rule():
    assert codes(with_comment("  # tritonsmith: ignore")) == []


@pytest.mark.parametrize("comment", [
    "  # tritonsmith: ignore[TS1]",  # no prefixes in suppressions
    "  # tritonsmith: ignore[TS102]",
    "  # tritonsmith ignore",
    "  # ignore[TS101]",
])
def test_other_comments_do_not_suppress_ts101(comment):
    assert "TS101" in codes(with_comment(comment))


def test_suppression_applies_to_its_own_line_only():
    source = SOURCE.replace(
        "def kernel(x_ptr, N):", "def kernel(x_ptr, N):  # tritonsmith: ignore"
    ).format(comment="")
    assert codes(source) == ["TS101", "TS102"]
    source = SOURCE.replace(
        "    tl.store", "    # tritonsmith: ignore[TS101]\n    tl.store"
    ).format(comment="")
    assert codes(source) == ["TS101", "TS102"]


def test_suppression_on_the_last_line_of_a_multi_line_finding():
    source = """import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr):
    offs = tl.arange(
        0, 100
    )  # tritonsmith: ignore[TS101]
    tl.store(x_ptr + offs, offs)
"""
    assert codes(source, rules=[TS101]) == []
    assert codes(source.replace("  # tritonsmith: ignore[TS101]", ""), rules=[TS101]) == ["TS101"]


def test_suppression_does_not_leak_through_the_cache():
    matcher = Matcher([TS101, TS102], version=(3, 9))
    assert len(matcher.check_source(with_comment("  # tritonsmith: ignore"))) == 0
    assert len(matcher.check_source(with_comment(""))) == 2
    assert len(matcher.check_source(with_comment("  # tritonsmith: ignore[TS102]"))) == 1


def test_suppressed_codes_parser():
    assert suppressed_codes("x = 1") is None
    assert suppressed_codes("x = 1  # tritonsmith: ignore") == set()
    assert suppressed_codes("# tritonsmith: ignore[TS101,  a-b ,]") == {"TS101", "a-b"}


# -- selection ----------------------------------------------------------------------------


def selected(**kwargs) -> set[str]:
    return {r.code for r in select_rules(BUILTIN, **kwargs)}


def test_select_by_code_prefix_and_name():
    everything = {r.code for r in BUILTIN}
    assert selected() == everything
    assert selected(select=["TS101"]) == {"TS101"}
    assert selected(select=["arange-non-power-of-two"]) == {"TS101"}
    ts1 = selected(select=["TS1"])
    assert ts1 == {c for c in everything if c.startswith("TS1")} and "TS101" in ts1
    assert selected(select=["TS101", "block-size-not-constexpr"]) == {"TS101", "TS102"}
    assert selected(select=["nothing-by-this-name"]) == set()


def test_ignore_by_code_prefix_and_name_and_wins_over_select():
    everything = {r.code for r in BUILTIN}
    assert selected(ignore=["TS101"]) == everything - {"TS101"}
    assert selected(ignore=["arange-non-power-of-two"]) == everything - {"TS101"}
    assert selected(ignore=["TS1"]) == {c for c in everything if not c.startswith("TS1")}
    assert selected(select=["TS1"], ignore=["TS101"]) == {
        c for c in everything if c.startswith("TS1")
    } - {"TS101"}
    assert selected(select=["TS101"], ignore=["TS1"]) == set()


def test_matcher_applies_select_and_ignore():
    source = with_comment("")
    assert codes(source, select=["TS101"]) == ["TS101"]
    assert codes(source, select=["block-size-not-constexpr"]) == ["TS102"]
    assert codes(source, ignore=["TS1"]) == []
    assert codes(source, ignore=["arange-non-power-of-two"]) == ["TS102"]
    full = Matcher(BUILTIN, version=(3, 9), select=["TS1"])
    assert {r.code for r in full.rules} <= {r.code for r in BUILTIN if r.code.startswith("TS1")}
    assert "TS101" in {f.code for f in full.check_source(source)}


# -- version gating -----------------------------------------------------------------------


def gated(spec: str) -> Rule:
    return Rule(**{**TS101.__dict__, "triton": VersionRange.parse(spec)})


@pytest.mark.parametrize(("spec", "version", "runs"), [
    ("<3.9", (3, 9), False),
    ("<3.9", (3, 8), True),
    (">=3.9", (3, 9), True),
    (">=3.9", (3, 6), False),
    (">=3.0,<3.5", (3, 4), True),
    (">=3.0,<3.5", (3, 5), False),
    ("==3.6", (3, 6), True),
    ("==3.6", (3, 7), False),
    ("", (3, 9), True),
    ("<3.9", None, True),  # an unknown version runs every rule
])
def test_version_gating(spec, version, runs):
    matcher = Matcher([gated(spec)], version=version)
    assert bool(matcher.rules) is runs
    assert bool(matcher.check_source(with_comment(""))) is runs


def test_builtin_rules_are_gated_by_version():
    newest = {r.code for r in Matcher(BUILTIN, version=(3, 9)).rules}
    oldest = {r.code for r in Matcher(BUILTIN, version=(3, 0)).rules}
    every = {r.code for r in Matcher(BUILTIN, version=None).rules}
    assert newest <= every and oldest <= every
    for rule in BUILTIN:
        if rule.check and rule.code in every:
            assert (rule.code in newest) is rule.applies_to((3, 9))
