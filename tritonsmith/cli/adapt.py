"""The command line of adaptation: `tritonsmith adapt induce` and `tritonsmith rules review`.

    tritonsmith adapt induce [PATH] [--min-count N] [--min-kernels N] [--format text|json]
                             [--llm --allow-upload [--model M] [--spending-cap USD] [--limit N]]
    tritonsmith adapt graduate CODE [PATH] [--llm --allow-upload [--model M]] [--format text|json]
    tritonsmith adapt run [TASKS] [--steps N] [--max-tasks N] [--time-limit S] [--synthesize N]
                          [--compare halves|baseline] [--proposer P] [--device D] [--format text|json]
    tritonsmith rules review [PATH] [--all] [--accept CODE] [--reject CODE] [--format text|json]

`adapt induce` runs offline induction over the workspace's failure log now and prints the rules
it learned or updated; with `--llm` (and consent to send failing snippets and messages to
Anthropic, `--allow-upload`; the key from ANTHROPIC_API_KEY) it runs LLM induction instead
(`adapt/llm_induce.py`). `adapt graduate` finds a matcher for a learned rule and stores it, so
the rule becomes a live check (`adapt/graduate.py`). `rules review` lists the pending learned
rules with their provenance; `--accept` makes a rule active (and a graduated rule an error, no
longer a warning), `--reject` keeps it as rejected (so it is not learned again). `adapt run` is
the adapt stage: search a folder of tasks (or LLM-synthesised ones) with the memory updated after
each, and report what was learned and pass@1 / fast_1 before and after (`adapt/run.py`).
`register` adds these to the main parser (`tritonsmith/cli/__init__.py`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..adapt.defaults import COMPARE_MODES, DEFAULT_STEPS, MIN_FAILURES, MIN_KERNELS
from ..errors import UsageError
from ..settings import Settings, find_workspace_root, read_pyproject

# Induction, the rules and the state are imported by the commands that use them: `register`
# runs on every `tritonsmith` command, `check` included.
if TYPE_CHECKING:
    from ..adapt.induce import Learned
    from ..rules import Rule

__all__ = ["cmd_adapt", "cmd_rules_review", "cmd_run", "register"]

log = logging.getLogger(__name__)


def register(commands: Any, rules_commands: Any) -> None:
    """Add `adapt …` to the top-level commands and `review` to the `rules` commands."""
    adapt = commands.add_parser("adapt", help="learn rules from the failures of this workspace")
    adapt_commands = adapt.add_subparsers(dest="adapt_command", required=True)
    induce_parser = adapt_commands.add_parser(
        "induce", help="cluster the failure log now and write learned rules to .tritonsmith/rules.toml")
    induce_parser.add_argument("path", nargs="?", default=".", metavar="PATH", help="a folder of the workspace")
    induce_parser.add_argument("--min-count", type=int, default=MIN_FAILURES, metavar="N",
                               help=f"failures before a cluster becomes a rule (default {MIN_FAILURES})")
    induce_parser.add_argument("--min-kernels", type=int, default=MIN_KERNELS, metavar="N",
                               help=f"distinct kernels before a rule is active (default {MIN_KERNELS})")
    induce_parser.add_argument("--format", choices=("text", "json"), default="text")
    _llm_arguments(induce_parser)
    induce_parser.add_argument("--limit", type=int, metavar="N", help="with --llm: extract at most N failures this run")
    graduate_parser = adapt_commands.add_parser(
        "graduate", help="find a matcher for a learned rule so that it becomes a live check")
    graduate_parser.add_argument("code", metavar="CODE", help="the learned rule (TSL...)")
    graduate_parser.add_argument("path", nargs="?", default=".", metavar="PATH", help="a folder of the workspace")
    graduate_parser.add_argument("--format", choices=("text", "json"), default="text")
    graduate_parser.add_argument("--no-compile", action="store_true",
                                 help="do not compile near-miss variants of the failures (the contrast set)")
    _llm_arguments(graduate_parser)
    _run_arguments(adapt_commands)
    adapt.set_defaults(handler=cmd_adapt)

    review = rules_commands.add_parser("review", help="review learned rules: list pending ones, accept or reject")
    review.add_argument("path", nargs="?", default=".", metavar="PATH", help="a folder of the workspace")
    review.add_argument("--accept", action="append", default=[], metavar="CODE", help="make a rule active")
    review.add_argument("--reject", action="append", default=[], metavar="CODE",
                        help="reject a rule (kept as rejected, so it is not learned again)")
    review.add_argument("--all", action="store_true", help="list every learned rule, not only pending ones")
    review.add_argument("--format", choices=("text", "json"), default="text")
    review.set_defaults(handler=cmd_rules_review)


def _llm_arguments(parser: Any) -> None:
    parser.add_argument("--llm", action="store_true", help="use Anthropic's models (key from ANTHROPIC_API_KEY)")
    parser.add_argument("--allow-upload", action="store_true",
                        help="consent to sending failing snippets and error messages to the model's provider")
    parser.add_argument("--model", help="the Anthropic model (default: the `model` setting's default)")
    parser.add_argument("--spending-cap", type=float, default=2.0, metavar="USD", help="stop spending above this")


def _text_model(args: argparse.Namespace) -> Any:
    """The model for `--llm`, after the consent check; None without `--llm`."""
    if not args.llm:
        return None
    if not args.allow_upload:
        raise UsageError("--llm sends failing kernel snippets and error messages to Anthropic: "
                         "consent with --allow-upload")
    from ..adapt.llm_induce import anthropic_model

    return anthropic_model(model=args.model, spending_cap_usd=args.spending_cap)


def _root(args: argparse.Namespace) -> Path:
    path = Path(args.path)
    if not path.exists():
        raise UsageError(f"{path}: no such file or folder")
    return find_workspace_root(path)


_SKIPPED_DIRS = frozenset({".git", ".tritonsmith", ".venv", "venv", "node_modules", "__pycache__", "build", "dist"})
_HIT_FILES = 2000  # a review reads at most this many files of the workspace


def _workspace_files(root: Path) -> list[Path]:
    """The workspace's Python files, in order, without hidden, virtual-env and build folders."""
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("."))
        found += [Path(folder) / f for f in sorted(files) if f.endswith(".py")]
        if len(found) >= _HIT_FILES:
            break
    return found[:_HIT_FILES]


