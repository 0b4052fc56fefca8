"""Rule induction with an LLM (AdaExplore's extraction and merge, made cheaper and stricter).

For each failure of the log that no builtin rule explains (compile errors and runtime errors of a
candidate; numeric mismatches, AdaExplore's `max_difference` records, teach nothing and are left
out), one call asks the model for exactly one sentence starting "You cannot …": the minimal
prohibited action the log implies, with no fix, alternative, reason or consequence, within the
error's scope, or exactly "no guidance" when the log implies no one action (the failure is then
discarded: claimed in the log as `no-guidance`, so it costs one call, once).

A rule is merged into the learned memory (the TSL rules of `.tritonsmith/rules.toml`) cheapest
test first:

1. a failure whose normalised signature is the template of a learned rule counts into that rule
   with no call at all (AdaExplore's "cheap dedup first": hash the normalised error text);
2. after extraction, lexical filters: normalised-text equality or token Jaccard >= 0.9 is a
   duplicate, < 0.5 against every rule is a new rule;
3. only for the close calls in between, AdaExplore's strict judge (one JSON answer:
   `is_duplicate, matched_index, confidence, reason`; a duplicate when confidence > 0.5), shown
   only the close rules rather than the whole memory.

Counts, provenance, the generality filter and the lifecycle are induction's (`induce.py`): a rule
is active only once it is general and seen `Thresholds.count` times in `Thresholds.kernels`
kernels. The calls run with no lock held; the merge then happens under the pack's lock and the
failure log's claim (`learned.py`), against the pack as it is by then, so a learner running at
the same time loses nothing and nothing is counted twice.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from ..rules import Rule
from ..state.failure_log import FailureLog
from ..state.learned import HEADER, learned_path, load_learned, pack_lock
from ..state.signature import core_message, error_type, normalise
from .induce import (
    _STOP,
    Cluster,
    Learned,
    Thresholds,
    _builtin_names,
    _lifecycle,
    _merged,
    _new_rule,
    _next_code,
    inducible,
)

__all__ = [
    "EXTRACT_SYSTEM",
    "JUDGE_SYSTEM",
    "NO_GUIDANCE",
    "LLMInduction",
    "Merge",
    "TextModel",
    "anthropic_model",
    "classify",
    "induce_with_llm",
    "jaccard",
    "normalised_text",
    "parse_judgement",
    "parse_rule",
]

log = logging.getLogger(__name__)

NO_GUIDANCE = "no-guidance"  # what a discarded failure is claimed as in the failure log
DUPLICATE_AT = 0.9  # token Jaccard at or above which two rules are the same without asking
DISTINCT_BELOW = 0.5  # below this against every rule, a rule is new without asking
JUDGE_CONFIDENCE = 0.5  # AdaExplore: a judged duplicate counts when confidence > 0.5
_DEFAULT_THRESHOLDS = Thresholds()
_MAX_JUDGED = 10  # close rules shown to one judge call
_MAX_MESSAGE = 4000
_MAX_SNIPPET = 2000

EXTRACT_SYSTEM = """\
You turn one failed attempt at writing a Triton GPU kernel into one validity rule for a memory of
rules that later attempts are shown.

Read the code at the error and the error log. Answer with exactly one sentence that starts with
"You cannot" and states the minimal prohibited action that the log implies.
- State only what cannot be done: no fix, no alternative, no reason, no consequence.
- Stay within the error's scope (for example "inside a Triton kernel", "at compile time",
  "when launching a kernel").
- Name Triton's and Python's constructs (`tl.dot`, `else:`, a constexpr argument), never this
  kernel's own names, its line numbers or file paths.
- Do NOT guess. If the log does not clearly imply one prohibited action, answer exactly:
no guidance"""

JUDGE_SYSTEM = """\
You decide whether a new validity rule for Triton kernels duplicates one of a list of existing
rules. Be strict: it is a duplicate only when its core meaning is identical to an existing rule's
(the same prohibited action in the same scope), not when the two are merely related.

