"""The search journal: every evaluated node of every search, in `.tritonsmith/state.db`.

A node is written in its own transaction the moment it is evaluated, and the write is durable
when `record` returns, so a search killed at any point loses only the candidates still in
flight, and `load` rebuilds the tree exactly (same ids, same statistics): `--resume` continues
without re-running an evaluated node. Random choices after a resume are drawn afresh; the
journal keeps the tree, not the random generator. The tables and their SQL are the state
package's (`state/journal.py`); this module turns trees, nodes and confirmations into its rows
and back.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from ..errors import TritonsmithError
from ..evaluator.stats import Confirmation
from ..state.journal import SCHEMA_VERSION, JournalStore, SearchSummary, finite
from .model import Evaluation, Outcome, StepKind, Task
from .tree import Node, Tree, TreeSettings

__all__ = ["SCHEMA_VERSION", "Journal", "SearchSummary"]


class Journal:
    """Searches and their evaluated nodes in one workspace's `.tritonsmith/state.db`."""

    def __init__(self, root: Path) -> None:
        self.store = JournalStore(root)
        self.path = self.store.path

    # -- writing ----------------------------------------------------------------------------

    def start(self, task: Task, settings: dict[str, Any]) -> str:
        """A new search, status "running"; returns its id, e.g. "s-20261129-193000-ab12".

        `settings` is stored as JSON; `load` builds the tree from its `"tree"` dict (the
        `TreeSettings` fields), or from `TreeSettings` keys at its top level when it has none.
        """
        return self.store.start(task.path, task.kernel, asdict(task), settings)

    def record(self, search_id: str, node: Node) -> None:
        """Write one evaluated node; durable when this returns. Recording a node again
        replaces its row (the same id is the same node)."""
        evaluation = node.evaluation
        if evaluation is None or node.parent is None:
            raise ValueError(f"node {node.id} has not been evaluated; only evaluated nodes are journaled")
        spread = evaluation.spread or (None, None)
        self.store.record_node(search_id, {
            "node_id": node.id, "parent_id": node.parent, "kind": node.kind.value, "source": node.source,
            "outcome": evaluation.outcome.value, "reward": node.reward, "speedup": finite(evaluation.speedup),
            "spread_low": finite(spread[0]), "spread_high": finite(spread[1]),
            "time_ms": finite(evaluation.time_ms), "message": evaluation.message,
            "resources": json.dumps(evaluation.resources, default=str), "seconds": evaluation.seconds,
            "proposer": node.proposer, "cost_usd": node.cost_usd, "propose_seconds": node.propose_seconds,
            "created": node.created, "reference_speedup": finite(evaluation.reference_speedup),
            "same_as": evaluation.same_as, "predicted_s": finite(evaluation.predicted_s),
        })

    def record_confirmation(self, search_id: str, node_id: int, confirmation: Confirmation) -> None:
        """Write the confirmation run of one node (replacing an earlier one of the same node)."""
        self.store.record_confirmation(
            search_id, node_id, claimed=confirmation.claimed, speedup=confirmation.speedup, low=confirmation.low,
            high=confirmation.high, noise_floor=confirmation.noise_floor, rounds=confirmation.rounds,
            data=confirmation.to_json())

    def confirmations(self, search_id: str) -> list[tuple[int, Confirmation]]:
        """The search's confirmation runs, oldest first, as (node id, confirmation)."""
        return [(node_id, Confirmation.from_json(data)) for node_id, data in self.store.confirmations(search_id)]

    def claimed(self, search_id: str) -> tuple[int, Confirmation] | None:
        """The node whose speedup the search claimed, with its confirmation, if any."""
        return next(((n, c) for n, c in reversed(self.confirmations(search_id)) if c.claimed), None)

    def finish(self, search_id: str, status: str) -> None:
        """Mark a search ended: "done", "cancelled", "failed", "budget", ... (free text)."""
        self.store.finish(search_id, status)

    # -- reading ----------------------------------------------------------------------------

    def load(self, search_id: str) -> tuple[Task, dict[str, Any], Tree]:
        """The search's task, its settings and its tree rebuilt from the journal: the same
        node ids, visits, totals and maxima as when each node was recorded; the next new node
        takes the id after the highest recorded one."""
        task_data, settings, rows = self.store.read(search_id)
        known = {f.name for f in fields(Task)}
        task = Task(**{key: value for key, value in task_data.items() if key in known})
        nested = settings.get("tree")
        tree = Tree(TreeSettings.from_dict(nested if isinstance(nested, dict) else settings))
        # A parent is always evaluated before a child is reserved under it, so its id is
        # smaller: id order is a topological order.
        for values in rows:
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
                predicted_s=values["predicted_s"],
            )
            tree.add(
                parent, StepKind(values["kind"]), values["source"], evaluation,
                node_id=values["node_id"], proposer=values["proposer"], cost_usd=values["cost_usd"],
                propose_seconds=values["propose_seconds"], created=values["created"],
            )
        return task, settings, tree

    def searches(self) -> list[SearchSummary]:
        """Every search in this workspace, newest first."""
        return self.store.searches()

    def close(self) -> None:
        self.store.close()
