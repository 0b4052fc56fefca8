"""The search journal's tables in `.tritonsmith/state.db`: searches, their evaluated nodes and
the confirmation runs behind their claims, as rows. The search builds its tree from them and
writes them (`search/journal.py`); this module owns the schema and the SQL.

The database is the failure log's (`failure_log.py`): the same file, the same `meta` table, but
the journal's own tables (`searches`, `search_nodes`, `search_confirmations`) and its own schema
version (`meta.search_schema_version`), migrated forward, never dropped. Migrations run inside
a write transaction, so two processes opening a fresh database at once do not race. A node is
written in its own transaction and is durable when `record_node` returns (WAL,
`synchronous=FULL`).
"""

from __future__ import annotations

import json
import math
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import TritonsmithError
from .db import connect, migrate, write

__all__ = ["NODE_COLUMNS", "SCHEMA_VERSION", "JournalStore", "SearchSummary"]

SCHEMA_VERSION = 4
_VERSION_KEY = "search_schema_version"  # the failure log owns `schema_version`

_MIGRATIONS = {
    1: [
        """CREATE TABLE searches (
               id TEXT PRIMARY KEY,
               started REAL NOT NULL,
               finished REAL,
               status TEXT NOT NULL,
               path TEXT NOT NULL,
               kernel TEXT NOT NULL,
               task TEXT NOT NULL,
               settings TEXT NOT NULL
           )""",
        """CREATE TABLE search_nodes (
               search_id TEXT NOT NULL REFERENCES searches(id),
               node_id INTEGER NOT NULL,
               parent_id INTEGER NOT NULL,  -- -1: a child of the dummy root
               kind TEXT NOT NULL,
               source TEXT NOT NULL,
               outcome TEXT NOT NULL,
               reward REAL NOT NULL,
               speedup REAL,
               spread_low REAL,
               spread_high REAL,
               time_ms REAL,
               message TEXT NOT NULL,
               resources TEXT NOT NULL,
               seconds REAL NOT NULL,
               proposer TEXT NOT NULL,
               cost_usd REAL NOT NULL,
               propose_seconds REAL NOT NULL,
               created REAL NOT NULL,
               PRIMARY KEY (search_id, node_id)
           )""",
    ],
    # On a GPU, the speedup against the spec's PyTorch reference (tritonsmith bench reports it).
    2: ["ALTER TABLE search_nodes ADD COLUMN reference_speedup REAL"],
    # A node that is another's kernel for the timing (not re-timed), and the confirmation runs
    # behind a search's claim (stats.Confirmation.to_json, one row per confirmed node).
    3: [
        "ALTER TABLE search_nodes ADD COLUMN same_as INTEGER",
        """CREATE TABLE search_confirmations (
               search_id TEXT NOT NULL REFERENCES searches(id),
               node_id INTEGER NOT NULL,
               created REAL NOT NULL,
               claimed INTEGER NOT NULL,
               speedup REAL,
               low REAL,
               high REAL,
               noise_floor REAL,
               rounds INTEGER NOT NULL,
               data TEXT NOT NULL,
               PRIMARY KEY (search_id, node_id)
           )""",
    ],
    # Without a GPU, the predicted target time a search ranks by (evaluator/predict.py).
    4: ["ALTER TABLE search_nodes ADD COLUMN predicted_s REAL"],
}

NODE_COLUMNS = (
    "node_id", "parent_id", "kind", "source", "outcome", "reward", "speedup", "spread_low",
    "spread_high", "time_ms", "message", "resources", "seconds", "proposer", "cost_usd",
    "propose_seconds", "created", "reference_speedup", "same_as", "predicted_s",
)


@dataclass(frozen=True)
class SearchSummary:
    """One search as `Journal.searches` lists it."""

    id: str
    path: str
    kernel: str
    status: str  # "running" until `finish` (a killed search stays "running": resume it)
    started: float
    finished: float | None
    nodes: int  # evaluated nodes
    best_speedup: float | None  # the confirmed speedup the search claimed, if it claimed one
    cost_usd: float  # what the proposers had spent by the last node


