"""The failure log: every compile failure, kept in `.tritonsmith/state.db` (SQLite).

Failures are the raw material of adaptation (recurring ones become rules), so each is recorded
with where it happened and the rule codes its message matched; a matched failure also counts
against its rule. The database carries a schema version and is migrated forward, never dropped;
a newer version than this tritonsmith knows is an error that says so. WAL mode and a busy
timeout make it safe with several editors (and the command line) writing at once.

`.tritonsmith/` also holds rule packs that a team commits; `state_dir` writes a `.gitignore`
there so the local state stays out of version control.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from ..errors import TritonsmithError

__all__ = ["SCHEMA_VERSION", "FailureLog", "state_dir"]

SCHEMA_VERSION = 1
_GITIGNORE = "# Written by tritonsmith: rule packs are committed, local state is not.\nstate.db*\n"

_MIGRATIONS = {
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
}


def state_dir(root: Path) -> Path:
    """`root/.tritonsmith`, created with its `.gitignore` for local state."""
    folder = root / ".tritonsmith"
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text(_GITIGNORE)
    return folder


class FailureLog:
    """Append-only record of failures in one workspace."""

    def __init__(self, root: Path) -> None:
        self.path = state_dir(root) / "state.db"
        # Used from the server's job threads: one connection, serialised by a lock.
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._migrate()

    def _migrate(self) -> None:
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise TritonsmithError(
                f"{self.path} was written by a newer tritonsmith (schema {version}, this one knows "
                f"{SCHEMA_VERSION}); upgrade tritonsmith to use it"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for statement in _MIGRATIONS[target]:
                    self._db.execute(statement)
                self._db.execute(
                    "INSERT INTO meta(key, value) VALUES('schema_version', ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (str(target),),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

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
    ) -> None:
        with self._lock:
            self._record(path, kernel, stage, message, rules, target, config)

    def _record(
        self, path: str, kernel: str, stage: str, message: str, rules: list[str],
        target: str | None, config: str | None,
    ) -> None:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute(
                "INSERT INTO failures(at, path, kernel, stage, target, config, message, rules) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (time.time(), path, kernel, stage, target, config, message, ",".join(rules)),
            )
            for code in rules:
                self._db.execute(
                    "INSERT INTO rule_hits(code, count) VALUES (?, 1) "
                    "ON CONFLICT(code) DO UPDATE SET count = count + 1",
                    (code,),
                )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def failures(self, limit: int = 100) -> list[dict[str, object]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT at, path, kernel, stage, target, config, message, rules FROM failures "
                "ORDER BY id DESC LIMIT ?",
                (limit,),
            ).fetchall()
        keys = ("at", "path", "kernel", "stage", "target", "config", "message", "rules")
        return [dict(zip(keys, row)) | {"rules": row[7].split(",") if row[7] else []} for row in rows]

    def rule_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._db.execute("SELECT code, count FROM rule_hits").fetchall())

    def close(self) -> None:
        with self._lock:
            self._db.close()
