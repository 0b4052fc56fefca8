"""Rule packs: TOML files of rules, loaded from the package, the user and the workspace.

A pack is one TOML file:

    format = 1

    [[rules]]
    code = "TS101"
    name = "arange-non-power-of-two"
    ...

Format 2 (written by `tritonsmith.adapt` for `.tritonsmith/rules.toml`, the learned pack) adds a
rule's lifecycle and provenance: `status` (pending, active, rejected), `reviewed`, `hold`,
`template`, `failures`, `kernels`, `first_seen`, `last_seen`, `examples`. Format 1 packs load
unchanged; `dump_pack` writes format 1 when no rule needs more, so old packs round-trip as they
were. Only active rules are in force (`load_rules`): a pending or rejected rule stays in its pack
for review but checks nothing, and a rejected override of a builtin code turns that rule off.

Packs are read in order: the builtin pack (the files in `tritonsmith/packs/`), the user's packs
(`<user data dir>/rules/*.toml`), the workspace's (`.tritonsmith/*.toml`) and any extra paths
from the settings. A malformed pack gives one `RulePackError` naming its file and line and is
skipped; every other pack still loads. AdaExplore's memory format (`rule||count` per line) is
converted by `import_adaexplore` into advisory rules with `TSA` codes.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import RulePackError
from .model import STATUSES, Rule, Severity, VersionRange

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "BUILTIN_DIR",
    "match_rules",
    "FORMAT_VERSION",
    "RuleSet",
    "dump_pack",
    "import_adaexplore",
    "load_pack",
    "load_rules",
    "pack_paths",
    "user_rules_dir",
    "write_pack_atomic",
]

FORMAT_VERSION = 2
# Data, not code: kept out of the rules package so the packs' example kernels (which import
# triton) never sit among the server's modules.
BUILTIN_DIR = Path(__file__).parent.parent / "packs"

_REQUIRED = ("code", "name", "title", "statement", "severity", "category")
_STRINGS = ("code", "name", "title", "statement", "severity", "category", "triton", "check",
            "query", "fix", "how_to_fix", "bad", "good", "explanation", "provenance",
            "status", "hold", "template", "first_seen", "last_seen")
_STRING_LISTS = ("signatures", "expect", "kernels", "examples", "contradictions", "targets")
# Fields of format 2: a pack that uses one is written as format 2.
_LEARNED = ("status", "reviewed", "hold", "template", "failures", "kernels", "first_seen", "last_seen",
            "examples", "contradictions", "targets")
_KNOWN = set(_STRINGS) | set(_STRING_LISTS) | {"compiler_rejects", "count", "advisory", "reviewed", "failures"}


def user_rules_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("tritonsmith", appauthor=False)) / "rules"


def _rule_lines(text: str) -> list[int]:
    """1-based line of each `[[rules]]` header, so errors can point into the file."""
    return [i + 1 for i, line in enumerate(text.splitlines()) if line.strip() == "[[rules]]"]


def _toml_line(error: tomllib.TOMLDecodeError) -> int | None:
    lineno = getattr(error, "lineno", None)
    if lineno:
        return int(lineno)
    match = re.search(r"line (\d+)", str(error))
    return int(match.group(1)) if match else None


def _rule_from_table(table: dict[str, Any], path: str, line: int) -> Rule:
    def problem(message: str) -> RulePackError:
        return RulePackError(path, line, message)

    unknown = set(table) - _KNOWN
    if unknown:
        raise problem(f"unknown field(s) {', '.join(sorted(unknown))} in rule {table.get('code', '?')}")
    for key in _REQUIRED:
        if key not in table:
            raise problem(f"rule {table.get('code', '?')} is missing the required field '{key}'")
    for key in _STRINGS:
        if key in table and not isinstance(table[key], str):
            raise problem(f"field '{key}' of rule {table.get('code', '?')} must be a string")
    code = table["code"]
    if not Rule.valid_code(code):
        raise problem(f"bad rule code {code!r}: use TS + 3 digits, TSL + digits or TSA + digits")
    if not Rule.valid_name(table["name"]):
        raise problem(f"bad rule name {table['name']!r} for {code}: use kebab-case")
    try:
        severity = Severity(table["severity"])
    except ValueError:
        raise problem(
            f"bad severity {table['severity']!r} for {code}: use error, warning, information or hint"
        ) from None
    try:
        triton = VersionRange.parse(table.get("triton", ""))
    except ValueError as error:
        raise problem(f"{code}: {error}") from None
    for key in _STRING_LISTS:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise problem(f"'{key}' of {code} must be a list of strings")
    signatures = table.get("signatures", [])
    for signature in signatures:
        try:
            re.compile(signature)
        except re.error as error:
            raise problem(f"signature {signature!r} of {code} is not a valid regex: {error}") from None
    count = table.get("count", 0)
    if not isinstance(count, int) or count < 0:
        raise problem(f"'count' of {code} must be a non-negative integer")
    status = table.get("status", "active")
    if status not in STATUSES:
        raise problem(f"bad status {status!r} for {code}: use {', '.join(STATUSES)}")
    failures = table.get("failures", [])
    if not isinstance(failures, list) or not all(isinstance(f, int) and not isinstance(f, bool) for f in failures):
        raise problem(f"'failures' of {code} must be a list of failure ids (integers)")
    for key in ("compiler_rejects", "advisory", "reviewed"):
        if key in table and not isinstance(table[key], bool):
            raise problem(f"'{key}' of {code} must be true or false")
    return Rule(
        code=code,
        name=table["name"],
        title=table["title"],
        statement=table["statement"],
        severity=severity,
        category=table["category"],
        triton=triton,
        check=table.get("check"),
        query=table.get("query"),
        signatures=tuple(signatures),
        fix=table.get("fix"),
        how_to_fix=table.get("how_to_fix"),
        bad=table.get("bad"),
        good=table.get("good"),
        expect=tuple(table.get("expect", [])),
        explanation=table.get("explanation"),
        compiler_rejects=bool(table.get("compiler_rejects", False)),
        provenance=table.get("provenance", "builtin"),
        count=count,
        advisory=bool(table.get("advisory", False)),
        source=path,
        source_line=line,
        status=status,
        reviewed=bool(table.get("reviewed", False)),
        hold=table.get("hold"),
        template=table.get("template"),
        failures=tuple(failures),
        kernels=tuple(table.get("kernels", [])),
        first_seen=table.get("first_seen"),
        last_seen=table.get("last_seen"),
        examples=tuple(table.get("examples", [])),
        contradictions=tuple(table.get("contradictions", [])),
        targets=tuple(table.get("targets", [])),
    )


def load_pack(path: str | Path) -> list[Rule]:
    """Read one pack file. Raises RulePackError (with file and line) if it is malformed."""
    path_str = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise RulePackError(path_str, None, f"cannot read the pack: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise RulePackError(path_str, None, "the pack is not UTF-8 text") from None
    parsed = _parsed.get(path_str)
    if parsed is not None and parsed[0] == text:
        return list(parsed[1])
    rules = _parse_pack(text, path_str)
    _parsed[path_str] = (text, tuple(rules))
    return rules


# The last parse of each pack, by path and checked against its text. A server reloads every pack
# on each settings change (three times while it starts), and the builtin packs never change:
# their TOML and patterns are parsed once per process. Rules are frozen, so sharing is safe.
_parsed: dict[str, tuple[str, tuple[Rule, ...]]] = {}


def _parse_pack(text: str, path_str: str) -> list[Rule]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message = str(error).split(" (at line")[0]
        raise RulePackError(path_str, _toml_line(error), f"invalid TOML: {message}") from None
    version = data.get("format", FORMAT_VERSION)
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise RulePackError(
            path_str, 1, f"pack format {version!r} is newer than this tritonsmith understands "
            f"({FORMAT_VERSION}); upgrade tritonsmith"
        )
    tables = data.get("rules", [])
    if not isinstance(tables, list):
        raise RulePackError(path_str, 1, "'rules' must be an array of tables ([[rules]])")
    lines = _rule_lines(text)
    rules = []
    for index, table in enumerate(tables):
        line = lines[index] if index < len(lines) else 1
        if not isinstance(table, dict):
            raise RulePackError(path_str, line, "each [[rules]] entry must be a table")
        rules.append(_rule_from_table(table, path_str, line))
    return rules


def pack_paths(workspace: Path | None, extra: Sequence[str] = (), *, include_user: bool = True) -> list[Path]:
    """Every pack file in load order: builtin, user, workspace, extra paths."""
    paths = sorted(BUILTIN_DIR.glob("*.toml"))
    if include_user:
        user_dir = user_rules_dir()
        if user_dir.is_dir():
            paths += sorted(user_dir.glob("*.toml"))
    if workspace is not None:
        local = workspace / ".tritonsmith"
        if local.is_dir():
            paths += sorted(local.glob("*.toml"))
    for entry in extra:
        candidate = Path(entry)
        if workspace is not None and not candidate.is_absolute():
            candidate = workspace / candidate
        paths += sorted(candidate.glob("*.toml")) if candidate.is_dir() else [candidate]
    return paths


@dataclass
class RuleSet:
    """The rules in force, plus the errors of packs that could not be read."""

    rules: list[Rule] = field(default_factory=list)
    errors: list[RulePackError] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_code = {r.code: r for r in self.rules}
        self._by_name = {r.name: r for r in self.rules}

    def get(self, code_or_name: str) -> Rule | None:
        return self._by_code.get(code_or_name) or self._by_name.get(code_or_name)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)


def load_rules(paths: Iterable[Path]) -> RuleSet:
    """Load packs in order. A later rule with the same code replaces an earlier one (a workspace
    can override a builtin rule's severity); a malformed pack is recorded and skipped. Only active
    rules are in force: pending and rejected ones (learned rules under review) are left out."""
    by_code: dict[str, Rule] = {}
    errors: list[RulePackError] = []
    for path in paths:
        try:
            rules = load_pack(path)
        except RulePackError as error:
            errors.append(error)
            continue
        for rule in rules:
            by_code[rule.code] = rule
    return RuleSet(rules=[r for r in by_code.values() if r.active], errors=errors)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _toml_string(value: str) -> str:
    if value.endswith("\n") and "'''" not in value and not _CONTROL.search(value):
        return "'''\n" + value + "'''"
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    # Other control characters (a compiler's colour codes, a stray CR) are not allowed raw in TOML.
    escaped = _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", escaped)
    return f'"{escaped}"'


def _learned_fields(rule: Rule) -> list[tuple[str, Any]]:
    """The format-2 fields of a rule that differ from their defaults."""
    fields: list[tuple[str, Any]] = [
        ("status", rule.status if rule.status != "active" or rule.template or rule.reviewed else None),
        ("reviewed", rule.reviewed), ("hold", rule.hold), ("template", rule.template),
        ("first_seen", rule.first_seen), ("last_seen", rule.last_seen),
        ("kernels", list(rule.kernels)), ("failures", list(rule.failures)), ("examples", list(rule.examples)),
        ("contradictions", list(rule.contradictions)), ("targets", list(rule.targets)),
    ]
    return [(key, value) for key, value in fields if value not in (None, "", [], False)]


def dump_pack(rules: Iterable[Rule], *, header: str = "") -> str:
    """Serialise rules as a pack, in the readable layout the builtin pack uses (format 1 unless a
    rule carries learned fields); `header` is written first, as `#` comment lines."""
    rules = list(rules)
    version = FORMAT_VERSION if any(_learned_fields(r) for r in rules) else 1
    comments = [f"# {line}".rstrip() for line in header.splitlines()]
    out = [*comments, f"format = {version}", ""]
    for rule in rules:
        out.append("[[rules]]")
        fields: list[tuple[str, Any]] = [
            ("code", rule.code), ("name", rule.name), ("title", rule.title),
            ("statement", rule.statement), ("severity", rule.severity.value),
            ("category", rule.category), ("triton", rule.triton.spec), ("check", rule.check),
            ("query", rule.query), ("signatures", list(rule.signatures)), ("fix", rule.fix),
            ("how_to_fix", rule.how_to_fix), ("compiler_rejects", rule.compiler_rejects),
            ("advisory", rule.advisory), ("provenance", rule.provenance), ("count", rule.count),
            *_learned_fields(rule),
            ("expect", list(rule.expect)), ("bad", rule.bad), ("good", rule.good), ("explanation", rule.explanation),
        ]
        for key, value in fields:
            if value in (None, "", []) or (key in ("compiler_rejects", "advisory") and not value):
                continue
            if isinstance(value, bool):
                out.append(f"{key} = {'true' if value else 'false'}")
            elif isinstance(value, int):
                out.append(f"{key} = {value}")
            elif isinstance(value, list) and all(isinstance(v, int) for v in value):
                out.append(f"{key} = [" + ", ".join(str(v) for v in value) + "]")
            elif isinstance(value, list):
                out.append(f"{key} = [" + ", ".join(_toml_string(v) for v in value) + "]")
            else:
                out.append(f"{key} = {_toml_string(value)}")
        out.append("")
    return "\n".join(out)


def write_pack_atomic(path: Path, rules: Iterable[Rule], *, header: str = "") -> None:
    """Write a pack with temp file + rename, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    content = dump_pack(rules, header=header)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def import_adaexplore(text: str, *, source: str, first_number: int = 1) -> list[Rule]:
    """Convert AdaExplore's memory (`rule||count` per line) to advisory TSA rules.

    Blank lines and `#` comments are skipped; a line without `||` counts once. Raises
    RulePackError naming the line for a count that is not a number.
    """
    rules: list[Rule] = []
    number = first_number
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        statement, sep, count_text = line.rpartition("||")
        if not sep:
            statement, count_text = line, "1"
        statement = statement.strip()
        try:
            count = int(count_text.strip())
        except ValueError:
            raise RulePackError(source, lineno, f"count {count_text.strip()!r} is not a whole number") from None
        if not statement:
            raise RulePackError(source, lineno, "empty rule text before '||'")
        words = re.findall(r"[a-z0-9]+", statement.lower())
        words = [w for w in words if w not in {"you", "cannot", "can", "not", "a", "an", "the", "in", "of", "to"}]
        name = "-".join(words[:6]) or f"imported-{number}"
        title = statement.rstrip(".")
        if len(title) > 80:
            title = title[:77].rstrip() + "..."
        rules.append(
            Rule(
                code=f"TSA{number:03d}",
                name=name,
                title=title,
                statement=statement,
                severity=Severity.INFORMATION,
                category="imported",
                provenance=f"imported from AdaExplore memory {Path(source).name}, line {lineno}",
                count=count,
                advisory=True,
                source=source,
                source_line=lineno,
            )
        )
        number += 1
    return rules


@lru_cache(maxsize=1)
def _builtin_rules() -> tuple[Rule, ...]:
    return tuple(load_rules(pack_paths(None, include_user=False)).rules)


def match_rules(error_text: str, version: tuple[int, int] | None = None, rules: Iterable[Rule] | None = None) -> list[str]:
    """Codes of the rules whose error signatures match a compiler message: the builtin rules, or
    `rules` when given (a workspace's learned rules, matched on the server's side; only active
    rules match)."""
    return [
        rule.code for rule in (_builtin_rules() if rules is None else rules)
        if rule.signatures and rule.applies_to(version) and rule.matches_error(error_text)
    ]