Answer with one JSON object and nothing else:
{"is_duplicate": true or false, "matched_index": the 1-based index of the existing rule or null,
 "confidence": a number from 0 to 1, "reason": "one sentence"}"""


class TextModel(Protocol):
    """What induction needs of a model: one prompt in, the answer's text out. The LLM proposers
    (`LLMProposer.ask`) are one, with their retries, spending cap and cost accounting."""

    def ask(self, system: str, user: str, *, purpose: str, max_tokens: int | None = None) -> str: ...


def anthropic_model(*, model: str | None = None, api_key: str | None = None, client: Any = None,
                    spending_cap_usd: float | None = 2.0, max_tokens: int = 1024) -> Any:
    """The Anthropic proposer as a `TextModel` (key from ANTHROPIC_API_KEY unless given; raises
    MissingAPIKeyError without one). `client` replaces the SDK client (tests replay responses)."""
    from ..search.proposers.anthropic_proposer import DEFAULT_MODEL, AnthropicProposer

    return AnthropicProposer(model=model or DEFAULT_MODEL, api_key=api_key, client=client, max_tokens=max_tokens,
                             spending_cap_usd=spending_cap_usd, reviser=False, temperature=None)


# -- extraction -------------------------------------------------------------------------------


def numeric_mismatch(failure: dict[str, Any]) -> bool:
    """A wrong answer rather than an error (AdaExplore drops `max_difference` records)."""
    text = f"{failure.get('message') or ''} {failure.get('stage') or ''}".lower()
    return any(word in text for word in ("max_difference", "max abs diff", "differs from the reference",
                                         "mismatch", "verify:compare", "allclose"))


def extraction_prompt(failure: dict[str, Any]) -> str:
    stage = str(failure.get("stage") or "compile")
    facts = ", ".join(f for f in (f"Triton {failure['triton_version']}" if failure.get("triton_version") else "",
                                  f"target {failure['target']}" if failure.get("target") else "") if f)
    snippet = str(failure.get("snippet") or "").rstrip()[:_MAX_SNIPPET] or "(not recorded)"
    message = core_message(str(failure.get("message") or ""))[:_MAX_MESSAGE]
    return (f"Failed at: {stage}{f' ({facts})' if facts else ''}\n\n"
            f"## Code at the error\n```python\n{snippet}\n```\n\n## Error log\n```\n{message}\n```\n")


def parse_rule(answer: str) -> str | None:
    """The rule in an extraction answer (its last line, as AdaExplore reads it), or None for
    "no guidance" and for anything that is not one "You cannot …" sentence."""
    lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
    if not lines:
        return None
    line = re.sub(r"^(?:[-*>]\s*|rule:\s*)", "", lines[-1], flags=re.IGNORECASE).strip().strip('"').strip()
    if re.fullmatch(r"no guidance\.?", line, re.IGNORECASE):
        return None
    if not line.startswith("You cannot "):
        return None
    body = re.sub(r"`[^`]*`", "``", line.rstrip("."))  # a period inside code is not a sentence's end
    if re.search(r"[.!?]\s+[A-Z]", body):
        return None  # more than one sentence: a reason or a fix came along
    return line if line.endswith(".") else line + "."


# -- merging ----------------------------------------------------------------------------------


def normalised_text(statement: str) -> str:
    """Lower case, quotes and backticks dropped, whitespace collapsed, no final period."""
    text = statement.lower().replace("`", "").replace('"', "").replace("'", "")
    return re.sub(r"\s+", " ", text).strip().rstrip(".").strip()


def _tokens(statement: str) -> set[str]:
    words = re.findall(r"[a-z0-9_]+(?:\.[a-z0-9_]+)*", statement.lower())
    return {w for w in words if w not in _STOP and w not in ("you", "cannot")}


def jaccard(a: str, b: str) -> float:
    """Token Jaccard similarity of two statements (stop words and "you cannot" left out)."""
    left, right = _tokens(a), _tokens(b)
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


@dataclass(frozen=True)
class Merge:
    """Where a new statement goes: `index` into the memory (None: a new rule), and how that was
    decided ("equal", "lexical", "judge", "distinct", "judged-distinct")."""

    index: int | None
    how: str
    similarity: float = 0.0
    reason: str = ""


def parse_judgement(answer: str, candidates: int) -> tuple[int | None, float, str]:
    """The judge's answer: (0-based index of the duplicate or None, confidence, reason). An
    answer that is not the JSON asked for counts as "not a duplicate" (logged)."""
    match = re.search(r"\{.*\}", answer, re.DOTALL)
    try:
        data = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        log.warning("the duplicate judge's answer is not JSON; treated as not a duplicate: %.200s", answer)
        return None, 0.0, "unreadable answer"
    confidence = data.get("confidence")
    confidence = float(confidence) if isinstance(confidence, (int, float)) and not isinstance(confidence, bool) else 0.0
    index = data.get("matched_index")
    reason = str(data.get("reason") or "")
    if data.get("is_duplicate") is not True or not isinstance(index, int) or isinstance(index, bool):
        return None, confidence, reason
    if not 1 <= index <= candidates or confidence <= JUDGE_CONFIDENCE:
        return None, confidence, reason
    return index - 1, confidence, reason


def judge_prompt(statement: str, existing: list[str]) -> str:
    listed = "\n".join(f"{i}. {rule}" for i, rule in enumerate(existing, start=1))
    return f"Existing rules:\n{listed}\n\nNew rule:\n{statement}\n"


def classify(statement: str, memory: list[str], model: TextModel | None) -> Merge:
    """Where `statement` goes in `memory` (statements): lexical filters first, the judge (one
    call, only the close rules listed) for the band in between; without a model the close calls
    are new rules."""
    normal = normalised_text(statement)
    best, best_score = None, -1.0
    close: list[tuple[float, int]] = []
    for index, existing in enumerate(memory):
        if normalised_text(existing) == normal:
            return Merge(index, "equal", 1.0)
        score = jaccard(statement, existing)
        if score > best_score:
            best, best_score = index, score
        if DISTINCT_BELOW <= score < DUPLICATE_AT:
            close.append((score, index))
    if best is not None and best_score >= DUPLICATE_AT:
        return Merge(best, "lexical", best_score)
    if not close or model is None:
        return Merge(None, "distinct", max(best_score, 0.0))
    close.sort(key=lambda item: (-item[0], item[1]))
    shown = [index for _, index in close[:_MAX_JUDGED]]
    answer = model.ask(JUDGE_SYSTEM, judge_prompt(statement, [memory[i] for i in shown]), purpose="judge",
                       max_tokens=512)
    matched, confidence, reason = parse_judgement(answer, len(shown))
    if matched is None:
        return Merge(None, "judged-distinct", confidence, reason)
    return Merge(shown[matched], "judge", confidence, reason)


# -- the induction run ------------------------------------------------------------------------


@dataclass
class LLMInduction:
    """What one run did: the rules it created or updated, and what it cost in calls."""

    learned: list[Learned] = field(default_factory=list)
    discarded: list[int] = field(default_factory=list)  # failures answered "no guidance"
    extraction_calls: int = 0
    judge_calls: int = 0
    signature_merges: int = 0  # failures counted by signature, with no call
    lexical_merges: int = 0
    judged_merges: int = 0


@dataclass
class _Target:
    """One rule of the run's working memory: an existing learned rule (by code) or a new one."""

    statement: str
    code: str | None = None
    failures: list[dict[str, Any]] = field(default_factory=list)


