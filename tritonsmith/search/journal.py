"""The search journal: every evaluated node of every search, in `.tritonsmith/state.db`.

A node is written in its own transaction the moment it is evaluated, and the write is durable
when `record` returns (WAL, `synchronous=FULL`), so a search killed at any point loses only the
candidates still in flight, and `load` rebuilds the tree exactly (same ids, same statistics):
`--resume` continues without re-running an evaluated node. Random choices after a resume are
drawn afresh; the journal keeps the tree, not the random generator.

The database is the failure log's (`adapt/failure_log.py`): the same file, the same `meta`
table, but the journal's own tables (`searches`, `search_nodes`) and its own schema version
(`meta.search_schema_version`), migrated forward, never dropped. Migrations run inside a
write transaction, so two processes opening a fresh database at once do not race.
"""

from __future__ import annotations

import json
import math
import secrets
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ..adapt.statedb import connect, migrate, write
from ..errors import TritonsmithError
from ..evaluator.stats import Confirmation
from .model import Evaluation, Outcome, StepKind, Task
from .tree import Node, Tree, TreeSettings

__all__ = ["SCHEMA_VERSION", "Journal", "SearchSummary"]

SCHEMA_VERSION = 3
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
}

_NODE_COLUMNS = (
    "node_id", "parent_id", "kind", "source", "outcome", "reward", "speedup", "spread_low",
    "spread_high", "time_ms", "message", "resources", "seconds", "proposer", "cost_usd",
    "propose_seconds", "created", "reference_speedup", "same_as",
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


class Journal:
    """Searches and their evaluated nodes in one workspace's `.tritonsmith/state.db`."""

    def __init__(self, root: Path) -> None:
        self.path, self._db = connect(root)
        self._lock = threading.Lock()  # used from the engine's threads
        # FULL syncs the WAL on every commit: a recorded node survives a power cut too, not
        # only a killed process. A node costs an evaluation of seconds; one fsync is nothing.
        self._db.execute("PRAGMA synchronous=FULL")
        self._migrate()

    def _migrate(self) -> None:
        with write(self._db):
            migrate(self._db, key=_VERSION_KEY, version=SCHEMA_VERSION, migrations=_MIGRATIONS, path=self.path,
                    what="search journals")

    # -- writing ----------------------------------------------------------------------------

    def start(self, task: Task, settings: dict[str, Any]) -> str:
        """A new search, status "running"; returns its id, e.g. "s-20261129-193000-ab12".

        `settings` is stored as JSON; `load` builds the tree from its `"tree"` dict (the
        `TreeSettings` fields), or from `TreeSettings` keys at its top level when it has none.
        """
        task_json = json.dumps(asdict(task))
        settings_json = json.dumps(settings)
        with self._lock:
            while True:
                search_id = f"s-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
                try:
                    with write(self._db):
                        self._db.execute(
                            "INSERT INTO searches(id, started, finished, status, path, kernel, task, settings) "
                            "VALUES (?, ?, NULL, 'running', ?, ?, ?, ?)",
                            (search_id, time.time(), task.path, task.kernel, task_json, settings_json),
                        )
                    return search_id
                except sqlite3.IntegrityError:
                    continue  # the same second and the same four hex digits: draw again

    def record(self, search_id: str, node: Node) -> None:
        """Write one evaluated node; durable when this returns. Recording a node again
        replaces its row (the same id is the same node)."""
        evaluation = node.evaluation
        if evaluation is None or node.parent is None:
            raise ValueError(f"node {node.id} has not been evaluated; only evaluated nodes are journaled")
        spread = evaluation.spread or (None, None)
        row = (
            search_id, node.id, node.parent, node.kind.value, node.source, evaluation.outcome.value,
            node.reward, _finite(evaluation.speedup), _finite(spread[0]), _finite(spread[1]),
            _finite(evaluation.time_ms), evaluation.message, json.dumps(evaluation.resources, default=str),
            evaluation.seconds, node.proposer, node.cost_usd, node.propose_seconds, node.created,
            _finite(evaluation.reference_speedup), evaluation.same_as,
        )
        with self._lock, write(self._db):
            if self._db.execute("SELECT 1 FROM searches WHERE id = ?", (search_id,)).fetchone() is None:
                raise TritonsmithError(f"no search {search_id} in {self.path}")
            self._db.execute(
                f"INSERT OR REPLACE INTO search_nodes(search_id, {', '.join(_NODE_COLUMNS)}) "
                f"VALUES ({', '.join('?' * (len(_NODE_COLUMNS) + 1))})",
                row,
            )

    def record_confirmation(self, search_id: str, node_id: int, confirmation: Confirmation) -> None:
        """Write the confirmation run of one node (replacing an earlier one of the same node)."""
        row = (search_id, node_id, time.time(), int(confirmation.claimed), _finite(confirmation.speedup),
               _finite(confirmation.low), _finite(confirmation.high), _finite(confirmation.noise_floor),
               confirmation.rounds, json.dumps(confirmation.to_json()))
        with self._lock, write(self._db):
            self._db.execute(
                "INSERT OR REPLACE INTO search_confirmations(search_id, node_id, created, claimed, speedup, low, "
                "high, noise_floor, rounds, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)

    def confirmations(self, search_id: str) -> list[tuple[int, Confirmation]]:
        """The search's confirmation runs, oldest first, as (node id, confirmation)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT node_id, data FROM search_confirmations WHERE search_id = ? ORDER BY created, node_id",
                (search_id,)).fetchall()
        return [(int(node_id), Confirmation.from_json(json.loads(data))) for node_id, data in rows]

    def claimed(self, search_id: str) -> tuple[int, Confirmation] | None:
        """The node whose speedup the search claimed, with its confirmation, if any."""
        return next(((n, c) for n, c in reversed(self.confirmations(search_id)) if c.claimed), None)

    def finish(self, search_id: str, status: str) -> None:
        """Mark a search ended: "done", "cancelled", "failed", "budget", ... (free text)."""
        with self._lock, write(self._db):
            self._db.execute(
                "UPDATE searches SET status = ?, finished = ? WHERE id = ?", (status, time.time(), search_id)
            )

    # -- reading ----------------------------------------------------------------------------

    def load(self, search_id: str) -> tuple[Task, dict[str, Any], Tree]:
        """The search's task, its settings and its tree rebuilt from the journal: the same
        node ids, visits, totals and maxima as when each node was recorded; the next new node
        takes the id after the highest recorded one."""
        with self._lock:
            head = self._db.execute("SELECT task, settings FROM searches WHERE id = ?", (search_id,)).fetchone()
            if head is None:
                raise TritonsmithError(f"no search {search_id} in {self.path}")
            rows = self._db.execute(
                f"SELECT {', '.join(_NODE_COLUMNS)} FROM search_nodes WHERE search_id = ? ORDER BY node_id",
                (search_id,),
            ).fetchall()
        task_data = json.loads(head[0])
        known = {f.name for f in fields(Task)}
        task = Task(**{key: value for key, value in task_data.items() if key in known})
        settings: dict[str, Any] = json.loads(head[1])
        nested = settings.get("tree")
        tree = Tree(TreeSettings.from_dict(nested if isinstance(nested, dict) else settings))
        # A parent is always evaluated before a child is reserved under it, so its id is
        # smaller: id order is a topological order.
        for row in rows:
            values = dict(zip(_NODE_COLUMNS, row))
            parent = tree.nodes.get(values["parent_id"])
            if parent is None:
                raise TritonsmithError(
                    f"search {search_id}: node {values['node_id']} names parent {values['parent_id']}, "
                    "which is not in the journal"
                )
            low, high = values["spread_low"], values["spread_high"]
            evaluation = Evaluation(
                outcome=Outcome(values["outcome"]),
                speedup=values["speedup"],
                spread=(low, high) if low is not None and high is not None else None,
                time_ms=values["time_ms"],
                message=values["message"],
                resources=json.loads(values["resources"]),
                seconds=values["seconds"],
                reference_speedup=values["reference_speedup"],
                same_as=values["same_as"],
            )
            tree.add(
                parent, StepKind(values["kind"]), values["source"], evaluation,
                node_id=values["node_id"], proposer=values["proposer"], cost_usd=values["cost_usd"],
                propose_seconds=values["propose_seconds"], created=values["created"],
            )
        return task, settings, tree

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


def _finite(value: float | None) -> float | None:
    # SQLite stores inf but not NaN (NaN reads back as NULL anyway); keep the column honest.
    if value is None or math.isnan(value):
        return None
    return value