def _hits(root: Path, rule: Rule, files: list[Path]) -> list[str]:
    """Where the rule's matcher fires in the workspace now ("kernels/a.py:12"): what accepting
    it would flag. Empty for a rule without a matcher (it only labels compile errors)."""
    if rule.check is None:
        return []
    from ..rules import Matcher
    from ..version import resolve_version

    matcher = Matcher([replace(rule, status="active")], version=resolve_version(None))
    out = []
    for path in files:
        try:
            source = path.read_bytes()
        except OSError:
            continue
        for finding in matcher.check_source(source):
            out.append(f"{path.relative_to(root)}:{finding.span.start[0] + 1}")
    return out


def _json(rule: Rule, hits: list[str]) -> dict[str, Any]:
    from ..rules.checks.query import QUERY_CHECK, predicates_in_words

    return {
        "code": rule.code, "name": rule.name, "status": rule.status, "reviewed": rule.reviewed,
        "hold": rule.hold, "statement": rule.statement, "category": rule.category,
        "severity": rule.severity.value, "count": rule.count, "kernels": len(rule.kernels),
        "first_seen": rule.first_seen, "last_seen": rule.last_seen, "failures": list(rule.failures),
        "signatures": list(rule.signatures), "template": rule.template, "examples": list(rule.examples),
        "query": rule.query if rule.check == QUERY_CHECK else None,
        "conditions": predicates_in_words(rule.query) if rule.check == QUERY_CHECK and rule.query else [],
        "provenance": rule.provenance, "contradictions": list(rule.contradictions), "hits": hits,
        "targets": list(rule.targets),
    }


def cmd_adapt(args: argparse.Namespace) -> int:
    if args.adapt_command == "graduate":
        return cmd_graduate(args)
    if args.adapt_command == "run":
        return cmd_run(args)
    root = _root(args)
    if args.min_count < 1 or args.min_kernels < 1:
        raise UsageError("--min-count and --min-kernels must be at least 1")
    from ..adapt.induce import Thresholds, induce
    from ..state.learned import learned_path

    thresholds = Thresholds(count=args.min_count, kernels=args.min_kernels)
    model = _text_model(args)
    if model is not None:
        from ..adapt.llm_induce import induce_with_llm

        report = induce_with_llm(root, model, thresholds=thresholds, limit=args.limit)
        learned = report.learned
        if args.format == "text":
            print(f"{report.extraction_calls} extraction and {report.judge_calls} judge calls "
                  f"({model.usage.summary()}); {len(report.discarded)} failures gave no guidance; merged "
                  f"{report.signature_merges} by signature, {report.lexical_merges} lexically, "
                  f"{report.judged_merges} by the judge")
    else:
        learned = induce(root, thresholds=thresholds)
    if args.format == "json":
        print(json.dumps([_json(item.rule, []) | {"new": item.new, "added": item.added} for item in learned], indent=2))
        return 0
    if not learned:
        print("nothing learned: no failure in the log recurs often enough yet")
        return 0
    for item in learned:
        print(_learned_line(item))
    print(f"wrote {learned_path(root)}; review pending rules with `tritonsmith rules review`")
    return 0


