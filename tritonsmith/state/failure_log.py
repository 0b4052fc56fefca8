"""The failure log: every compile and runtime failure, kept in `.tritonsmith/state.db` (SQLite).

Failures are the raw material of adaptation (recurring ones become rules), so each is recorded
with where it happened and the rule codes its message matched; a matched failure also counts
against its rule. Schema 2 adds what induction needs: the normalised signature
(`signature.normalise`), the source snippet at the error, the kernel's hash (sha256 of its
source text), the Triton version, and `induced`, the learned rule a failure was counted into
(so no failure is counted twice). The database carries a schema version and is migrated forward,
never dropped (old rows get their signature computed on the way); a newer version than this
tritonsmith knows is an error that says so. WAL mode and a busy timeout make it safe with several
editors (and the command line) writing at once; migrations run inside a write transaction, so
two processes opening an old database at once do not race. The search journal shares the file
(its own tables and its own version key in `meta`).

`.tritonsmith/` also holds rule packs that a team commits; `state_dir` writes a `.gitignore`
there so the local state stays out of version control.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .db import connect, migrate, state_dir, write
from .signature import normalise

log = logging.getLogger(__name__)

__all__ = ["SCHEMA_VERSION", "FailureLog", "kernel_hash", "logged_snippets", "state_dir"]

SCHEMA_VERSION = 3
# The failure log keeps whole files for graduation (the construct at the error's position), not
# forever: a file of a quarter million characters and the last 256 failing texts at most.
MAX_SOURCE_CHARS = 256 * 1024
MAX_SOURCES = 256
_COLUMNS = ("id", "at", "path", "kernel", "stage", "target", "config", "message", "rules", "signature",
            "snippet", "kernel_hash", "triton_version", "induced", "source_hash", "error_row", "error_col")
_MIGRATIONS: dict[int, list[str | Callable[[sqlite3.Connection], object]]] = {
    1: [
        """CREATE TABLE failures (
               id INTEGER PRIMARY KEY,
               at REAL NOT NULL,
               path TEXT NOT NULL,
               kernel TEXT NOT NULL,
               stage TEXT NOT NULL,
               target TEXT,
               config TEXT,
               message TEXT NOT NULL,
               rules TEXT NOT NULL
           )""",
        "CREATE TABLE rule_hits (code TEXT PRIMARY KEY, count INTEGER NOT NULL)",
    ],
    2: [
        "ALTER TABLE failures ADD COLUMN signature TEXT",
        "ALTER TABLE failures ADD COLUMN snippet TEXT",
        "ALTER TABLE failures ADD COLUMN kernel_hash TEXT",
        "ALTER TABLE failures ADD COLUMN triton_version TEXT",
        "ALTER TABLE failures ADD COLUMN induced TEXT",
        lambda db: db.executemany(
            "UPDATE failures SET signature = ? WHERE id = ?",
            [(normalise(message), row) for row, message in db.execute("SELECT id, message FROM failures")],
        ),
        "CREATE INDEX failures_signature ON failures(signature)",
    ],
    # The whole file a failure happened in (once per text) and where in it the error is: what
    # graduation needs to find the failing construct and its inferred types.
    3: [
        "CREATE TABLE sources (hash TEXT PRIMARY KEY, text TEXT NOT NULL)",
        "ALTER TABLE failures ADD COLUMN source_hash TEXT",
        "ALTER TABLE failures ADD COLUMN error_row INTEGER",
        "ALTER TABLE failures ADD COLUMN error_col INTEGER",
    ],
}


def kernel_hash(source: str) -> str:
    """The sha256 of a kernel's source text, in hex: what the log records as its identity."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def logged_snippets(root: Path, ids: Sequence[int]) -> list[str]:
    """The snippets the workspace's failure log holds for these failures, oldest first; read
    without creating or migrating the log (none when there is no log or it cannot be read)."""
    path = root / ".tritonsmith" / "state.db"
    if not ids or not path.exists():
        return []
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            marks = ",".join("?" * len(ids))
            rows = db.execute(f"SELECT snippet FROM failures WHERE id IN ({marks}) ORDER BY id", list(ids)).fetchall()
        finally:
            db.close()
    except sqlite3.Error as error:
        log.warning("failure log not read: %s", error)
        return []
    return [str(row[0]) for row in rows if row[0]]


