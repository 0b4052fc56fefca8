"""The guardian: every candidate passes the static rule check before it costs an evaluation.

Error-severity findings (the rules in force: builtin, learned, imported) with a mechanical fix
are fixed; the rest go once to the proposer's `repair` when it has one (an LLM gets the
violations listed); a candidate still breaking a rule is dropped and counted. A candidate with
no error finding passes unchanged, so the guardian never turns a passing candidate into a
failing one (tests/search/test_guardian.py holds it to that).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..rules import Finding, Severity
from ..rules.fixes import apply_fixes
from ..workspace import Workspace

__all__ = ["RuleGuardian"]

Repair = Callable[[str, list[str]], str]


class RuleGuardian:
    """Checks candidates against a workspace's rules.

    Args:
        workspace: the rules in force (the same the editor and `tritonsmith check` use).
        repair: one chance for the proposer to fix what has no mechanical fix (an LLM); None
            offline.
    """

    def __init__(self, workspace: Workspace, repair: Repair | None = None) -> None:
        self.workspace = workspace
        self.repair = repair
        self.dropped = 0
        self.fixed = 0
        self._lock = threading.Lock()  # the matcher's caches are not made for two threads at once

    def _errors(self, source: str) -> list[Finding]:
        with self._lock:
            return [f for f in self.workspace.check_source(source) if f.severity is Severity.ERROR]

    def check(self, source: str) -> tuple[str | None, str]:
        """(the candidate to evaluate, or None when dropped) and what was done, in one line."""
        errors = self._errors(source)
        if not errors:
            return source, ""
        notes = []
        for _ in range(3):  # a fix can unblock another
            fixable = [f for f in errors if f.fix]
            if not fixable:
                break
            source = apply_fixes(source.encode(), fixable).decode("utf-8")
            self.fixed += len(fixable)
            notes.append("fixed " + ", ".join(sorted({f.code for f in fixable})))
            errors = self._errors(source)
        if errors and self.repair is not None:
            listed = [f"line {f.span.start[0] + 1}: {f.code} {f.message}" for f in errors]
            try:
                source = self.repair(source, listed)
            except Exception as error:  # a failed repair is a dropped candidate, not a crash
                notes.append(f"repair failed: {error}")
            else:
                notes.append("repaired by the proposer")
                errors = self._errors(source)
        if errors:
            self.dropped += 1
            first = errors[0]
            return None, (f"{len(errors)} rule violation(s), e.g. line {first.span.start[0] + 1}: "
                          f"{first.code} {first.message}")
        return source, "; ".join(notes)
