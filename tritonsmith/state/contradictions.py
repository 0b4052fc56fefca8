"""Self-correction: a graduated rule whose matcher flags a kernel that then compiles was wrong.

Callers that compile a file (`tritonsmith verify`, the server's save-triggered compile) call
`record_compiled` once the compile succeeded. Each graduated learned rule (a query check) that
flags the file records the contradiction (the file and the kernel, once each) in the workspace
pack; the first demotes the rule a step (error -> warning -> information), the second retracts
its matcher (the rule stays, without a check, as a prompt hint and for labelling errors, with
the reason in `hold`). Reviewed rules are corrected too: the compiler outranks a review.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from ..rules import Matcher, Rule, Severity
from ..rules.checks.query import QUERY_CHECK
from .learned import load_learned, update_learned

__all__ = ["RETRACT_AFTER", "record_compiled"]

log = logging.getLogger(__name__)

RETRACT_AFTER = 2  # contradictions before a matcher is retracted
_DEMOTED = {Severity.ERROR: Severity.WARNING, Severity.WARNING: Severity.INFORMATION}


def record_compiled(root: Path, source: str, path: str) -> list[str]:
    """A file that compiled: the codes of the graduated rules it contradicts, corrected in the
    workspace pack (demoted, or their matcher retracted)."""
    graduated = [r for r in load_learned(root) if r.check == QUERY_CHECK and r.query and r.active]
    if not graduated:
        return []
    hits: dict[str, set[str]] = {}
    for finding in Matcher(graduated, version=None).check_source(source):
        hits.setdefault(finding.code, set()).add(f"{path}:{finding.span.start[0] + 1}")
    if not hits:
        return []

    def correct(rules: list[Rule]) -> list[Rule]:
        out = []
        for rule in rules:
            where = hits.get(rule.code)
            if where and rule.check == QUERY_CHECK:
                rule = _contradicted(rule, sorted(where)[0])
            out.append(rule)
        return out

    update_learned(root, correct)
    for code in sorted(hits):
        log.warning("%s flagged %s, which compiled: the rule is corrected", code, path)
    return sorted(hits)


def _contradicted(rule: Rule, where: str) -> Rule:
    if where in rule.contradictions:
        return rule
    contradictions = (*rule.contradictions, where)
    if len(contradictions) >= RETRACT_AFTER:
        return replace(rule, contradictions=contradictions, check=None, query=None, severity=Severity.WARNING,
                       hold=f"matcher retracted: {len(contradictions)} kernels it flagged compiled "
                            f"({', '.join(contradictions)})")
    return replace(rule, contradictions=contradictions, severity=_DEMOTED.get(rule.severity, rule.severity))
