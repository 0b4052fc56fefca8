"""Rule documentation on the user's machine, for the diagnostics' rule links.

A diagnostic's code links to its rule's page (`codeDescription.href`). Pages are written here,
from the rules in force for the workspace (builtin, user and workspace packs, learned rules
included), as Markdown files in the user cache, and linked as `file:` URIs: the link works
offline, matches the installed version, and a learned rule, which has no page on any website,
has one too. `tritonsmith rules docs` still writes the builtin pages for a website.

A page is written the first time a diagnostic needs it and again when the rule's text changes
(a learned rule reviewed, a pack edited); nothing else touches the disk.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from ..rules import RuleSet
from ..rules.docs import rule_markdown

__all__ = ["RulePages"]

log = logging.getLogger(__name__)

_HEADER = "<!-- Written by the tritonsmith language server from the rules in force; regenerated as they change. -->\n"


def _cache_root() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("tritonsmith", appauthor=False)) / "rule-pages"


class RulePages:
    """`href(code)`: a `file:` URI to the rule's page, written when needed; None for a code no
    rule in force has (a compiler finding such as spills) or when the page cannot be written."""

    def __init__(self, rules: RuleSet, workspace: Path | None, folder: Path | None = None) -> None:
        self.rules = rules
        key = hashlib.sha256(str(workspace or "").encode()).hexdigest()[:12]
        self.folder = (folder or _cache_root()) / key  # per workspace: TSL001 is one rule per workspace
        self._written: dict[str, str | None] = {}  # code -> its page's URI, once written this session

    def href(self, code: str) -> str | None:
        if code in self._written:
            return self._written[code]
        rule = self.rules.get(code) if code.startswith("TS") else None
        uri = None
        if rule is not None:
            page = self.folder / f"{rule.code}.md"
            text = _HEADER + rule_markdown(rule)
            try:
                if not page.is_file() or page.read_text(encoding="utf-8") != text:
                    self.folder.mkdir(parents=True, exist_ok=True)
                    page.write_text(text, encoding="utf-8")
                uri = page.as_uri()
            except OSError as error:  # a read-only cache: the diagnostic goes without a link
                log.warning("rule page %s not written: %s", page, error)
        self._written[code] = uri
        return uri