def _llm_provenance(count: int, kernels: int) -> str:
    return f"learned with an LLM from the failure log: {count} failures in {kernels} kernel{'s' if kernels != 1 else ''}"


def _statement_name(statement: str, taken: set[str]) -> str:
    body = re.sub(r"`([^`]*)`", r" \1 ", statement[len("You cannot "):] if statement.startswith("You cannot ") else statement)
    words = [w for w in re.findall(r"[a-z0-9]+", body.lower()) if w not in _STOP and not w.isdigit()]
    base = "-".join(words[:6]) or "learned-rule"
    name, suffix = base, 2
    while name in taken:
        name, suffix = f"{base}-{suffix}", suffix + 1
    return name


def _title(statement: str) -> str:
    text = statement.rstrip(".")
    return text if len(text) <= 80 else text[:77].rstrip() + "..."


def _plan(failures: Iterable[dict[str, Any]], rules: list[Rule], model: TextModel, report: LLMInduction) -> list[_Target]:
    """Phase one, with no lock held: each failure assigned to a rule of the memory (or a new one)
    by signature, extraction, lexical filters and the judge; discarded ones recorded."""
    targets = [_Target(r.statement, r.code) for r in rules if r.code.startswith("TSL")]
    by_template = {normalise(r.template): i for i, r in enumerate(r for r in rules if r.code.startswith("TSL"))
                   if r.template}
    for failure in failures:
        signature = normalise(str(failure.get("signature") or ""))  # as induction does: older signatures meet
        known = by_template.get(signature)
        if known is not None:
            targets[known].failures.append(failure)
            report.signature_merges += 1
            continue
        answer = model.ask(EXTRACT_SYSTEM, extraction_prompt(failure), purpose="rule extraction", max_tokens=512)
        report.extraction_calls += 1
        statement = parse_rule(answer)
        if statement is None:
            log.info("failure %s: no guidance (%.120s)", failure.get("id"), answer.strip())
            report.discarded.append(int(failure["id"]))
            continue
        merge = classify(statement, [t.statement for t in targets], model)
        if merge.how in ("judge", "judged-distinct"):  # the only outcomes that made a call
            report.judge_calls += 1
        if merge.index is None:
            targets.append(_Target(statement, failures=[failure]))
            by_template.setdefault(signature, len(targets) - 1)
            continue
        if merge.how == "judge":
            report.judged_merges += 1
        else:
            report.lexical_merges += 1
        targets[merge.index].failures.append(failure)
        by_template.setdefault(signature, merge.index)
    return [t for t in targets if t.failures]