class FailureLog:
    """Append-only record of failures in one workspace."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path, self._db = connect(root, timeout_s=10.0)
        # Used from the server's job threads; re-entrant, since induction reads `located` inside `claiming`.
        self._lock = threading.RLock()
        self._migrate()

    def _migrate(self) -> None:
        # The version is read inside the write transaction: a second process waits for the
        # first one's migration and then finds nothing left to do.
        with write(self._db):
            migrate(self._db, key="schema_version", version=SCHEMA_VERSION, migrations=_MIGRATIONS,
                    path=self.path, what="a failure log")

    def record(
        self,
        *,
        path: str,
        kernel: str,
        stage: str,
        message: str,
        rules: list[str],
        target: str | None = None,
        config: str | None = None,
        snippet: str | None = None,
        kernel_hash: str | None = None,
        triton_version: str | None = None,
        signature: str | None = None,
        source: str | None = None,
        error_at: tuple[int, int] | None = None,
    ) -> int:
        """Record one failure; returns its id.

        Args:
            path, kernel: where it happened (the file, the kernel or what was verified).
            stage: "compile", "verify:<stage>" or "search:<stage>".
            message: the raw message, as the compiler or the verifier gave it.
            rules: codes of the rules whose error signatures match it (each counts a hit).
            target, config: the GPU target (or verification mode) and the autotune config.
            snippet: the source lines at the error's range.
            kernel_hash: sha256 of the kernel's source text (`kernel_hash()`).
            triton_version: the Triton version that failed, e.g. "3.6.0".
            signature: the normalised message; computed from `message` when not given.
            source: the whole file the failure happened in (stored once per text; files over
                `MAX_SOURCE_CHARS` are not stored, and only the `MAX_SOURCES` most recently
                failing texts are kept, so a failure of an older text is no longer located).
            error_at: the error's (row, column) in `source`, 0-based.
        """
        if source is not None and len(source) > MAX_SOURCE_CHARS:
            source = None  # a huge file is not kept; the failure keeps its snippet, unlocated
        source_hash = hashlib.sha256(source.encode("utf-8")).hexdigest() if source is not None else None
        row = (time.time(), path, kernel, stage, target, config, message, ",".join(rules),
               signature or normalise(message), snippet, kernel_hash, triton_version, source_hash,
               error_at[0] if error_at else None, error_at[1] if error_at else None)
        with self._lock:
            return self._record(row, rules, source, source_hash)

    def _record(self, row: tuple[Any, ...], rules: list[str], source: str | None = None,
                source_hash: str | None = None) -> int:
        with write(self._db):
            if source is not None:
                # REPLACE moves a text seen again to the newest end; the oldest beyond the cap go.
                cursor = self._db.execute("INSERT OR REPLACE INTO sources(hash, text) VALUES (?, ?)",
                                          (source_hash, source))
                self._db.execute("DELETE FROM sources WHERE rowid <= ?", ((cursor.lastrowid or 0) - MAX_SOURCES,))
            cursor = self._db.execute(
                "INSERT INTO failures(at, path, kernel, stage, target, config, message, rules, signature, "
                "snippet, kernel_hash, triton_version, source_hash, error_row, error_col) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            for code in rules:
                self._db.execute(
                    "INSERT INTO rule_hits(code, count) VALUES (?, 1) "
                    "ON CONFLICT(code) DO UPDATE SET count = count + 1",
                    (code,),
                )
        return int(cursor.lastrowid or 0)

    @staticmethod
    def _row(row: tuple[Any, ...]) -> dict[str, Any]:
        entry = dict(zip(_COLUMNS, row))
        entry["rules"] = entry["rules"].split(",") if entry["rules"] else []
        return entry

    def failures(self, limit: int | None = 100) -> list[dict[str, Any]]:
        """The most recent failures first (all of them with `limit=None`), each a dict of the
        table's columns, `rules` as a list."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM failures ORDER BY id DESC LIMIT ?",
                (-1 if limit is None else limit,),
            ).fetchall()
        return [self._row(row) for row in rows]

    @contextmanager
    def claiming(self) -> Iterator[tuple[list[dict[str, Any]], Callable[[list[int], str], int]]]:
        """For induction: the failures not yet counted into a learned rule (oldest first), and a
        `claim(ids, code)` that marks them counted; all in one write transaction, committed when
        the block ends without an exception (after the pack is written) and rolled back otherwise,
        so a failure is counted once however many processes learn at once."""
        with self._lock, write(self._db):
            rows = self._db.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM failures WHERE induced IS NULL ORDER BY id"
            ).fetchall()

            def claim(ids: list[int], code: str) -> int:
                claimed = 0
                for failure in ids:
                    claimed += self._db.execute(
                        "UPDATE failures SET induced = ? WHERE id = ? AND induced IS NULL", (code, failure)
                    ).rowcount
                return claimed

            yield [self._row(row) for row in rows], claim

    def located(self, ids: list[int]) -> list[tuple[str, int, int, str]]:
        """For these failures, the ones whose file and error position were recorded: (source,
        row, column, kernel identity), oldest first."""
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        with self._lock:
            rows = self._db.execute(
                f"SELECT s.text, f.error_row, f.error_col, f.path || ':' || f.kernel FROM failures f "
                f"JOIN sources s ON s.hash = f.source_hash WHERE f.id IN ({marks}) AND f.error_row IS NOT NULL "
                "ORDER BY f.id", list(ids)).fetchall()
        return [(str(t), int(r), int(c), str(k)) for t, r, c, k in rows]

    def targets(self, ids: list[int]) -> set[str]:
        """The GPU targets these failures were recorded for (`sm_80`), those that name one."""
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        with self._lock:
            rows = self._db.execute(f"SELECT DISTINCT target FROM failures WHERE id IN ({marks}) "
                                    "AND target IS NOT NULL", list(ids)).fetchall()
        return {str(t) for (t,) in rows if t}

    def rule_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._db.execute("SELECT code, count FROM rule_hits").fetchall())

    def close(self) -> None:
        with self._lock:
            self._db.close()
