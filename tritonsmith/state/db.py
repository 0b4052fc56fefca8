"""`.tritonsmith/state.db`: the folder, the connection and the versioned schemas. The failure
log, the search journal and the experience memory share the file; each keeps its tables and its
own version key in the `meta` table, and migrates forward on open (never dropping data),
refusing a newer schema. Each holds one connection, serialised by its own lock across threads;
other processes are kept out by SQLite's locks (WAL, BEGIN IMMEDIATE, a busy timeout)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..errors import TritonsmithError

__all__ = ["Migration", "connect", "migrate", "state_dir", "write"]

_GITIGNORE = "# Written by tritonsmith: rule packs are committed, local state is not.\nstate.db*\n*.lock\n"


def state_dir(root: Path) -> Path:
    """`root/.tritonsmith`, created with its `.gitignore` for local state."""
    folder = root / ".tritonsmith"
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text(_GITIGNORE)
    elif "*.lock" not in ignore.read_text().split():  # written before the pack had a lock file
        with ignore.open("a") as handle:
            handle.write("*.lock\n")
    return folder


def connect(root: Path, *, timeout_s: float = 30.0) -> tuple[Path, sqlite3.Connection]:
    """The workspace's state database and a connection to it, usable from several threads (the
    caller serialises them)."""
    path = state_dir(root) / "state.db"
    db = sqlite3.connect(path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
    db.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
    # Switching a fresh file to WAL while another process creates it can answer "database is
    # locked" at once, without the busy handler: wait and try again, within the timeout.
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return path, db
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextmanager
def write(db: sqlite3.Connection) -> Iterator[None]:
    """A write transaction. IMMEDIATE takes the write lock up front, so a read-then-write never
    fails halfway because another process began writing after it read."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")

Migration = str | Callable[[sqlite3.Connection], object]


def migrate(db: sqlite3.Connection, *, key: str, version: int, migrations: Mapping[int, Sequence[Migration]],
            path: Path, what: str) -> None:
    """Bring the schema under `key` up to `version`. Call inside a write transaction (BEGIN
    IMMEDIATE), so that a second process waits for the first one's migration and then finds
    nothing left to do. `what` names the contents for the newer-schema error ("search journals")."""
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    found = int(row[0]) if row else 0
    if found > version:
        raise TritonsmithError(f"{path} holds {what} from a newer tritonsmith (schema {found}, this one knows "
                               f"{version}); upgrade tritonsmith to use it")
    for target in range(found + 1, version + 1):
        for statement in migrations[target]:
            if callable(statement):
                statement(db)
            else:
                db.execute(statement)
        db.execute("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                   (key, str(target)))
