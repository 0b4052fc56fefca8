"""Offline rule induction: recurring failures become learned signature rules, without an LLM.

The failure log's failures that no builtin rule explains (compile errors, and runtime errors of a
candidate; numeric mismatches teach nothing and are left out) cluster by normalised signature
(`signature.normalise`). A cluster of at least three failures becomes a learned rule in the
workspace pack (`learned.py`): code `TSL` + digits, a kebab-case name and a "You cannot …"
statement from the message template, severity warning, the error type as category, an error
signature (a regex from the template, kept only if it matches every raw message of the cluster)
so that compile errors are labelled with it, the snippet at the first error as its bad example,
and provenance (failure ids, distinct kernels, first and last seen, example messages).

Better than AdaExplore, a rule becomes active only when it is general: it passes
`generality_filter` (no line numbers, paths, local or file-specific names) and was seen in at least
two distinct kernels (a kernel is its file's name and the kernel's name: one search failing the
same way 25 times is one kernel). Until then it is pending, with the reason in `hold`; a person can
accept or reject it (`tritonsmith rules review`), and a reviewed rule's status never changes here.
Each failure is counted once: it is claimed for its rule in the failure log in the same write
transaction that ends after the pack is written, under the pack's lock.
"""

from __future__ import annotations

import functools
import hashlib
import keyword
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeAlias

from ..rules import Rule, Severity
from ..state.failure_log import FailureLog
from ..state.learned import HEADER, learned_path, load_learned, pack_lock
from ..state.signature import API_NAMES, core_message, error_type, normalise, signature_regex
from .defaults import MIN_FAILURES, MIN_KERNELS

__all__ = ["Cluster", "Learned", "Thresholds", "cluster_failures", "generality_filter", "induce", "learn"]

_BUILTIN_CODE = re.compile(r"^TS\d{3}$")
_MAX_FAILURE_IDS = 20
_MAX_EXAMPLES = 3
_STOP = {"a", "an", "the", "of", "to", "in", "is", "be", "with", "and", "or", "for", "are", "by", "at", "as",
         "from", "it", "this", "that", "got", "n"}


@dataclass(frozen=True)
class Thresholds:
    """When a cluster becomes a rule, and when a rule becomes active."""

    count: int = MIN_FAILURES  # failures (distinct kernel texts) before a cluster becomes a rule
    kernels: int = MIN_KERNELS  # distinct kernels before a rule becomes active


def inducible(failure: dict[str, Any]) -> bool:
    """Compile errors and runtime errors of a candidate, not explained by a builtin rule."""
    stage = str(failure.get("stage") or "")
    if stage != "compile" and not stage.endswith(":candidate"):
        return False
    if any(_BUILTIN_CODE.match(code) for code in failure.get("rules") or []):
        return False
    signature = failure.get("signature")
    return bool(signature) and signature != "<empty>"


def _kernel_id(failure: dict[str, Any]) -> str:
    """A kernel across edits and variants: its file's name and its own name."""
    key = f"{Path(str(failure.get('path') or '')).name}::{failure.get('kernel')}"
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _example(message: str) -> str:
    text = "\n".join(core_message(message).splitlines()[:3])
    return text if len(text) <= 300 else text[:297] + "..."


@dataclass
class Cluster:
    """The failures that share one normalised signature."""

    template: str
    failures: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ids(self) -> list[int]:
        return [int(f["id"]) for f in self.failures]

    @property
    def count(self) -> int:
        """Occurrences: distinct kernel texts (saving the same broken file twice is one)."""
        return len({f.get("kernel_hash") or f"#{f['id']}" for f in self.failures})

    @property
    def kernels(self) -> set[str]:
        return {_kernel_id(f) for f in self.failures}

    @property
    def kernel_names(self) -> set[str]:
        return {str(f.get("kernel")) for f in self.failures if f.get("kernel")}

    @property
    def runtime(self) -> bool:
        return all(str(f.get("stage")) != "compile" for f in self.failures)

    def examples(self) -> list[str]:
        out: list[str] = []
        for failure in self.failures:
            example = _example(str(failure.get("message") or ""))
            if example and example not in out:
                out.append(example)
        return out[:_MAX_EXAMPLES]

    def snippet(self) -> str | None:
        return next((str(f["snippet"]) for f in self.failures if f.get("snippet")), None)

    def seen(self) -> tuple[str, str]:
        times = [float(f["at"]) for f in self.failures]
        return _iso(min(times)), _iso(max(times))


