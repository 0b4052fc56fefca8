"""The versioned schemas of `.tritonsmith/state.db`. The failure log, the search journal and the
experience memory share the file; each keeps its tables and its own version key in the `meta`
table, and migrates forward on open (never dropping data), refusing a newer schema."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..errors import TritonsmithError

__all__ = ["Migration", "migrate"]

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
