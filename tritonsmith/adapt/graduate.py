"""Graduation: a learned rule gets a matcher and becomes a live static check.

A matcher is a tree-sitter query over a kernel's body (`rules/checks/query.py`: tree-sitter-python
grammar, the finding at the `@flag` capture, predicates from a small fixed vocabulary; data,
never code). It is proposed

- offline, derived where the pattern allows: when every failing example calls the same
  `triton.language` function, a query for that call, most specific first (a literal argument
  kind at a position or keyword all the examples share, then the keyword, then the bare call);
- or by the LLM (one call; the rule, its failing snippets, the grammar and the vocabulary in the
  prompt; a JSON answer with the query, or "no matcher").

A proposal is accepted only if it compiles, flags every failing example of the rule's cluster
(its `bad` snippet and the snippets of its failures in the log) and nothing in the known-good
code: the builtin rules' good examples, `tests/fixtures/do_not_flag/` and `examples/*.py` of a
source checkout (not `examples/mistakes/`), and any extra good sources the caller has (`adapt
graduate`: the experience memory's verified kernels and the search journal's compiled
candidates). Otherwise it is refused with the reason.

An accepted matcher is stored with the rule in the workspace pack (`check = "query"`,
`query = "..."`, written through `learned.update_learned`, under its lock) with severity
information: an active graduated rule shows in open editors as information only, a first
`tritonsmith rules review --accept` makes it a warning and a second one an error.
"""

from __future__ import annotations

import json
import logging
import re
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeAlias

from ..analysis.document import Document
from ..analysis.index import index_module
from ..errors import UsageError
from ..rules import Matcher, Rule, Severity, load_rules, pack_paths
from ..rules.checks.query import PREDICATES, QUERY_CHECK, QueryProblem, compile_query
from ..rules.context import KernelContext
from ..state.failure_log import FailureLog, logged_snippets
from ..state.learned import learned_path, load_learned, update_learned
from ..state.signature import named_types, normalise
from .construct import (
    Construct,
    construct_statement,
    describe,
    near_misses,
    queries,
    rewritten,
    shared,
    sibling_variants,
)
from .llm_induce import TextModel

__all__ = [
    "GRADUATE_SYSTEM",
    "Graduation",
    "MatcherVerdict",
    "derive_queries",
    "failing_examples",
    "graduate",
    "known_good",
    "parse_proposal",
    "verify_query",
]

log = logging.getLogger(__name__)

_REPO = Path(__file__).resolve().parents[2]
_LITERALS = ("float", "integer", "string", "true", "false", "none", "tuple", "list", "dictionary")
_WRAPPER = """\
import triton
import triton.language as tl


@triton.jit
def learned_example_kernel(x_ptr, n, BLOCK: tl.constexpr):
{body}
"""

GRADUATE_SYSTEM = f"""\
You write static checks for Triton GPU kernels as tree-sitter queries in the tree-sitter-python
grammar. Given a validity rule and the code of kernels that broke it, write one query that matches
the construct the rule prohibits in every one of those kernels and nothing in correct kernels.

- The query runs over the body of each @triton.jit function. Capture the node to flag as @flag.
- Use tree-sitter-python's node types and fields: call (function:, arguments:), attribute
  (object:, attribute:), identifier, argument_list, keyword_argument (name:, value:), integer,
  float, string, true, false, none, tuple, list, subscript, binary_operator, comparison_operator,
  if_statement, for_statement, else_clause, return_statement, assignment, ...
- Predicates: tree-sitter's #eq?, #not-eq?, #match?, #not-match?, #any-of?, #not-any-of?, and
  these (each takes one capture):
{chr(10).join(f"  #{name} {text}" for name, text in PREDICATES.items())}
  No other predicate, no directive.
- If no query can tell the prohibited construct from correct code, answer exactly: no matcher

Otherwise answer with one JSON object and nothing else:
{{"query": "the query", "reason": "one sentence: what it matches"}}"""


@dataclass(frozen=True)
class MatcherVerdict:
    """Whether a query may be a rule's check, and why not."""

    accepted: bool
    reason: str
    flagged: int = 0  # failing examples it flags
    examples: int = 0  # failing examples there are


@dataclass
class Graduation:
    """What graduating one rule did: the rule as written (or as it was), the query accepted (or
    None), and each proposal tried with its verdict."""

    rule: Rule
    query: str | None = None
    origin: str | None = None  # "given", "typed", "derived" or "llm"
    construct: Construct | None = None  # what a typed matcher describes
    tried: list[tuple[str, str, MatcherVerdict]] = field(default_factory=list)  # (origin, query, verdict)

    @property
    def accepted(self) -> bool:
        return self.query is not None