def cluster_failures(failures: Iterable[dict[str, Any]]) -> list[Cluster]:
    """The inducible failures grouped by signature, largest cluster first. A signature recorded
    by an older normalisation is normalised again (idempotent on current ones), so failures
    logged before and after an upgrade still meet."""
    clusters: dict[str, Cluster] = {}
    for failure in failures:
        if inducible(failure):
            template = normalise(str(failure["signature"]))
            clusters.setdefault(template, Cluster(template)).failures.append(failure)
    return sorted(clusters.values(), key=lambda c: (-c.count, c.template))


# -- the generality filter ------------------------------------------------------------------

_LINE = re.compile(r"\b(?:at\s+)?lines?\s*:?\s*\d+|\bat \d+:\d+|:\d+:\d+\b", re.IGNORECASE)
# A path: two separators, one at the start (`/tmp/x`, `./x`, `~/x`, `C:\\x`), or a source file's name.
_PATH = re.compile(r"(?:^|(?<=[\s'\"`(]))(?:[A-Za-z]:|~|\.{1,2})?(?:[/\\][\w.-]+)+|[\w.-]+[/\\][\w.-]+[/\\][\w./\\-]*"
                   r"|\b[\w-]+\.(?:py|pyi|toml|json|cu|cpp)\b")
_QUOTED = re.compile(r"[`'\"]([^`'\"\s]+)[`'\"]")
_SNAKE = re.compile(r"\b_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_*\b|\b_[a-z]\w*\b")
_CAMEL = re.compile(r"\b[a-z]+[A-Z][A-Za-z0-9]*\b")


def _api(name: str) -> bool:
    name = name.strip(":()[]{},.;")
    if not name or name.startswith("<"):
        return True
    head = re.split(r"[.\[(]", name)[0]
    return head in API_NAMES or name in API_NAMES or keyword.iskeyword(head) or name.startswith("__")


def generality_filter(statement: str, *, names: Iterable[str] = ()) -> str | None:
    """Why a rule's statement is too specific to be a rule, or None when it is general.

    Rejected: line numbers ("at line 223"), file paths, names that are not Triton's or Python's
    (snake_case, camelCase or quoted identifiers such as a kernel's name or a local variable), and
    any of `names` (the kernels and locals of the failures it came from). Placeholders (`<name>`,
    `<n>`) are general by construction.

        >>> generality_filter("You cannot have an `else:` at line 223")
        'names a line number (line 223)'
    """
    text = re.sub(r"<[a-z]+(?: \w+)?>", " ", statement)
    line = _LINE.search(text)
    if line:
        return f"names a line number ({line.group(0).strip()})"
    for path in _PATH.finditer(text):
        # `bf16/fp16/fp32` or `atomic_max/atomic_min` is what several messages said, not a path.
        if not all(_api(part) for part in re.split(r"[/\\]", path.group(0)) if part):
            return f"names a file path ({path.group(0)})"
    for name in names:
        if name and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text):
            return f"names a kernel or local variable ({name})"
    for match in _QUOTED.finditer(text):
        token = match.group(1)
        identifiers = re.findall(r"[A-Za-z_][\w.]*", token)
        for identifier in identifiers:
            if not _api(identifier):
                return f"names a file-specific identifier ({identifier})"
    for pattern in (_SNAKE, _CAMEL):
        for match in pattern.finditer(text):
            if not _api(match.group(0)):
                return f"names a file-specific identifier ({match.group(0)})"
    return None


# -- rules from clusters ----------------------------------------------------------------------


def _statement(template: str, runtime: bool) -> str:
    body = template.split(" | ")[0].rstrip(".")
    if runtime:
        return f'You cannot launch a Triton kernel that fails at run time with "{body}".'
    return f'You cannot write Triton kernel code that fails to compile with "{body}".'


