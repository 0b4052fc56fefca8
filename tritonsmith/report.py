"""Findings as text, JSON or SARIF 2.1.0, for the command line and CI.

Columns in every format are 1-based character columns (what editors and GitHub show), computed
from tritonsmith's byte columns against the line's text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from . import __version__
from .rules import Finding, Rule, Severity

__all__ = ["FileFindings", "to_json", "to_sarif", "to_text"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFORMATION: "note",
    Severity.HINT: "note",
}


@dataclass
class FileFindings:
    path: Path
    source: bytes
    findings: list[Finding]

    def column(self, row: int, byte_column: int) -> int:
        """1-based character column of a (row, byte column) point."""
        line = self._lines[row] if row < len(self._lines) else b""
        return len(line[:byte_column].decode("utf-8", errors="replace")) + 1

    @cached_property
    def _lines(self) -> list[bytes]:
        # Split once per file: splitting a 55,000-line file for each finding cost more than a
        # tenth of its check.
        return self.source.split(b"\n")


def _display(path: Path, base: Path | None) -> str:
    if base is not None:
        try:
            return path.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def to_text(files: Sequence[FileFindings], *, base: Path | None = None, fixed: int = 0) -> str:
    lines = []
    counts = {s: 0 for s in Severity}
    fixable = 0
    for file in files:
        for f in file.findings:
            if not f.secondary:  # another place of a mistake is counted once, where it is reported
                counts[f.severity] += 1
                fixable += f.fix is not None
            col = file.column(*f.span.start)
            marker = " [*]" if f.fix is not None else ""
            label = "note" if f.secondary else f.severity.value
            lines.append(
                f"{_display(file.path, base)}:{f.span.start[0] + 1}:{col}: {f.code}{marker} "
                f"{f.message} [{label}: {f.name}]"
            )
    total = sum(counts.values())
    if total == 0:
        lines.append("All checks passed!" + (f" (fixed {fixed})" if fixed else ""))
    else:
        parts = [f"{counts[s]} {s.value}{'s' if counts[s] != 1 and s is not Severity.INFORMATION else ''}"
                 for s in Severity if counts[s]]
        lines.append(f"Found {total} problem{'s' if total != 1 else ''} ({', '.join(parts)}).")
        if fixed:
            lines.append(f"Fixed {fixed} problem{'s' if fixed != 1 else ''}.")
        if fixable:
            lines.append(f"[*] {fixable} fixable with `tritonsmith check --fix`.")
    return "\n".join(lines)


def to_json(files: Sequence[FileFindings], *, base: Path | None = None) -> str:
    out = []
    for file in files:
        for f in file.findings:
            out.append(
                {
                    "path": _display(file.path, base),
                    "code": f.code,
                    "name": f.name,
                    "severity": f.severity.value,
                    "secondary": f.secondary,
                    "message": f.message,
                    "start": {"line": f.span.start[0] + 1, "column": file.column(*f.span.start)},
                    "end": {"line": f.span.end[0] + 1, "column": file.column(*f.span.end)},
                    "related": [
                        {
                            "message": r.message,
                            "start": {"line": r.span.start[0] + 1, "column": file.column(*r.span.start)},
                            "end": {"line": r.span.end[0] + 1, "column": file.column(*r.span.end)},
                        }
                        for r in f.related
                    ],
                    "fix": None if f.fix is None else {
                        "title": f.fix.title,
                        "edits": [
                            {
                                "start": {"line": e.span.start[0] + 1, "column": file.column(*e.span.start)},
                                "end": {"line": e.span.end[0] + 1, "column": file.column(*e.span.end)},
                                "text": e.new_text,
                            }
                            for e in f.fix.edits
                        ],
                    },
                    "url": f"https://github.com/tritonsmith/tritonsmith/blob/main/docs/rules/{f.code}.md",
                }
            )
    return json.dumps(out, indent=2)


def _region(file: FileFindings, span_start: tuple[int, int], span_end: tuple[int, int]) -> dict:
    return {
        "startLine": span_start[0] + 1,
        "startColumn": file.column(*span_start),
        "endLine": span_end[0] + 1,
        "endColumn": file.column(*span_end),
    }


def to_sarif(files: Sequence[FileFindings], rules: Iterable[Rule], *, base: Path | None = None) -> str:
    rule_list = sorted(rules, key=lambda r: r.code)
    rule_index = {r.code: i for i, r in enumerate(rule_list)}
    results = []
    for file in files:
        uri = _display(file.path, base)
        for f in file.findings:
            location = {
                "physicalLocation": {
                    "artifactLocation": {"uri": uri, **({"uriBaseId": "SRCROOT"} if base else {})},
                    "region": _region(file, f.span.start, f.span.end),
                }
            }
            result: dict = {
                "ruleId": f.code,
                "level": "note" if f.secondary else _SARIF_LEVEL[f.severity],
                "message": {"text": f.message},
                "locations": [location],
            }
            if f.code in rule_index:
                result["ruleIndex"] = rule_index[f.code]
            if f.related:
                result["relatedLocations"] = [
                    {
                        "id": i,
                        "message": {"text": r.message},
                        "physicalLocation": {
                            "artifactLocation": {"uri": uri},
                            "region": _region(file, r.span.start, r.span.end),
                        },
                    }
                    for i, r in enumerate(f.related)
                ]
            if f.fix is not None:
                result["fixes"] = [
                    {
                        "description": {"text": f.fix.title},
                        "artifactChanges": [
                            {
                                "artifactLocation": {"uri": uri},
                                "replacements": [
                                    {
                                        "deletedRegion": _region(file, e.span.start, e.span.end),
                                        "insertedContent": {"text": e.new_text},
                                    }
                                    for e in f.fix.edits
                                ],
                            }
                        ],
                    }
                ]
            results.append(result)
    run: dict = {
        "tool": {
            "driver": {
                "name": "tritonsmith",
                "version": __version__,
                "informationUri": "https://github.com/tritonsmith/tritonsmith",
                "rules": [
                    {
                        "id": r.code,
                        "name": r.name,
                        "shortDescription": {"text": r.title},
                        "fullDescription": {"text": r.statement},
                        "helpUri": r.doc_url,
                        "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
                        "properties": {"category": r.category, "triton": str(r.triton)},
                    }
                    for r in rule_list
                ],
            }
        },
        "results": results,
    }
    if base is not None:
        run["originalUriBaseIds"] = {"SRCROOT": {"uri": base.resolve().as_uri() + "/"}}
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2)
