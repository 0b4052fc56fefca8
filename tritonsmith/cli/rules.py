"""`tritonsmith rules list | show ID | import FILE | docs [--check]`: the rules in force, one
rule with its examples, an AdaExplore memory file imported as a rule pack, and the generated
docs/rules pages. `rules review` is adaptation's (adapt.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..settings import find_workspace_root
from .common import add_rule_options, open_workspace, read_text

# The rules are imported where they are used: `--help` and the other commands do not wait 0.1 s
# for them to import.
if TYPE_CHECKING:
    from ..rules import Rule


def register(commands: Any) -> Any:
    """Add `rules …` to the top-level commands; return its sub-commands, where adapt.py adds
    `review`."""
    rules = commands.add_parser("rules", help="list, show, import or document rules")
    rules_commands = rules.add_subparsers(dest="rules_command", required=True)
    listing = rules_commands.add_parser("list", help="list the rules in force")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    add_rule_options(listing)
    show = rules_commands.add_parser("show", help="show one rule with its examples")
    show.add_argument("id", metavar="ID", help="rule code or name")
    add_rule_options(show)
    importing = rules_commands.add_parser("import", help="import an AdaExplore memory file (rule||count per line)")
    importing.add_argument("file", metavar="FILE")
    importing.add_argument("--user", action="store_true", help="into the user pack instead of the workspace's")
    docs = rules_commands.add_parser("docs", help="write docs/rules/<ID>.md for every builtin rule")
    docs.add_argument("--output", default="docs/rules")
    docs.add_argument("--check", action="store_true", help="exit 1 if the docs are out of date")
    rules.set_defaults(handler=cmd_rules)
    return rules_commands


def _rule_summary(rule: Rule) -> str:
    return f"{rule.code:7} {rule.severity.value:11} {rule.name}: {rule.title}"


def cmd_rules(args: argparse.Namespace) -> int:
    if args.rules_command == "import":
        return _rules_import(args)
    if args.rules_command == "docs":
        from ..rules.docs import check_docs, write_docs

        out = Path(args.output)
        if args.check:
            stale = check_docs(out)
            for name in stale:
                print(f"out of date: {out / name}", file=sys.stderr)
            if stale:
                print("run `tritonsmith rules docs` to regenerate", file=sys.stderr)
            return 1 if stale else 0
        written = write_docs(out)
        print(f"wrote {len(written)} files to {out}")
        return 0
    workspace = open_workspace(args)
    if args.rules_command == "list":
        rules = sorted(workspace.rules, key=lambda r: r.code)
        if args.format == "json":
            print(json.dumps([
                {"code": r.code, "name": r.name, "severity": r.severity.value, "category": r.category,
                 "title": r.title, "statement": r.statement, "triton": str(r.triton),
                 "source": r.source, "advisory": r.advisory, "count": r.count}
                for r in rules
            ], indent=2))
        else:
            for rule in rules:
                print(_rule_summary(rule))
        return 0
    rule = workspace.rules.get(args.id)
    if rule is None:
        raise UsageError(f"no rule {args.id!r}; `tritonsmith rules list` shows them all")
    from ..rules.docs import rule_markdown

    print(rule_markdown(rule))
    return 0


def _rules_import(args: argparse.Namespace) -> int:
    from ..rules import import_adaexplore, load_pack
    from ..rules.pack import user_rules_dir, write_pack_atomic

    source = Path(args.file)
    text = read_text(source)
    if args.user:
        target = user_rules_dir() / "imported.toml"
    else:
        target = find_workspace_root(Path(".")) / ".tritonsmith" / "imported.toml"
    existing = load_pack(target) if target.exists() else []
    known = {r.statement for r in existing}
    number = 1 + max((int(r.code[3:]) for r in existing if r.code.startswith("TSA")), default=0)
    new = [r for r in import_adaexplore(text, source=str(source), first_number=number) if r.statement not in known]
    # Renumber after dropping duplicates so codes stay dense and stable.
    from dataclasses import replace

    new = [replace(r, code=f"TSA{number + i:03d}") for i, r in enumerate(new)]
    write_pack_atomic(target, existing + new)
    if target.parent.name == ".tritonsmith":
        from ..state import state_dir

        state_dir(target.parent.parent)
    print(f"imported {len(new)} rule(s) from {source} into {target}"
          + (f" ({len(existing)} already there)" if existing else ""))
    return 0