def _name(template: str, taken: set[str]) -> str:
    first = template.split(" | ")[0]
    body = first[len(error_type(first) or ""):]
    body = re.sub(r"<[a-z]+(?: \w+)?>", " ", body)
    words = [w for w in re.findall(r"[a-z0-9]+", body.lower()) if w not in _STOP and not w.isdigit()]
    base = "-".join(words[:6]) or "learned-failure"
    name, suffix = base, 2
    while name in taken:
        name, suffix = f"{base}-{suffix}", suffix + 1
    return name


def _title(template: str) -> str:
    first = template.split(" | ")[0]
    return first if len(first) <= 80 else first[:77].rstrip() + "..."


def _signatures(cluster: Cluster) -> tuple[str, ...]:
    regex = signature_regex(cluster.template)
    if regex is None:
        return ()
    try:
        pattern = re.compile(regex)
    except re.error:
        return ()
    messages = [str(f.get("message") or "") for f in cluster.failures]
    return (regex,) if all(pattern.search(m) for m in messages) else ()


def _lifecycle(rule: Rule, thresholds: Thresholds, names: Iterable[str]) -> Rule:
    """Pending or active by the filter and the thresholds; reviewed and rejected rules keep theirs."""
    if rule.reviewed or rule.status == "rejected":
        return rule
    said = rule.statement
    if rule.how_to_fix and rule.how_to_fix in _builtin_advice():
        # A builtin rule's advice (`construct_statement`) is written by us and may name a placeholder (BLOCK_K).
        said = said.replace(rule.how_to_fix.rstrip("."), "")
    reason = generality_filter(said, names=names)
    if reason is not None:
        hold: str | None = f"not general: {reason}"
    elif rule.count < thresholds.count:
        hold = f"seen {rule.count} times; needs {thresholds.count}"
    elif len(rule.kernels) < thresholds.kernels:
        hold = f"seen in {len(rule.kernels)} kernel{'s' if len(rule.kernels) != 1 else ''}; needs {thresholds.kernels}"
    else:
        hold = None
    return replace(rule, status="pending" if hold else "active", hold=hold)


def _provenance(count: int, kernels: int) -> str:
    return f"learned offline from the failure log: {count} failures in {kernels} kernel{'s' if kernels != 1 else ''}"


def _new_rule(cluster: Cluster, code: str, name: str) -> Rule:
    first, last = cluster.seen()
    kernels = tuple(sorted(cluster.kernels))
    return Rule(
        code=code,
        name=name,
        title=_title(cluster.template),
        statement=_statement(cluster.template, cluster.runtime),
        severity=Severity.WARNING,
        category=error_type(cluster.template) or ("runtime" if cluster.runtime else "compile"),
        signatures=_signatures(cluster),
        bad=cluster.snippet(),
        provenance=_provenance(cluster.count, len(kernels)),
        count=cluster.count,
        status="pending",
        template=cluster.template,
        failures=tuple(cluster.ids[-_MAX_FAILURE_IDS:]),
        kernels=kernels,
        first_seen=first,
        last_seen=last,
        examples=tuple(cluster.examples()),
    )


def _merged(rule: Rule, cluster: Cluster) -> Rule:
    first, last = cluster.seen()
    kernels = tuple(sorted(set(rule.kernels) | cluster.kernels))
    examples = list(rule.examples)
    for example in cluster.examples():
        if example not in examples and len(examples) < _MAX_EXAMPLES:
            examples.append(example)
    count = rule.count + cluster.count
    return replace(
        rule,
        count=count,
        kernels=kernels,
        failures=tuple([*rule.failures, *cluster.ids][-_MAX_FAILURE_IDS:]),
        first_seen=min(filter(None, (rule.first_seen, first))),
        last_seen=max(filter(None, (rule.last_seen, last))),
        examples=tuple(examples),
        signatures=rule.signatures or _signatures(cluster),
        bad=rule.bad or cluster.snippet(),
        provenance=_provenance(count, len(kernels)) if rule.provenance.startswith("learned offline") else rule.provenance,
    )


@dataclass(frozen=True)
class Learned:
    """One rule that induction created or updated."""

    rule: Rule
    new: bool
    added: int  # failures counted into it this time


