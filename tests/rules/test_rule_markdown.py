"""The rule text a hover shows (rules/docs.py): a learned rule in words, never its regexes."""

from __future__ import annotations

from tritonsmith.rules import Rule, Severity
from tritonsmith.rules.docs import rule_markdown

SIGNATURE = r"ValueError: Cannot bitcast data\-type of size (?:\d+) to data\-type of size (?:\d+)"


def learned(**changes: object) -> Rule:
    fields: dict = dict(
        code="TSL003", name="bitcast-width", title="t", category="ValueError", severity=Severity.INFORMATION,
        statement="You cannot write `.to(tl.int16, bitcast=True)` on fp32 1-D blocks: the widths differ.",
        signatures=(SIGNATURE,), status="active", count=3, kernels=("a1", "b2", "c3"),
        first_seen="2026-12-01", last_seen="2026-12-02",
        template="ValueError: Cannot bitcast data-type of size <n> to data-type of size <n>",
        examples=("    y = x.to(tl.int16, bitcast=True)",),
    )
    fields.update(changes)
    return Rule(**fields)


def test_a_learned_rule_reads_as_words_with_its_examples_and_review_state():
    text = rule_markdown(learned())
    assert SIGNATURE not in text and "(?:" not in text
    assert "- Learned rule: active, not reviewed yet" in text
    assert "`ValueError: Cannot bitcast data-type of size <n> to data-type of size <n>`" in text
    assert "- Seen 3 times in 3 kernels, first 2026-12-01, last 2026-12-02" in text
    assert "y = x.to(tl.int16, bitcast=True)" in text and "Contradicted" not in text


def test_contradictions_and_a_hold_show():
    text = rule_markdown(learned(reviewed=True, contradictions=("a.py:scan",), hold="demoted after a contradiction"))
    assert "- Learned rule: active, reviewed; demoted after a contradiction" in text
    assert "- Contradicted (flagged, then compiled): a.py:scan" in text


def test_builtin_rules_keep_their_signatures_and_provenance():
    rule = learned(code="TS601", signatures=("some message",))
    text = rule_markdown(rule)
    assert "- Matches these compiler or runtime messages: `some message`" in text and "- Provenance:" in text
