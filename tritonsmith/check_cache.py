"""`tritonsmith check`'s result cache: each file's findings, kept under what decides them.

A check of a file reads nothing but that file's text (no import is followed, no other file's
launch sites are read; `analysis/` works on one module), so a file's findings are a function of:

- its bytes;
- the rules in force: every rule of every pack loaded (builtin, user, workspace, `rule_packs`,
  learned rules included: they are the workspace's packs), after `select`, `ignore` and
  `targets`, each rule whole (its query, severity, message, version range, ...);
- the Triton version checked against (`triton_version`, else the installed one);
- the tool itself: its version and the text of its own modules (a development checkout changes
  its checks without changing its version).

The last three, digested under this user's key (`keys.py`), make the *run key*; each file's entry is named by a digest of its bytes under the
run key's folder, `<workspace>/.tritonsmith/cache/check/<run key>/<file digest>.json`. Changing a
setting or a rule starts another folder; changing a file makes another entry. Entries are written
whole (a temporary file renamed over, as concurrent runs may write the same entry at once) and
read as JSON, never unpickled: a cache folder is workspace content, and a cloned repository's
could be anyone's (its run keys, made with another user's key, are never this run's either).
Nor is it followed elsewhere: where `.tritonsmith`, its `cache`, `cache/check` or the run key's
folder is a symbolic link (a repository can ship `cache/check -> ~`), there is no cache, and
pruning removes only what this module names (run keys of 32 hex digits, entries of 40). An entry that cannot be read is a miss. Pruning (`prune`) keeps the newest
folders and, in each, the newest entries: a cache stays the size of the workspace's history of
recent edits, not of all of it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .rules.findings import Finding, Fix, Related, Span, SpanEdit
from .rules.model import Rule, Severity

__all__ = ["CheckCache", "run_key"]

FORMAT = 1
"""The entries' layout; a change starts new folders."""
KEEP_RUNS = 8
"""Run-key folders kept (the newest by last write): a few settings or rule sets side by side."""
KEEP_ENTRIES_MIN = 4096
"""Entries kept per folder at least; a run of N files keeps up to 4 N."""
STALE_RUN_S = 14 * 24 * 3600.0
"""A run-key folder not written for this long is removed even when fewer than `KEEP_RUNS` exist."""

_RUN_NAME = re.compile(r"[0-9a-f]{32}")
_ENTRY_NAME = re.compile(r"[0-9a-f]{40}\.json")
_PACKAGE = Path(__file__).resolve().parent
_build_id: str | None = None


def _tool_build() -> str:
    """A digest of the package's own modules and packs: a changed check is another tool."""
    global _build_id
    if _build_id is None:
        digest = hashlib.blake2b(digest_size=16)
        for path in sorted(_PACKAGE.rglob("*")):
            if path.suffix in (".py", ".toml", ".scm") and "__pycache__" not in path.parts:
                digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0")
                with contextlib.suppress(OSError):
                    digest.update(path.read_bytes())
        _build_id = digest.hexdigest()
    return _build_id


def run_key(rules: Iterable[Rule], *, version: tuple[int, int], select: Sequence[str], ignore: Sequence[str],
            targets: Sequence[str] | None) -> str:
    """The digest of everything but the file that decides a check's findings (module docstring)."""
    from . import __version__
    from .keys import user_key

    # Keyed by this user's secret: another machine's folder (committed to a repository, say,
    # holding "no findings" for a file that has some) is never this run's.
    digest = hashlib.blake2b(key=user_key("check-cache")[:64], digest_size=16)
    digest.update(repr((FORMAT, __version__, _tool_build(), version, tuple(select), tuple(ignore),
                        None if targets is None else tuple(targets))).encode())
    for rule in rules:
        digest.update(repr(rule).encode())
    return digest.hexdigest()