# -- examples ---------------------------------------------------------------------------------


def as_kernel(snippet: str) -> str:
    """A failing snippet as a file with one jit kernel (a whole file is kept as it is)."""
    if "@triton.jit" in snippet or "@jit" in snippet:
        return snippet
    body = textwrap.indent(textwrap.dedent(snippet).strip("\n"), "    ")
    return _WRAPPER.format(body=body or "    pass")


def failing_examples(rule: Rule, root: Path | None = None) -> list[str]:
    """The failing examples of a rule's cluster, as kernel files: its bad example and the
    snippets of its failures in the log, each once."""
    snippets = [rule.bad] if rule.bad else []
    if root is not None:
        snippets += logged_snippets(root, rule.failures)
    out: list[str] = []
    for snippet in snippets:
        source = as_kernel(snippet)
        if source not in out:
            out.append(source)
    return out


def known_good(extra: Iterable[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """Correct code a matcher must stay silent on, as (label, source): the builtin rules' good
    examples, the do-not-flag corpus and the examples of a source checkout, and `extra`."""
    out: list[tuple[str, str]] = []
    for rule in load_rules(pack_paths(None, include_user=False)):
        if rule.good:
            out.append((f"{rule.code} good example", rule.good))
    folders = [_REPO / "tests" / "fixtures" / "do_not_flag", _REPO / "examples"]
    for folder in folders:
        if folder.is_dir():
            for path in sorted(folder.glob("*.py")):  # not recursive: examples/mistakes/ is bad code
                out.append((str(path.relative_to(_REPO)), path.read_text(encoding="utf-8")))
    out.extend(extra)
    return out


# -- verification -----------------------------------------------------------------------------


def verify_query(rule: Rule, query: str, failing: Sequence[str], good: Sequence[tuple[str, str]]) -> MatcherVerdict:
    """Accept `query` as `rule`'s check only if it flags every failing example and no good code."""
    if not failing:
        return MatcherVerdict(False, "the rule has no failing example to check a matcher against")
    try:
        compile_query(query)
    except QueryProblem as error:
        return MatcherVerdict(False, f"malformed query: {error}", 0, len(failing))
    candidate = replace(rule, check=QUERY_CHECK, query=query, status="active")
    matcher = Matcher([candidate], version=None)
    if not matcher.rules:
        return MatcherVerdict(False, "the query cannot run as a check", 0, len(failing))
    flagged = sum(1 for source in failing if matcher.check_source(source))
    if flagged < len(failing):
        return MatcherVerdict(False, f"flags {flagged} of {len(failing)} failing examples", flagged, len(failing))
    for label, source in good:
        findings = matcher.check_source(source)
        if findings:
            line = findings[0].span.start[0] + 1
            return MatcherVerdict(False, f"fires on known-good code: {label}, line {line}", flagged, len(failing))
    return MatcherVerdict(True, f"flags all {len(failing)} failing examples and none of {len(good)} known-good files",
                   flagged, len(failing))


# -- offline derivation -----------------------------------------------------------------------


@dataclass
class _Call:
    name: str  # the triton.language function's short name
    positional: list[str]  # node type of each positional argument
    keywords: dict[str, str]  # keyword -> node type of its value


def _calls(source: str) -> list[_Call]:
    document = Document(source)
    index = index_module(document.root)
    out: list[_Call] = []
    for kernel in index.kernels:
        context = KernelContext(kernel, index, document.source, None)
        try:
            for call in context.nodes("call"):
                name = context.call_name(call)
                if not name or not name.startswith("triton.language.") or not context.in_body(call):
                    continue
                positional, keywords = context.args(call)
                out.append(_Call(name.rsplit(".", 1)[1], [n.type for n in positional],
                                 {key: value.type for key, (_, value) in keywords.items()}))
        finally:
            context.close()
    return out


def _query(name: str, arguments: str = "", predicates: str = "") -> str:
    args = f"\n   arguments: (argument_list{arguments})" if arguments else ""
    return (f"((call\n   function: (_) @fn{args}) @flag\n"
            f' (#ts-qualified? @fn "triton.language.{name}"){predicates})')


def derive_queries(failing: Sequence[str]) -> list[str]:
    """Candidate queries for what every failing example shares, most specific first: a call of
    the same `triton.language` function with a literal argument kind at a position or keyword,
    then with the keyword, then the bare call."""
    per_example = [_calls(source) for source in failing]
    if not per_example or not all(per_example):
        return []
    shared = set.intersection(*({c.name for c in calls} for calls in per_example))
    candidates: list[str] = []
    general: list[str] = []
    for name in sorted(shared):
        calls = [[c for c in calls if c.name == name] for calls in per_example]
        # Literal kinds at a position that some call of every example has.
        positions = set.intersection(*({(i, kind) for c in cs for i, kind in enumerate(c.positional)
                                        if kind in _LITERALS} for cs in calls))
        for position, kind in sorted(positions):
            candidates.append(_query(name, " . " + " . ".join(["(_)"] * position + [f"({kind})"])))
        keywords = set.intersection(*({(k, kind) for c in cs for k, kind in c.keywords.items()} for cs in calls))
        for keyword, kind in sorted(keywords):
            if kind in _LITERALS:
                candidates.append(_query(name, f" (keyword_argument name: (identifier) @_kw value: ({kind}))",
                                         f' (#eq? @_kw "{keyword}")'))
        for keyword in sorted({k for k, _ in keywords}):
            general.append(_query(name, " (keyword_argument name: (identifier) @_kw)", f' (#eq? @_kw "{keyword}")'))
        general.append(_query(name))
    return candidates + general


@dataclass(frozen=True)
class Typed:
    """A typed matcher proposal: the query, the failing files it must flag, the construct it
    describes (for the rule's statement)."""

    query: str
    files: list[str]
    construct: Construct


# -- the LLM's proposal -----------------------------------------------------------------------


def graduate_prompt(rule: Rule, failing: Sequence[str]) -> str:
    shown = "\n\n".join(f"### Failing kernel {i}\n```python\n{source.strip()}\n```"
                        for i, source in enumerate(failing[:5], start=1))
    messages = "\n".join(f"- {example}" for example in rule.examples[:3])
    return (f"## Rule\n{rule.statement}\n\n## Error messages\n{messages or '(none recorded)'}\n\n{shown}\n")


def parse_proposal(answer: str) -> str | None:
    """The query in the model's answer: the JSON's "query", else a fenced block; None for
    "no matcher" or an answer without a query."""
    text = answer.strip()
    if re.fullmatch(r"no matcher\.?", text, re.IGNORECASE):
        return None
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if match:
        try:
            data = json.loads(match.group(0))
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("query"), str) and data["query"].strip():
            return str(data["query"]).strip()
    fenced = re.search(r"```(?:query|scheme|tsq)?\s*\n(.*?)```", text, re.DOTALL)
    return fenced.group(1).strip() if fenced else None


# -- graduation -------------------------------------------------------------------------------


def _graduated(rule: Rule, query: str) -> Rule:
    return replace(rule, check=QUERY_CHECK, query=query, severity=Severity.INFORMATION)


Probe: TypeAlias = Callable[[str], "tuple[bool | None, str]"]
"""Compiles a variant: (whether it compiled, None when it cannot tell; the compiler's message)."""


def typed_proposals(root: Path, rule: Rule, compiles: Callable[[str], bool | None] | None = None,
                    probe: Probe | None = None
                    ) -> tuple[list[Typed], list[tuple[str, str]], list[str], str | None]:
    """Matchers from the failing construct (`construct.py`): the call at each recorded failure's
    error position, what the failures agree on, as queries with typed predicates. Returns
    (the proposals, the near misses that compile as known-good code, the failing construct as
    those near misses write it (`.to(tl.float8e5)`: what a user can write instead), why there
    are none). A constraint needs failures in at least two distinct kernels.

    Tried first, when the failures are calls of several `tl` functions: one matcher over all of
    them with what they agree on (`tl.exp`, `tl.log` and `tl.sqrt` of an int32 block fail alike,
    each seen once); with `probe`, first widened to the functions of the same family that the
    compiler rejects with the same signature when put in place of the failing call
    (`tl.atomic_xchg` next to `tl.atomic_max`; `tl.atomic_add`, which compiles, becomes contrast).
    Then each function or method seen in two kernels with its own pattern (one message can come
    from different constructs: `tl.sum` and `tl.cumsum` say the same of an axis)."""
    log_ = FailureLog(root)
    try:
        located = log_.located(list(rule.failures))
    finally:
        log_.close()
    if not located:
        return [], [], [], "no failure of this rule was recorded with its file and error position"
    described = [(source, row, col, identity, describe(source, row, col)) for source, row, col, identity in located]
    found = [(source, row, col, identity, c) for source, row, col, identity, c in described if c is not None]
    if len(found) < len(described):
        return [], [], [], "a failure's error position is not at a call or an operator in a jit function"
    groups: dict[tuple[str | None, str | None, str | None], list[tuple[str, int, int, str, Construct]]] = {}
    for source, row, col, identity, construct in found:
        groups.setdefault((construct.function, construct.method, construct.operator), []).append(
            (source, row, col, identity, construct))
    proposals: list[Typed] = []
    contrast: list[tuple[str, str]] = []
    named = named_types(rule.examples)  # the types the compiler objected to
    merged = shared([m[4] for m in found], across=True) if len({m[3] for m in found}) >= 2 else None
    if merged is not None:
        files = list(dict.fromkeys(m[0] for m in found))
        siblings, variants = _siblings(rule, found, probe, contrast) if probe is not None else ([], [])
        if siblings:
            widened = replace(merged, also=tuple(sorted({*merged.also, *siblings})))
            proposals += [Typed(q, files + variants, widened) for q in queries(widened, named)]
        if len(groups) > 1:
            proposals += [Typed(q, files, merged) for q in queries(merged, named)]
    operators = [m for m in found if m[4].operator]
    if merged is None and len(operators) < len(found) and len({m[3] for m in operators}) >= 2:
        # One message from operators and from calls (`a + b` and `tl.store(p, a)` of shapes that
        # do not broadcast): the operators, merged, are a matcher for theirs.
        merged_operators = shared([m[4] for m in operators], across=True)
        if merged_operators is not None:
            files = list(dict.fromkeys(m[0] for m in operators))
            proposals += [Typed(q, files, merged_operators) for q in queries(merged_operators, named)]
    usable = {key: members for key, members in groups.items() if len({m[3] for m in members}) >= 2}
    per_group = []
    for members in usable.values():
        common = shared([m[4] for m in members])
        if common is not None and (found_queries := queries(common, named)):
            per_group.append((common, found_queries))
    if per_group:
        levels = max(len(q) for _, q in per_group)
        files = list(dict.fromkeys(m[0] for members in usable.values() for m in members))
        proposals += [Typed("\n".join(q[min(level, len(q) - 1)] for _, q in per_group), files, per_group[0][0])
                      for level in range(levels)]
    if not proposals:
        kernels = len({identity for *_, identity, _ in found})
        return [], [], [], (f"its located failures are in {kernels} kernel; a matcher needs two" if kernels < 2 else
                        "no construct of its failures was seen in two kernels" if not usable else
                        "the failures are not one construct")
    fixes: list[str] = []
    if compiles is not None:
        seen: set[str] = set()
        for source, row, col, _, construct in found:
            for variant in near_misses(source, row, col, construct):
                if variant in seen:
                    continue
                seen.add(variant)
                if compiles(variant):
                    contrast.append((f"near miss of {construct.shown}", variant))
                    fixed = rewritten(construct, source, variant)
                    if fixed is not None and fixed not in fixes:
                        fixes.append(fixed)
    unique: dict[str, Typed] = {}
    for proposal in proposals:
        unique.setdefault(proposal.query, proposal)
    return list(unique.values()), contrast, fixes, None


def _siblings(rule: Rule, found: Sequence[tuple[str, int, int, str, Construct]], probe: Probe,
              contrast: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """The family functions that fail like the rule's failures in their place (qualified names,
    and those variants); the ones that compile go to `contrast`."""
    named = [m[4].function for m in found if m[4].function]
    asked: set[str] = set()
    siblings: list[str] = []
    variants: list[str] = []
    for source, row, col, _, construct in found:
        for name, variant in sibling_variants(source, row, col, construct, exclude=[*named, *asked]):
            asked.add(name)
            compiled, message = probe(variant)
            if compiled:
                contrast.append((f"{name.rsplit('.', 1)[-1]} in place of {construct.shown}", variant))
            elif compiled is False and rule.template and normalise(message) == rule.template:
                siblings.append(name)
                variants.append(variant)
    return siblings, variants


def _failing_targets(root: Path, rule: Rule, failing: Sequence[str], targets: Sequence[str],
                     compiles_for: Callable[[str, str], bool | None] | None) -> list[str]:
    """The targets the rule's failures were recorded for, when a failing example compiles for
    another of `targets`; else none (the rule holds for every target)."""
    if compiles_for is None:
        return []
    log_ = FailureLog(root)
    try:
        failed = log_.targets(list(rule.failures))
        located = log_.located(list(rule.failures))
    finally:
        log_.close()
    others = [t for t in targets if t not in failed]
    sources = [source for source, *_ in located] or list(failing)  # the whole file, where it was kept
    if not failed or not others or not sources:
        return []
    if any(compiles_for(sources[-1], target) for target in others):
        return sorted(failed)
    return []


def graduate(root: Path, code: str, *, model: TextModel | None = None, extra_good: Iterable[tuple[str, str]] = (),
             proposals: Sequence[str] = (), compiles: Callable[[str], bool | None] | None = None,
             probe: Probe | None = None, targets: Sequence[str] = (),
             compiles_for: Callable[[str, str], bool | None] | None = None) -> Graduation:
    """Find a matcher for learned rule `code` and store it with the rule when one is accepted.

    Tried in order: `proposals` (queries from the caller), the typed matchers of the failing
    construct (`typed_proposals`; with `compiles`, near-miss variants that compile join the
    known-good code), the older literal-kind derivations, then (with a model) the LLM's proposal.
    The first accepted one is written to the workspace pack. With `compiles_for` (source, target),
    a failing example is compiled for each of `targets` (the workspace's) the failures were not
    recorded for: where it compiles, the rule carries the targets it failed for and fires only
    for those (`Rule.targets`: fp8e4nv fails for sm_80 and compiles for sm_90).

    Raises UsageError for a code the pack has no learned rule of, RulePackError for a malformed
    pack; a model's errors (ProposalError, ProposerStopped) propagate.
    """
    rule = next((r for r in load_learned(root) if r.code == code), None)
    if rule is None or not rule.code.startswith("TSL"):
        raise UsageError(f"no learned rule {code} in {learned_path(root)}; "
                         "`tritonsmith rules review --all` lists the learned rules")
    if rule.status == "rejected":
        raise UsageError(f"{code} was rejected in review; a rejected rule does not graduate")
    failing = failing_examples(rule, root)
    good = known_good(extra_good)
    result = Graduation(rule)
    typed, contrast, fixes, why_not = typed_proposals(root, rule, compiles, probe)
    good += contrast

    def attempt(origin: str, query: str, examples: Sequence[str] | None = None) -> bool:
        verdict = verify_query(rule, query, examples if examples is not None else failing, good)
        result.tried.append((origin, query, verdict))
        log.info("%s: %s matcher %s: %s", code, origin, "accepted" if verdict.accepted else "refused", verdict.reason)
        if verdict.accepted:
            result.query, result.origin = query, origin
        return verdict.accepted

    def typed_attempts() -> bool:
        if why_not is not None:
            result.tried.append(("typed", "", MatcherVerdict(False, why_not)))
            return False
        for proposal in typed:
            if attempt("typed", proposal.query, proposal.files):
                result.construct = proposal.construct
                return True
        return False

    accepted = any(attempt("given", q) for q in proposals) or typed_attempts() or \
        any(attempt("derived", q) for q in derive_queries(failing))
    if not accepted and model is not None and failing:
        answer = model.ask(GRADUATE_SYSTEM, graduate_prompt(rule, failing), purpose="matcher proposal",
                           max_tokens=2048)
        query = parse_proposal(answer)
        if query is None:
            result.tried.append(("llm", "", MatcherVerdict(False, "the model proposed no matcher")))
        else:
            attempt("llm", query)
    if result.query is not None:
        query = result.query
        statement = advice = None
        construct = result.construct
        only_for = _failing_targets(root, rule, failing, targets, compiles_for)
        if result.origin == "typed" and construct is not None and not rule.reviewed and \
                rule.provenance.startswith("learned offline"):
            statement, advice = construct_statement(rule, construct, only_for, fixes)

        def store(rules: list[Rule]) -> list[Rule]:
            out = []
            for r in rules:
                if r.code == code:
                    r = replace(_graduated(r, query), targets=tuple(only_for))
                    if statement is not None:
                        r = replace(r, statement=statement, how_to_fix=advice or r.how_to_fix,
                                    title=statement.split(":")[0].removeprefix("You cannot ")[:80])
                out.append(r)
            return out

        written = update_learned(root, store)
        result.rule = next(r for r in written if r.code == code)
    return result
