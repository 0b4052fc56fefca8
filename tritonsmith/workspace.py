"""The checking setup of one workspace: its settings, its rule packs and the matcher.

Both the command line and the language server go through `Workspace`, so that a file checked
from either gets the same findings. `reload()` re-reads the packs (after a pack was edited) and
keeps the errors of packs that could not be read, for the caller to show.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .errors import RulePackError
from .rules import Finding, RuleSet, load_rules, pack_paths
from .settings import Settings
from .version import resolve_version

if TYPE_CHECKING:
    from .rules.matcher import Matcher

__all__ = ["Workspace"]


class Workspace:
    def __init__(self, root: Path | None, settings: Settings, *, include_user_packs: bool = True,
                 editing: bool = False) -> None:
        self.root = root
        self.settings = settings
        self.include_user_packs = include_user_packs
        # For an editor (the language server): the matcher remembers what each kernel's
        # statements did, so that the check after an edit interprets only what it changed. A
        # check of files from disk checks each kernel once, and would only pay for the memory.
        self.editing = editing
        self.rules: RuleSet = RuleSet()
        self._matcher: Matcher | None = None
        self.reload()

    @property
    def version(self) -> tuple[int, int]:
        return resolve_version(self.settings.triton_version)

    @property
    def pack_errors(self) -> list[RulePackError]:
        return self.rules.errors

    def pack_paths(self) -> list[Path]:
        return pack_paths(self.root, self.settings.rule_packs, include_user=self.include_user_packs)

    def same_as(self, other: Workspace) -> bool:
        """Whether `other` checks exactly as this one does (root, settings, rules; no pack
        errors in either): the language server then keeps this one, with its caches."""
        return (self.root == other.root and self.settings == other.settings and self.version == other.version
                and self.editing == other.editing
                and self.include_user_packs == other.include_user_packs
                and not self.rules.errors and not other.rules.errors and self.rules.rules == other.rules.rules)

    def reload(self, settings: Settings | None = None) -> None:
        """Re-read every pack and rebuild the matcher (its cache starts empty)."""
        if settings is not None:
            self.settings = settings
        self.rules = load_rules(self.pack_paths())
        self._matcher = None

    @property
    def matcher(self) -> Matcher:
        """The rules' matcher, built on first use: a `check` answered from its cache never needs it."""
        if self._matcher is None:
            from .rules.matcher import Matcher

            self._matcher = Matcher(
                self.rules, version=self.version, select=self.settings.select, ignore=self.settings.ignore,
                targets=self.settings.targets, remember_statements=self.editing,
            )
        return self._matcher

    def check_source(self, source: str | bytes, *, jobs: int = 1) -> list[Finding]:
        return self.matcher.check_source(source, jobs=jobs)