def _learned_line(item: Learned) -> str:
    rule = item.rule
    kernels = len(rule.kernels)
    action = "new" if item.new else "updated"
    line = (f"{rule.code} {action:<7} {rule.status:<8} {rule.count} failures in {kernels} "
            f"kernel{'s' if kernels != 1 else ''} (+{item.added})  {rule.name}")
    return line + (f"\n    held: {rule.hold}" if rule.hold else "")


def _verified_kernels(root: Path) -> list[tuple[str, str]]:
    """Code of this workspace known to compile, as (label, source), which a graduating matcher
    must not flag: every verified kernel in the experience memory and the newest candidates the
    search journal saw compile."""
    from ..state.experience import ExperienceMemory
    from ..state.journal import JournalStore

    memory = ExperienceMemory(root)
    try:
        out = [(f"experience: {task.description}", solution.source)
               for task in memory.tasks() for solution in memory.solutions(task.key)]
    finally:
        memory.close()
    journal = JournalStore(root)
    try:
        out += [(f"search candidate that compiled #{i}", source) for i, source in enumerate(journal.compiled_sources(), 1)]
    finally:
        journal.close()
    return out


class _NearMissCompiler:
    """Whether a near-miss variant compiles for sm_90, in one sandboxed worker kept for all the
    variants (no GPU needed); None when it cannot tell (a worker failure). `outcome` also gives
    the compiler's message, for sibling probes that must fail the same way."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pool: Any = None
        self._seen: dict[tuple[str, str], tuple[bool | None, str]] = {}

    def outcome(self, source: str, target: str = "sm_90") -> tuple[bool | None, str]:
        from ..evaluator.pool import WorkerPool
        from ..evaluator.reports import compile_file

        if (source, target) in self._seen:
            return self._seen[(source, target)]
        try:
            if self.pool is None:
                self.pool = WorkerPool(size=1)
            reports = compile_file(self.pool, source, path=str(self.root / "near_miss.py"), targets=[target])
        except Exception as error:  # a worker that dies tells nothing about the variant
            log.warning("near miss not compiled: %s", error)
            return None, ""
        errors = [e["error"] for r in reports for e in r.results if e.get("error")]
        message = str(errors[0].get("message") or errors[0].get("text") or "") if errors else ""
        result = (bool(reports) and all(r.ok and r.results for r in reports), message)  # compiled, not skipped
        self._seen[(source, target)] = result
        return result

    def __call__(self, source: str) -> bool | None:
        return self.outcome(source)[0]

    def for_target(self, source: str, target: str) -> bool | None:
        """Whether `source` compiles for `target` (a learned rule's target predicate)."""
        return self.outcome(source, target)[0]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


def cmd_graduate(args: argparse.Namespace) -> int:
    from ..adapt.graduate import graduate

    root = _root(args)
    from ..version import installed_triton_version

    compiler = None if args.no_compile or installed_triton_version() is None else _NearMissCompiler(root)
    try:
        result = graduate(root, args.code, model=_text_model(args), extra_good=_verified_kernels(root),
                          compiles=compiler, probe=compiler.outcome if compiler is not None else None,
                          targets=Settings.merged(read_pyproject(root)).targets,
                          compiles_for=compiler.for_target if compiler is not None else None)
    finally:
        if compiler is not None:
            compiler.close()
    if args.format == "json":
        print(json.dumps({
            "code": args.code, "accepted": result.accepted, "origin": result.origin, "query": result.query,
            "tried": [{"origin": o, "query": q, "accepted": v.accepted, "reason": v.reason} for o, q, v in result.tried],
        }, indent=2))
        return 0 if result.accepted else 1
    for origin, query, verdict in result.tried:
        first = " ".join(query.split())[:120] if query else "(none)"
        print(f"{origin:<8} {'accepted' if verdict.accepted else 'refused '}  {verdict.reason}\n    {first}")
    if not result.accepted:
        print(f"{args.code}: no matcher accepted; the rule stays a prompt hint")
        return 1
    live = "shown as information" if result.rule.active else f"stored; shown once active ({result.rule.hold})"
    print(f"{args.code} graduated ({result.origin} matcher): {live}; "
          f"`tritonsmith rules review --accept {args.code}` makes it a warning, a second accept an error")
    return 0


def _describe(rule: Rule, hits: list[str]) -> str:
    from ..rules.checks.query import QUERY_CHECK, predicates_in_words

    kernels = len(rule.kernels)
    lines = [
        f"{rule.code}  {rule.status}{' (reviewed)' if rule.reviewed else ''}  {rule.name}  "
        f"({rule.severity.value}, {rule.category})",
        f"    {rule.statement}",
    ]
    if rule.hold:
        lines.append(f"    held: {rule.hold}")
    lines.append(f"    seen {rule.count} times in {kernels} kernel{'s' if kernels != 1 else ''}, "
                 f"first {rule.first_seen or '?'}, last {rule.last_seen or '?'}")
    if rule.failures:
        lines.append("    failures: " + ", ".join(str(f) for f in rule.failures))
    for signature in rule.signatures:
        lines.append(f"    signature: {signature}")
    if rule.check == QUERY_CHECK and rule.query:
        for words in predicates_in_words(rule.query):
            lines.append(f"    when: {words}")
        lines.append("    matcher: " + rule.query.replace("\n", "\n             "))
    for example in rule.examples[:3]:
        lines.append("    example: " + example.replace("\n", "\n             "))
    if rule.contradictions:
        lines.append("    contradicted by (flagged, then compiled): " + ", ".join(rule.contradictions))
    if rule.targets:
        lines.append("    only for: " + ", ".join(rule.targets) + " (it compiles for other targets)")
    if rule.check is not None:
        shown = ", ".join(hits[:5]) + (f", ... ({len(hits) - 5} more)" if len(hits) > 5 else "")
        lines.append(f"    flags {len(hits)} place{'s' if len(hits) != 1 else ''} in this workspace now"
                     + (f": {shown}" if hits else ""))
    return "\n".join(lines)


def _decide(rules: list[Rule], accept: list[str], reject: list[str]) -> list[Rule]:
    from ..rules import Severity
    from ..rules.checks.query import QUERY_CHECK

    by_code = {r.code for r in rules}
    unknown = [c for c in [*accept, *reject] if c not in by_code]
    if unknown:
        raise UsageError(f"no rule {', '.join(unknown)} in the workspace pack; "
                         "`tritonsmith rules review --all` lists the learned rules")
    out = []
    for rule in rules:
        if rule.code in accept:
            # A graduated rule is information until a person accepts it: then a warning, and an
            # error on a second accept.
            severity = rule.severity
            if rule.check == QUERY_CHECK and rule.query:
                severity = Severity.WARNING if rule.severity in (Severity.INFORMATION, Severity.HINT) else Severity.ERROR
            rule = replace(rule, status="active", reviewed=True, hold=None, severity=severity)
        elif rule.code in reject:
            rule = replace(rule, status="rejected", reviewed=True, hold=None)
        out.append(rule)
    return out


def cmd_rules_review(args: argparse.Namespace) -> int:
    from ..state.learned import load_learned, update_learned

    root = _root(args)
    both = set(args.accept) & set(args.reject)
    if both:
        raise UsageError(f"{', '.join(sorted(both))}: both accepted and rejected")
    if args.accept or args.reject:
        rules = update_learned(root, lambda rules: _decide(rules, args.accept, args.reject))
        for rule in rules:
            if rule.code in args.accept or rule.code in args.reject:
                verdict = f"accepted: active ({rule.severity.value})" if rule.code in args.accept else "rejected"
                print(f"{rule.code} {verdict}  {rule.name}")
        return 0
    rules = [r for r in load_learned(root) if r.template or r.code.startswith("TSL")]
    shown = rules if args.all else [r for r in rules if r.status == "pending"]
    files = _workspace_files(root) if any(r.check is not None for r in shown) else []
    hits = {r.code: _hits(root, r, files) for r in shown}
    if args.format == "json":
        print(json.dumps([_json(r, hits[r.code]) for r in shown], indent=2))
        return 0
    if not shown:
        print("no pending rules" if not args.all else "no learned rules")
        return 0
    print("\n\n".join(_describe(r, hits[r.code]) for r in shown))
    if not args.all:
        print(f"\n{len(shown)} pending; accept with `tritonsmith rules review --accept CODE`, "
              "reject with `--reject CODE`")
    return 0


# -- adapt run --------------------------------------------------------------------------------


def _run_arguments(adapt_commands: Any) -> None:
    run = adapt_commands.add_parser(
        "run", help="search a folder of tasks (or synthesised ones) with the memory learning after each; "
        "report the rules learned and pass@1 / fast_1 before and after")
    run.add_argument("tasks", nargs="?", metavar="TASKS",
                     help="a folder of KernelBench-format tasks with a Triton ModelNew each "
                     "(default: bench/problems/ of this checkout); with --synthesize, the seed problems")
    run.add_argument("--workspace", metavar="DIR",
                     help="the workspace whose memory learns (default: the current one)")
    run.add_argument("--steps", type=int, default=DEFAULT_STEPS, help=f"candidates per task (default {DEFAULT_STEPS})")
    run.add_argument("--max-tasks", type=int, metavar="N", help="stop after N tasks")
    run.add_argument("--time-limit", type=float, metavar="SECONDS", help="stop starting tasks after this long")
    run.add_argument("--synthesize", type=int, default=0, metavar="N",
                     help="ask Claude for N new tasks (seeded by TASKS) and run those; needs --allow-upload "
                     "and ANTHROPIC_API_KEY")
    run.add_argument("--compare", choices=COMPARE_MODES, default="halves",
                     help="before/after: the first half of the tasks against the second (default), or each "
                     "task searched first in a fresh workspace without memory (twice the cost)")
    run.add_argument("--proposer", choices=("auto", "offline", "anthropic", "openai"), default="auto",
                     help="who writes candidates (auto: a model when a key is set and --allow-upload is given)")
    run.add_argument("--allow-upload", action="store_true",
                     help="consent to sending kernels and seed problems to the model's provider")
    run.add_argument("--model", help="the model (anthropic, or the OpenAI-compatible server's)")
    run.add_argument("--base-url", help="an OpenAI-compatible endpoint for --proposer openai")
    run.add_argument("--spending-cap", type=float, default=10.0, metavar="USD",
                     help="for the whole run: synthesis and searches (default 10)")
    run.add_argument("--device", choices=("auto", "gpu", "cpu"), default="auto")
    run.add_argument("--no-induce", action="store_true", help="record failures but learn no rules")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--format", choices=("text", "json"), default="text")


def cmd_run(args: argparse.Namespace) -> int:
    import os
    import sys

    from ..adapt.run import RunOptions, adapt_run, default_tasks_folder
    from ..evaluator.verify import mode_for_device
    from ..search.setup import SetupError

    tasks = Path(args.tasks) if args.tasks else default_tasks_folder()
    if tasks is None:
        raise UsageError("adapt run: give a folder of tasks (KernelBench-format files with a Triton ModelNew); "
                         "bench/problems/ is the default only inside a tritonsmith checkout")
    if not tasks.is_dir():
        raise UsageError(f"{tasks}: not a folder")
    if args.steps < 1 or (args.max_tasks is not None and args.max_tasks < 1) or args.synthesize < 0:
        raise UsageError("--steps and --max-tasks must be at least 1, --synthesize not negative")
    if args.synthesize:
        if not args.allow_upload:
            raise UsageError("--synthesize sends seed problems to Anthropic: consent with --allow-upload")
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise UsageError("--synthesize needs an Anthropic API key: set ANTHROPIC_API_KEY")
    workspace = Path(args.workspace) if args.workspace else find_workspace_root(Path.cwd())
    options = RunOptions(
        tasks=tasks, workspace=workspace, steps=args.steps, device=mode_for_device(args.device), proposer=args.proposer,
        allow_upload=args.allow_upload, model=args.model, base_url=args.base_url, spending_cap_usd=args.spending_cap,
        synthesize=args.synthesize, max_tasks=args.max_tasks, time_limit_s=args.time_limit, compare=args.compare,
        seed=args.seed, induce=not args.no_induce)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        report = adapt_run(options, progress=progress)
    except SetupError as error:
        raise UsageError(error.user_message) from None
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.format == "json":
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.text())
    return 0