def _next_code(rules: Iterable[Rule]) -> int:
    numbers = [int(r.code[3:]) for r in rules if r.code.startswith("TSL") and r.code[3:].isdigit()]
    return max(numbers, default=0) + 1


StatementOf: TypeAlias = Callable[[Rule, "Cluster"], "tuple[str, str | None] | None"]
"""A statement (and its advice) for a rule from its cluster's failing construct, or None."""


def learn(rules: list[Rule], clusters: Iterable[Cluster], *, thresholds: Thresholds = Thresholds(),
          taken_names: Iterable[str] = (), statement_of: StatementOf | None = None,
          ) -> tuple[list[Rule], list[tuple[Learned, Cluster]]]:
    """Fold clusters into a pack's rules (pure): a cluster with a learned rule of its template
    adds to it; a cluster big enough becomes a new rule; smaller ones wait for more failures.
    A rule whose statement still restates the compiler's message gets `statement_of`'s, when
    it has one (the construct the failures share, `construct.construct_statement`).
    Returns the new rule list and what changed, each with the cluster it came from."""
    out = list(rules)
    index = {normalise(r.template): i for i, r in enumerate(out) if r.template}
    taken = set(taken_names) | {r.name for r in out}
    number = _next_code(out)
    changes: list[tuple[Learned, Cluster]] = []
    for cluster in clusters:
        position = index.get(cluster.template)
        if position is None:
            if cluster.count < thresholds.count:
                continue
            name = _name(cluster.template, taken)
            taken.add(name)
            rule = _new_rule(cluster, f"TSL{number:03d}", name)
            number += 1
            index[cluster.template] = len(out)
            out.append(rule)
            position, new = len(out) - 1, True
        else:
            rule, new = _merged(out[position], cluster), False
        if statement_of is not None and not rule.reviewed and rule.template and \
                rule.statement == _statement(rule.template, cluster.runtime):
            found = statement_of(rule, cluster)
            if found is not None:
                statement, advice = found
                rule = replace(rule, statement=statement, how_to_fix=advice or rule.how_to_fix)
        rule = _lifecycle(rule, thresholds, cluster.kernel_names)
        out[position] = rule
        changes.append((Learned(rule, new, len(cluster.ids)), cluster))
    return out, changes


@functools.cache
def _builtin_advice() -> frozenset[str]:
    from ..rules import load_rules, pack_paths

    return frozenset(text for r in load_rules(pack_paths(None, include_user=False)) for text in (r.how_to_fix, r.fix)
                     if text)


def _builtin_names() -> set[str]:
    from ..rules import load_rules, pack_paths

    return {r.name for r in load_rules(pack_paths(None, include_user=False))}


def _located_statement(log: FailureLog) -> StatementOf:
    """Offline statements from the failing construct: where every located failure of the
    rule's clusters (so far and now) is the same construct, the rule names it and what its
    operands were, with a related builtin rule's advice. Failures without a recorded file and
    error position, or at different constructs, leave the statement as it is."""
    from .construct import construct_statement, describe, shared

    def statement_of(rule: Rule, cluster: Cluster) -> tuple[str, str | None] | None:
        located = log.located([*rule.failures, *cluster.ids])
        constructs = [describe(source, row, col) for source, row, col, _ in located]
        if not constructs or any(c is None for c in constructs):
            return None
        common = shared([c for c in constructs if c is not None])
        return construct_statement(rule, common) if common is not None else None

    return statement_of


def induce(root: Path, *, thresholds: Thresholds = Thresholds()) -> list[Learned]:
    """Run offline induction over a workspace's failure log now; write the learned pack.

    Raises RulePackError (and changes nothing) when the workspace pack is malformed.
    """
    from ..rules.pack import write_pack_atomic

    log = FailureLog(root)
    try:
        with pack_lock(root), log.claiming() as (failures, claim):
            rules = load_learned(root)
            updated, changes = learn(rules, cluster_failures(failures), thresholds=thresholds,
                                     taken_names=_builtin_names(), statement_of=_located_statement(log))
            for learned, cluster in changes:
                claim(cluster.ids, learned.rule.code)
            if changes:
                write_pack_atomic(learned_path(root), updated, header=HEADER)
    finally:
        log.close()
    return [learned for learned, _ in changes]