class CheckCache:
    """Findings by file content, for one run key, in `folder` (`<workspace>/.tritonsmith/cache/check`)."""

    def __init__(self, folder: Path, key: str) -> None:
        self.root = folder
        self.folder = folder / key
        self.hits = 0
        self.writes = 0
        # Every folder this cache reads, writes or prunes is a real one inside the workspace.
        self.usable = not any(p.is_symlink() for p in (folder.parent.parent, folder.parent, folder, self.folder))

    @staticmethod
    def digest(source: bytes) -> str:
        return hashlib.blake2b(source, digest_size=20).hexdigest()

    def get(self, source: bytes) -> list[Finding] | None:
        """The findings stored for `source`, or None (never stored, or unreadable)."""
        if not self.usable:
            return None
        try:
            data = json.loads((self.folder / f"{self.digest(source)}.json").read_bytes())
            findings = [_finding(item) for item in data["findings"]]
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None
        self.hits += 1
        return findings

    def put(self, source: bytes, findings: Sequence[Finding]) -> None:
        """Store `findings` for `source`; a folder that cannot be written is no cache, not an error."""
        if not self.usable:
            return
        text = json.dumps({"findings": [_finding_json(f) for f in findings]}, separators=(",", ":"))
        try:
            self._make_folder()
            fd, temporary = tempfile.mkstemp(prefix=".entry-", suffix=".tmp", dir=self.folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(text)
                os.replace(temporary, self.folder / f"{self.digest(source)}.json")
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError:
            return
        self.writes += 1

    def prune(self, *, checked: int) -> None:
        """Keep the `KEEP_RUNS` newest run-key folders (none older than `STALE_RUN_S`, but this
        run's) and, in this run's, the newest `max(4 * checked, KEEP_ENTRIES_MIN)` entries."""
        if not self.usable:
            return
        with contextlib.suppress(OSError):
            runs = sorted((p for p in self.root.iterdir() if _RUN_NAME.fullmatch(p.name) and p.is_dir()
                           and not p.is_symlink()), key=_mtime, reverse=True)
            now = time.time()
            for index, run in enumerate(runs):
                if run != self.folder and (index >= KEEP_RUNS or now - _mtime(run) > STALE_RUN_S):
                    shutil.rmtree(run, ignore_errors=True)
        keep = max(4 * checked, KEEP_ENTRIES_MIN)
        with contextlib.suppress(OSError):
            entries = [p for p in self.folder.glob("*.json") if _ENTRY_NAME.fullmatch(p.name)]
            if len(entries) > keep:
                for entry in sorted(entries, key=_mtime, reverse=True)[keep:]:
                    entry.unlink(missing_ok=True)

    def _make_folder(self) -> None:
        if self.folder.is_dir():
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        ignore = self.root.parent / ".gitignore"  # .tritonsmith/cache/.gitignore: never committed
        if not ignore.exists():
            with contextlib.suppress(OSError):
                ignore.write_text("# written by tritonsmith check: the result cache\n*\n", encoding="utf-8")


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _span_json(span: Span) -> list[int]:
    return [*span.start, *span.end, span.start_byte, span.end_byte]


def _span(item: Sequence[int]) -> Span:
    a, b, c, d, e, f = (int(v) for v in item)
    return Span((a, b), (c, d), e, f)


def _finding_json(finding: Finding) -> list[Any]:
    fix = finding.fix
    return [finding.code, finding.name, finding.severity.value, finding.message, _span_json(finding.span),
            [[_span_json(r.span), r.message] for r in finding.related],
            None if fix is None else [fix.title, [[_span_json(e.span), e.new_text] for e in fix.edits]],
            finding.secondary]


def _finding(item: Sequence[Any]) -> Finding:
    code, name, severity, message, span, related, fix, secondary = item
    return Finding(str(code), str(name), Severity(severity), str(message), _span(span),
                   tuple(Related(_span(s), str(m)) for s, m in related),
                   None if fix is None else Fix(str(fix[0]), tuple(SpanEdit(_span(s), str(t)) for s, t in fix[1])),
                   bool(secondary))
