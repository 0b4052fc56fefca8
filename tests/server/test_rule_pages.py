"""Rule pages on this machine, for the diagnostics' links (issue 16, item 3)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tritonsmith.rules import RuleSet, load_rules, pack_paths
from tritonsmith.server.rule_pages import RulePages


def test_a_page_is_written_once_per_text_and_rewritten_when_the_rule_changes(tmp_path: Path):
    builtin = load_rules(pack_paths(None, include_user=False))
    pages = RulePages(builtin, tmp_path / "ws", folder=tmp_path / "cache")
    href = pages.href("TS101")
    assert href is not None and href.startswith("file://")
    page = next((tmp_path / "cache").glob("*/TS101.md"))
    assert page.as_uri() == href and "# TS101 " in page.read_text()
    assert pages.href("TS101") == href  # asked again: no second write
    assert pages.href("spills") is None and pages.href("TS999") is None  # no rule, no page
    # The rule's text changed (a pack edited, a learned rule reviewed): a new session rewrites it.
    ts101 = builtin.get("TS101")
    assert ts101 is not None
    changed = RuleSet([replace(ts101, statement="You cannot do this, now said differently.")])
    assert RulePages(changed, tmp_path / "ws", folder=tmp_path / "cache").href("TS101") == href
    assert "now said differently" in page.read_text()
    # Learned codes repeat across workspaces, so each workspace has its own folder.
    other = RulePages(builtin, tmp_path / "other", folder=tmp_path / "cache").href("TS101")
    assert other is not None and other != href


def test_a_cache_that_cannot_be_written_leaves_the_link_out(tmp_path: Path):
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the folder should be")
    pages = RulePages(load_rules(pack_paths(None, include_user=False)), None, folder=blocked)
    assert pages.href("TS101") is None
