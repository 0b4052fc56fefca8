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

The last three, digested under this user's key (`keys.py`), make the *run key*; a run's entries
live in that key's folder, `<workspace>/.tritonsmith/cache/check/<run key>/`, named by a digest
of each file's bytes. Changing a setting or a rule starts another folder; changing a file makes
another entry. A run writes the entries it made as one *batch* file (`<40 hex digits>.json`,
written whole: a temporary file renamed over, as concurrent runs may write at once): a file
written per entry cost 0.1-0.17 ms of CPU each here, one for all of them 2 ms
(`bench/cache_store.py`). A run reads the folder's batches once, as JSON, never unpickled: a
cache folder is workspace content, and a cloned repository's could be anyone's (its run keys,
made with another user's key, are never this run's either). Nor is it followed elsewhere: where
`.tritonsmith`, its `cache`, `cache/check` or the run key's folder is a symbolic link (a
repository can ship `cache/check -> ~`), there is no cache, and pruning removes only what this
module names (run keys of 32 hex digits, batches of 40). A batch or an entry that cannot be read
is a miss. Pruning (`prune`) keeps the newest folders and, in this run's, merges the batches
into one of the newest entries once there are many: a cache stays the size of the workspace's
history of recent edits, not of all of it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .rules.findings import Finding, Fix, Related, Span, SpanEdit
from .rules.model import Rule, Severity

__all__ = ["CheckCache", "run_key"]

FORMAT = 2
"""The entries' layout (2: batches of entries); a change starts new folders."""
KEEP_RUNS = 8
"""Run-key folders kept (the newest by last write): a few settings or rule sets side by side."""
KEEP_ENTRIES_MIN = 4096
"""Entries kept per folder at least; a run of N files keeps up to 4 N."""
MERGE_BATCHES = 16
"""Batches in a folder before pruning merges them into one."""
STALE_RUN_S = 14 * 24 * 3600.0
"""A run-key folder not written for this long is removed even when fewer than `KEEP_RUNS` exist."""

_RUN_NAME = re.compile(r"[0-9a-f]{32}")
_BATCH_NAME = re.compile(r"[0-9a-f]{40}\.json")
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
    """Findings by file content, for one run key, in `folder` (`<workspace>/.tritonsmith/cache/check`):
    `get` and `put` per file, `flush` once the run has checked what it missed, then `prune`."""

    def __init__(self, folder: Path, key: str) -> None:
        self.root = folder
        self.folder = folder / key
        self.hits = 0
        self.writes = 0
        # Every folder this cache reads, writes or prunes is a real one inside the workspace.
        self.usable = not any(p.is_symlink() for p in (folder.parent.parent, folder.parent, folder, self.folder))
        self._stored: dict[str, Any] | None = None  # digest -> the entry's JSON, from the batches read
        self._batches: list[Path] = []  # the batches read, newest first
        self._pending: dict[str, list[Any]] = {}  # this run's entries, not written yet

    @staticmethod
    def digest(source: bytes) -> str:
        return hashlib.blake2b(source, digest_size=20).hexdigest()

    def get(self, source: bytes) -> list[Finding] | None:
        """The findings stored for `source`, or None (never stored, or unreadable)."""
        if not self.usable:
            return None
        digest = self.digest(source)
        item = self._pending.get(digest)
        if item is None:
            item = self._read().get(digest)
        if item is None:
            return None
        try:
            findings = [_finding(entry) for entry in item]
        except (ValueError, KeyError, TypeError, IndexError):
            return None
        self.hits += 1
        return findings

    def put(self, source: bytes, findings: Sequence[Finding]) -> None:
        """Store `findings` for `source`, written with the others by `flush`."""
        if self.usable:
            self._pending[self.digest(source)] = [_finding_json(f) for f in findings]

    def flush(self) -> None:
        """Write the entries `put` since the last flush, as one batch; a folder that cannot be
        written is no cache, not an error."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        if self._write(pending) is not None:
            self.writes += len(pending)

    def prune(self, *, checked: int) -> None:
        """Keep the `KEEP_RUNS` newest run-key folders (none older than `STALE_RUN_S`, but this
        run's) and, in this run's, once it holds `MERGE_BATCHES` batches or more entries than
        `max(4 * checked, KEEP_ENTRIES_MIN)`, one batch of the newest entries instead of those read."""
        if not self.usable:
            return
        self.flush()
        with contextlib.suppress(OSError):
            runs = sorted((p for p in self.root.iterdir() if _RUN_NAME.fullmatch(p.name) and p.is_dir()
                           and not p.is_symlink()), key=_mtime, reverse=True)
            now = time.time()
            for index, run in enumerate(runs):
                if run != self.folder and (index >= KEEP_RUNS or now - _mtime(run) > STALE_RUN_S):
                    shutil.rmtree(run, ignore_errors=True)
        self._stored = None  # read again: with this run's batch, and other runs' since
        stored, batches = self._read(), self._batches
        keep = max(4 * checked, KEEP_ENTRIES_MIN)
        if len(batches) < MERGE_BATCHES and len(stored) <= keep:
            return
        newest = dict(list(stored.items())[:keep])  # `_read` orders the newest batches' entries first
        if self._write(newest) is not None:
            for batch in batches:  # only those read: a concurrent run's newer batch stays
                with contextlib.suppress(OSError):  # (a folder of a batch's name, say)
                    batch.unlink(missing_ok=True)
        self._stored = None

    def _read(self) -> dict[str, Any]:
        """Every entry of the folder's batches, the newest batches' first (read once). A batch
        gone while reading was merged by a concurrent run, which wrote the merged one first: the
        folder is read again (a few times at most)."""
        if self._stored is None:
            for _ in range(4):
                stored, batches, vanished = self._read_batches()
                if not vanished:
                    break
            self._stored, self._batches = stored, batches
        return self._stored

    def _read_batches(self) -> tuple[dict[str, Any], list[Path], bool]:
        stored: dict[str, Any] = {}
        batches: list[Path] = []
        with contextlib.suppress(OSError):
            batches = sorted((p for p in self.folder.iterdir() if _BATCH_NAME.fullmatch(p.name)),
                             key=_mtime, reverse=True)
        vanished = False
        for batch in batches:
            try:
                entries = json.loads(batch.read_bytes())["entries"]
                items = entries.items()
            except FileNotFoundError:
                vanished = True
                continue
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                continue
            for digest, item in items:
                if isinstance(item, list):
                    stored.setdefault(str(digest), item)
        return stored, batches, vanished

    def _write(self, entries: dict[str, Any]) -> Path | None:
        text = json.dumps({"entries": entries}, separators=(",", ":"))
        try:
            self._make_folder()
            fd, temporary = tempfile.mkstemp(prefix=".batch-", suffix=".tmp", dir=self.folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(text)
                target = self.folder / f"{secrets.token_hex(20)}.json"
                os.replace(temporary, target)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError:
            return None
        return target

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