def _fold(rules: list[Rule], targets: list[_Target], unclaimed: set[int], thresholds: Thresholds,
          taken_names: Iterable[str]) -> tuple[list[Rule], list[tuple[Learned, Cluster]]]:
    """Phase two, under the lock, against the pack as it is now (pure): each target's failures
    that are still unclaimed count into its rule; a new rule gets the next free TSL code (or
    joins a rule with the same statement that another learner wrote meanwhile)."""
    out = list(rules)
    position = {r.code: i for i, r in enumerate(out)}
    by_text = {normalised_text(r.statement): i for i, r in enumerate(out) if r.code.startswith("TSL")}
    taken = set(taken_names) | {r.name for r in out}
    number = _next_code(out)
    changes: list[tuple[Learned, Cluster]] = []
    for target in targets:
        failures = [f for f in target.failures if int(f["id"]) in unclaimed]
        if not failures:
            continue
        cluster = Cluster(str(failures[0].get("signature") or ""), failures)
        index = position.get(target.code) if target.code else by_text.get(normalised_text(target.statement))
        if index is None:
            name = _statement_name(target.statement, taken)
            taken.add(name)
            rule = replace(_new_rule(cluster, f"TSL{number:03d}", name), statement=target.statement,
                           title=_title(target.statement), provenance=_llm_provenance(cluster.count, len(cluster.kernels)),
                           category=error_type(cluster.template) or ("runtime" if cluster.runtime else "compile"))
            number += 1
            out.append(rule)
            index, new = len(out) - 1, True
            position[rule.code] = index
            by_text[normalised_text(rule.statement)] = index
        else:
            rule, new = _merged(out[index], cluster), False
            if rule.provenance.startswith("learned with an LLM"):
                rule = replace(rule, provenance=_llm_provenance(rule.count, len(rule.kernels)))
        rule = _lifecycle(rule, thresholds, cluster.kernel_names)
        out[index] = rule
        changes.append((Learned(rule, new, len(cluster.ids)), cluster))
    return out, changes


def induce_with_llm(root: Path, model: TextModel, *, thresholds: Thresholds = _DEFAULT_THRESHOLDS,
                    limit: int | None = None) -> LLMInduction:
    """Run LLM induction over a workspace's unclaimed failures now; write the learned pack.

    Args:
        root: the workspace root (its `.tritonsmith/`).
        model: who answers the extraction and judge prompts (`anthropic_model()`).
        thresholds: when a rule becomes active.
        limit: extract at most this many failures this run (the oldest first).

    Raises RulePackError (and changes nothing) when the workspace pack is malformed; the model's
    errors (ProposalError, ProposerStopped) end the run before anything is written.
    """
    from ..rules.pack import write_pack_atomic

    report = LLMInduction()
    log_ = FailureLog(root)
    try:
        pending = [f for f in reversed(log_.failures(limit=None))
                   if f.get("induced") is None and inducible(f) and not numeric_mismatch(f)]
        if limit is not None:
            pending = pending[:limit]
        if not pending:
            return report
        targets = _plan(pending, load_learned(root), model, report)
        with pack_lock(root), log_.claiming() as (failures, claim):
            unclaimed = {int(f["id"]) for f in failures}
            rules = load_learned(root)
            updated, changes = _fold(rules, targets, unclaimed, thresholds, _builtin_names())
            for learned, cluster in changes:
                claim(cluster.ids, learned.rule.code)
            claim([f for f in report.discarded if f in unclaimed], NO_GUIDANCE)
            if changes:
                write_pack_atomic(learned_path(root), updated, header=HEADER)
        report.learned = [learned for learned, _ in changes]
    finally:
        log_.close()
    return report
