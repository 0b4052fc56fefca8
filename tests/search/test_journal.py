"""The search journal in `.tritonsmith/state.db`: recorded as evaluated, durable, resumable."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tritonsmith.errors import TritonsmithError
from tritonsmith.search.journal import SCHEMA_VERSION, Journal
from tritonsmith.search.model import Evaluation, Outcome, StepKind, Task
from tritonsmith.search.tree import Node, Tree, TreeSettings
from tritonsmith.state import FailureLog

TASK = Task(path="k.py", kernel="add_kernel", source="# original\n", spec="harness:launch", device="interpreter",
            target="sm_90", target_facts="CPU interpreter")
SETTINGS: dict[str, Any] = {**TreeSettings(pool_size=4).to_dict(), "steps": 50, "proposer": "offline"}


def evaluation(rng: random.Random) -> Evaluation:
    outcome = rng.choice(list(Outcome))
    if outcome is Outcome.CORRECT:
        speedup = rng.uniform(0.5, 12.0)
        return Evaluation(outcome, speedup=speedup, spread=(speedup * 0.9, speedup * 1.1), time_ms=rng.uniform(0.1, 3),
                          message="verified", seconds=rng.uniform(1, 5),
                          resources=[{"config": "BLOCK=128", "target": "sm_90",
                                      "resources": {"registers": 32, "spills": 0, "shared": 0}}])
    return Evaluation(outcome, message=f"{outcome.value} because", seconds=0.5)


def grow(tree: Tree, steps: int, seed: int, journal: Journal | None = None, search_id: str = "") -> None:
    """A search with a random evaluator, each node recorded as it is evaluated."""
    rng = random.Random(seed)
    if not tree.root.children:
        node = tree.add(tree.root, StepKind.ROOT, TASK.source, Evaluation(Outcome.CORRECT, speedup=1.0))
        if journal:
            journal.record(search_id, node)
    for step in range(steps):
        parent, kind = tree.select(rng)
        node = tree.add(parent, kind, f"# candidate {tree.next_id}\n", evaluation(rng),
                        proposer="offline", cost_usd=0.01 * step, propose_seconds=0.2)
        if journal:
            journal.record(search_id, node)


def shape(tree: Tree) -> list[tuple[Any, ...]]:
    """Everything a resumed search depends on, node by node."""
    return [
        (n.id, n.parent, n.kind, n.source, n.evaluation, n.visits, round(n.total, 9), n.best,
         [c.id for c in n.children], n.proposer, n.cost_usd, n.propose_seconds, n.created)
        for n in sorted(tree.nodes.values(), key=lambda n: n.id)
    ]


def test_record_and_load_round_trip_the_tree(tmp_path: Path):
    journal = Journal(tmp_path)
    search_id = journal.start(TASK, SETTINGS)
    assert search_id.startswith("s-") and len(search_id) == len("s-20261129-193000-ab12")
    tree = Tree(TreeSettings.from_dict(SETTINGS))
    grow(tree, 40, seed=1, journal=journal, search_id=search_id)
    journal.close()

    task, settings, loaded = Journal(tmp_path).load(search_id)
    assert task == TASK and settings == SETTINGS
    assert loaded.settings == TreeSettings(pool_size=4)
    assert shape(loaded) == shape(tree)
    assert loaded.next_id == tree.next_id == 41
    rng_a, rng_b = random.Random(5), random.Random(5)
    assert loaded.select(rng_a)[0].id == tree.select(rng_b)[0].id
    best = loaded.best()
    assert best is not None and best.id == tree.best().id  # type: ignore[union-attr]


def test_a_resumed_search_continues_the_ids_and_the_statistics(tmp_path: Path):
    journal = Journal(tmp_path)
    search_id = journal.start(TASK, SETTINGS)
    tree = Tree()
    grow(tree, 10, seed=2, journal=journal, search_id=search_id)
    in_flight = tree.reserve(tree.root, StepKind.REGENERATE)  # killed before it was evaluated
    assert in_flight.id == 11

    _, _, resumed = journal.load(search_id)
    assert 11 not in resumed.nodes and resumed.next_id == 11  # nothing evaluated is lost
    assert resumed.root.visits == 11
    grow(resumed, 5, seed=3, journal=journal, search_id=search_id)
    assert sorted(resumed.nodes) == list(range(-1, 16))
    _, _, again = journal.load(search_id)
    assert shape(again) == shape(resumed)
    [summary] = journal.searches()
    assert (summary.id, summary.status, summary.nodes, summary.kernel) == (search_id, "running", 16, "add_kernel")
    journal.finish(search_id, "done")
    [summary] = journal.searches()
    assert summary.status == "done" and summary.finished is not None
    assert summary.best_speedup is None  # screening figures are never a search's speedup


def test_out_of_order_completion_reloads_the_same_tree(tmp_path: Path):
    journal = Journal(tmp_path)
    search_id = journal.start(TASK, SETTINGS)
    tree = Tree()
    grow(tree, 2, seed=4, journal=journal, search_id=search_id)
    first = tree.reserve(tree.nodes[0], StepKind.REFINE)
    second = tree.reserve(tree.root, StepKind.REGENERATE)
    journal.record(search_id, tree.complete(second, Evaluation(Outcome.WRONG), source="b"))
    journal.record(search_id, tree.complete(first, Evaluation(Outcome.CORRECT, speedup=3.0), source="a"))
    assert shape(journal.load(search_id)[2]) == shape(tree)


def test_only_evaluated_nodes_of_known_searches_are_recorded(tmp_path: Path):
    journal = Journal(tmp_path)
    search_id = journal.start(TASK, {})
    tree = Tree()
    original = tree.add(tree.root, StepKind.ROOT, "x", Evaluation(Outcome.CORRECT, speedup=1.0))
    with pytest.raises(ValueError):
        journal.record(search_id, tree.reserve(original, StepKind.REFINE))
    with pytest.raises(ValueError):
        journal.record(search_id, tree.root)
    with pytest.raises(TritonsmithError):
        journal.record("s-nope", original)
    with pytest.raises(TritonsmithError):
        journal.load("s-nope")
    assert journal.load(search_id)[2].settings == TreeSettings()  # no tree keys: the defaults
    nested = journal.start(TASK, {"tree": TreeSettings(alpha=0.5).to_dict(), "pool_size": 1})
    assert journal.load(nested)[2].settings == TreeSettings(alpha=0.5)  # the "tree" dict wins


def test_shares_state_db_with_the_failure_log_and_keeps_its_own_version(tmp_path: Path):
    log = FailureLog(tmp_path)
    journal = Journal(tmp_path)
    assert journal.path == log.path
    log.record(path="k.py", kernel="k", stage="compile", message="m", rules=["TS101"])
    journal.start(TASK, {})
    log.close()
    journal.close()
    assert FailureLog(tmp_path).rule_counts() == {"TS101": 1}
    assert len(Journal(tmp_path).searches()) == 1
    db = sqlite3.connect(journal.path)
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    assert meta["search_schema_version"] == str(SCHEMA_VERSION) and "schema_version" in meta
    db.execute("UPDATE meta SET value = ? WHERE key = 'search_schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    with pytest.raises(TritonsmithError, match="newer tritonsmith"):
        Journal(tmp_path)
    FailureLog(tmp_path).close()  # the failure log does not care about the journal's version


def _run(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_node_recorded_just_before_sigkill_survives(tmp_path: Path):
    code = """
        import os, signal, sys
        from pathlib import Path
        from tritonsmith.search.journal import Journal
        from tritonsmith.search.model import Evaluation, Outcome, StepKind, Task
        from tritonsmith.search.tree import Tree

        journal = Journal(Path(sys.argv[1]))
        search_id = journal.start(Task("k.py", "k", "src", "oracle", "interpreter"), {})
        print(search_id, flush=True)
        tree = Tree()
        node = tree.add(tree.root, StepKind.ROOT, "src", Evaluation(Outcome.CORRECT, speedup=1.0))
        journal.record(search_id, node)
        node = tree.add(node, StepKind.REFINE, "faster", Evaluation(Outcome.CORRECT, speedup=2.5))
        journal.record(search_id, node)
        os.kill(os.getpid(), signal.SIGKILL)  # no close, no checkpoint, no exit handlers
    """
    process = _run(code, str(tmp_path))
    out, err = process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL, err
    search_id = out.strip()
    assert (tmp_path / ".tritonsmith" / "state.db-wal").exists()  # the node is in the WAL only
    _, _, tree = Journal(tmp_path).load(search_id)
    assert [(n.id, n.source) for n in tree.evaluated()] == [(0, "src"), (1, "faster")]
    assert tree.nodes[1].evaluation is not None and tree.nodes[1].evaluation.speedup == 2.5


def test_two_processes_write_to_the_same_database(tmp_path: Path):
    code = """
        import random, sys
        from pathlib import Path
        from tritonsmith.search.journal import Journal
        from tritonsmith.search.model import Evaluation, Outcome, StepKind, Task
        from tritonsmith.search.tree import Tree

        journal = Journal(Path(sys.argv[1]))
        search_id = journal.start(Task("k.py", sys.argv[2], "src", "oracle", "interpreter"), {})
        rng = random.Random(sys.argv[2])
        tree = Tree()
        journal.record(search_id, tree.add(tree.root, StepKind.ROOT, "src", Evaluation(Outcome.CORRECT, speedup=1.0)))
        for i in range(60):
            parent, kind = tree.select(rng)
            node = tree.add(parent, kind, f"{i}", Evaluation(Outcome.CORRECT, speedup=rng.uniform(0.5, 3)))
            journal.record(search_id, node)
        print(search_id)
    """
    processes = [_run(code, str(tmp_path), name) for name in ("first", "second")]  # a fresh database: both migrate
    ids = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        ids.append(out.strip())
    journal = Journal(tmp_path)
    summaries = {s.id: s for s in journal.searches()}
    assert set(summaries) == set(ids)
    assert {s.kernel for s in summaries.values()} == {"first", "second"}
    for search_id in ids:
        assert summaries[search_id].nodes == 61
        assert journal.load(search_id)[2].root.visits == 61


def test_node_fields_survive_in_the_columns(tmp_path: Path):
    journal = Journal(tmp_path)
    search_id = journal.start(TASK, {})
    tree = Tree()
    node: Node = tree.add(tree.root, StepKind.ROOT, "s", Evaluation(
        Outcome.CORRECT, speedup=1.0, spread=(0.98, 1.02), time_ms=0.25, message="ok",
        resources=[{"config": "c", "resources": {"registers": 40}}], seconds=3.5))
    journal.record(search_id, node)
    db = sqlite3.connect(journal.path)
    row = db.execute("SELECT parent_id, kind, outcome, reward, spread_low, spread_high, resources, seconds "
                     "FROM search_nodes").fetchone()
    assert row[:3] == (-1, "root", "correct")
    assert row[3] == pytest.approx(node.reward)
    assert row[4:6] == (0.98, 1.02) and '"registers": 40' in row[6] and row[7] == 3.5


def test_a_version_1_journal_migrates_forward_and_keeps_the_reference_speedup(tmp_path: Path):
    """Journals written before `reference_speedup` existed open, keep every node, and new
    nodes keep their speedup against the PyTorch reference (a GPU bench resumed reads it back)."""
    import json
    import sqlite3

    from tritonsmith.search.model import Evaluation, Outcome, StepKind
    from tritonsmith.state import journal as journal_module

    (tmp_path / ".tritonsmith").mkdir()
    with sqlite3.connect(tmp_path / ".tritonsmith" / "state.db") as db:  # what version 1 wrote
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('search_schema_version', '1')")
        for statement in journal_module._MIGRATIONS[1]:
            db.execute(statement)
        task = {"path": "k.py", "kernel": "k", "source": "src", "spec": "harness:k", "device": "gpu",
                "target": "sm_90", "target_facts": ""}
        db.execute("INSERT INTO searches VALUES ('s-old', 1.0, NULL, 'running', 'k.py', 'k', ?, '{}')",
                   (json.dumps(task),))
        db.execute("INSERT INTO search_nodes VALUES ('s-old', 0, -1, 'root', 'src', 'correct', 0.42, 1.0, 0.9, 1.1, "
                   "2.0, 'ok', '[]', 1.0, '', 0.0, 0.0, 1.0)")
    journal = Journal(tmp_path)
    with sqlite3.connect(journal.path) as db:
        assert dict(db.execute("SELECT key, value FROM meta"))["search_schema_version"] == str(SCHEMA_VERSION)
    _, _, loaded = journal.load("s-old")
    assert loaded.nodes[0].evaluation is not None and loaded.nodes[0].evaluation.reference_speedup is None
    node = loaded.add(loaded.nodes[0], StepKind.REFINE, "src2",
                      Evaluation(Outcome.CORRECT, speedup=1.5, time_ms=1.3, reference_speedup=0.8))
    journal.record("s-old", node)
    _, _, again = journal.load("s-old")
    assert again.nodes[1].evaluation is not None and again.nodes[1].evaluation.reference_speedup == 0.8


def test_confirmations_are_kept_and_only_a_claimed_one_is_the_searchs_speedup(tmp_path: Path):
    from tritonsmith.evaluator.stats import Confirmation

    journal = Journal(tmp_path)
    search_id = journal.start(TASK, {})
    tree = Tree()
    root = tree.add(tree.root, StepKind.ROOT, "s", Evaluation(Outcome.CORRECT, speedup=1.0, time_ms=2.0))
    same = tree.add(root, StepKind.REFINE, "s2", Evaluation(Outcome.CORRECT, speedup=1.0, time_ms=2.0, same_as=0))
    for node in (root, same):
        journal.record(search_id, node)
    assert journal.load(search_id)[2].nodes[1].evaluation.same_as == 0  # type: ignore[union-attr]
    unclaimed = Confirmation(speedup=1.04, low=0.97, high=1.1, noise_floor=0.03, rounds=6, claimed=False,
                             stopped="futile", original_ms=(1.0,) * 6, original_b_ms=(1.0,) * 6, candidate_ms=(0.96,) * 6)
    journal.record_confirmation(search_id, 1, unclaimed)
    assert journal.claimed(search_id) is None and journal.searches()[0].best_speedup is None
    [(node_id, loaded)] = journal.confirmations(search_id)
    assert node_id == 1 and loaded.text() == unclaimed.text() and loaded.candidate_ms == (0.96,) * 6
    claimed = Confirmation(speedup=1.5, low=1.4, high=1.6, noise_floor=0.02, rounds=8, claimed=True, stopped="tight")
    journal.record_confirmation(search_id, 2, claimed)
    assert journal.claimed(search_id) == (2, claimed) and journal.searches()[0].best_speedup == 1.5
    assert loaded.text() == "no improvement (best 1.04×, CI 0.97–1.10×, within noise; noise floor 3%)"
    assert claimed.text() == "1.50× (95% CI 1.40–1.60×, noise floor 2%)"


def test_a_version_2_journal_migrates_to_3(tmp_path: Path):
    import sqlite3

    from tritonsmith.state import journal as journal_module

    (tmp_path / ".tritonsmith").mkdir()
    with sqlite3.connect(tmp_path / ".tritonsmith" / "state.db") as db:  # what version 2 wrote
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('search_schema_version', '2')")
        for version in (1, 2):
            for statement in journal_module._MIGRATIONS[version]:
                db.execute(statement)
    journal = Journal(tmp_path)
    search_id = journal.start(TASK, {})
    tree = Tree()
    journal.record(search_id, tree.add(tree.root, StepKind.ROOT, "s", Evaluation(Outcome.CORRECT, speedup=1.0)))
    assert journal.confirmations(search_id) == []
    assert journal.load(search_id)[2].nodes[0].evaluation.same_as is None  # type: ignore[union-attr]