class JournalStore:
    """The journal's rows in one workspace's `.tritonsmith/state.db`, safe across threads."""

    def __init__(self, root: Path) -> None:
        self.path, self._db = connect(root)
        self._lock = threading.Lock()  # used from the search engine's threads
        # FULL syncs the WAL on every commit: a recorded node survives a power cut too, not
        # only a killed process. A node costs an evaluation of seconds; one fsync is nothing.
        self._db.execute("PRAGMA synchronous=FULL")
        with write(self._db):
            migrate(self._db, key=_VERSION_KEY, version=SCHEMA_VERSION, migrations=_MIGRATIONS, path=self.path,
                    what="search journals")

    def start(self, path: str, kernel: str, task: dict[str, Any], settings: dict[str, Any]) -> str:
        """A new search, status "running"; returns its id, e.g. "s-20261129-193000-ab12"."""
        task_json, settings_json = json.dumps(task), json.dumps(settings)
        with self._lock:
            while True:
                search_id = f"s-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
                try:
                    with write(self._db):
                        self._db.execute(
                            "INSERT INTO searches(id, started, finished, status, path, kernel, task, settings) "
                            "VALUES (?, ?, NULL, 'running', ?, ?, ?, ?)",
                            (search_id, time.time(), path, kernel, task_json, settings_json),
                        )
                    return search_id
                except sqlite3.IntegrityError:
                    continue  # the same second and the same four hex digits: draw again

    def record_node(self, search_id: str, row: dict[str, Any]) -> None:
        """Write one node's row (a value for each of `NODE_COLUMNS`); recording a node again
        replaces its row (the same id is the same node)."""
        with self._lock, write(self._db):
            if self._db.execute("SELECT 1 FROM searches WHERE id = ?", (search_id,)).fetchone() is None:
                raise TritonsmithError(f"no search {search_id} in {self.path}")
            self._db.execute(
                f"INSERT OR REPLACE INTO search_nodes(search_id, {', '.join(NODE_COLUMNS)}) "
                f"VALUES ({', '.join('?' * (len(NODE_COLUMNS) + 1))})",
                (search_id, *(row[column] for column in NODE_COLUMNS)),
            )

    def record_confirmation(self, search_id: str, node_id: int, *, claimed: bool, speedup: float | None,
                            low: float | None, high: float | None, noise_floor: float | None, rounds: int,
                            data: dict[str, Any]) -> None:
        """Write the confirmation run of one node (replacing an earlier one of the same node);
        `data` is the whole confirmation, the other fields its summary for queries."""
        row = (search_id, node_id, time.time(), int(claimed), finite(speedup), finite(low), finite(high),
               finite(noise_floor), rounds, json.dumps(data))
        with self._lock, write(self._db):
            self._db.execute(
                "INSERT OR REPLACE INTO search_confirmations(search_id, node_id, created, claimed, speedup, low, "
                "high, noise_floor, rounds, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)

    def confirmations(self, search_id: str) -> list[tuple[int, dict[str, Any]]]:
        """The search's confirmation runs, oldest first, as (node id, data)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT node_id, data FROM search_confirmations WHERE search_id = ? ORDER BY created, node_id",
                (search_id,)).fetchall()
        return [(int(node_id), json.loads(data)) for node_id, data in rows]

    def finish(self, search_id: str, status: str) -> None:
        """Mark a search ended: "done", "cancelled", "failed", "budget", ... (free text)."""
        with self._lock, write(self._db):
            self._db.execute(
                "UPDATE searches SET status = ?, finished = ? WHERE id = ?", (status, time.time(), search_id)
            )

    def read(self, search_id: str) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        """The search's task and settings as stored, and its node rows in id order."""
        with self._lock:
            head = self._db.execute("SELECT task, settings FROM searches WHERE id = ?", (search_id,)).fetchone()
            if head is None:
                raise TritonsmithError(f"no search {search_id} in {self.path}")
            rows = self._db.execute(
                f"SELECT {', '.join(NODE_COLUMNS)} FROM search_nodes WHERE search_id = ? ORDER BY node_id",
                (search_id,),
            ).fetchall()
        return json.loads(head[0]), json.loads(head[1]), [dict(zip(NODE_COLUMNS, row, strict=True)) for row in rows]

    def compiled_sources(self, limit: int = 200) -> list[str]:
        """The newest distinct candidates that compiled (verified or not), at most `limit`:
        code known to compile, for graduation's contrast set."""
        with self._lock:
            rows = self._db.execute(
                "SELECT source FROM search_nodes WHERE outcome IN ('correct', 'wrong') AND source IS NOT NULL "
                "GROUP BY source ORDER BY MAX(created) DESC LIMIT ?", (limit,)).fetchall()
        return [str(row[0]) for row in rows]

    def searches(self) -> list[SearchSummary]:
        """Every search in this workspace, newest first."""
        with self._lock:
            rows = self._db.execute(
                """SELECT s.id, s.path, s.kernel, s.status, s.started, s.finished,
                          COUNT(n.node_id),
                          (SELECT MAX(c.speedup) FROM search_confirmations c WHERE c.search_id = s.id AND c.claimed),
                          COALESCE(MAX(n.cost_usd), 0)
                   FROM searches s LEFT JOIN search_nodes n ON n.search_id = s.id
                   GROUP BY s.id ORDER BY s.started DESC, s.id DESC"""
            ).fetchall()
        return [SearchSummary(*row) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def finite(value: float | None) -> float | None:
    """SQLite stores inf but not NaN (NaN reads back as NULL anyway); keep the columns honest."""
    if value is None or math.isnan(value):
        return None
    return value
