"""Evaluations on a Ray cluster (search/distributed.py): a local cluster started here (a head
with no CPUs and two one-CPU worker nodes, so every actor runs on a worker node), a scripted
evaluator in the actors (no triton), and a worker node removed mid-search: the search spends its
budget and the journal holds every node once. Without a Ray address nothing imports ray."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tritonsmith.evaluator.stats import Confirmation
from tritonsmith.search.engine import Progress, Search, SearchOptions
from tritonsmith.search.journal import Journal
from tritonsmith.search.model import Edit, Evaluation, Outcome, StepContext, Task

ORIGINAL = "def kernel():\n    BLOCK = 16\n"

SYSTEM_CONFIG = {  # notice a dead node within about a second, not the default tens of seconds
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 200,
    "health_check_timeout_ms": 200,
    "health_check_failure_threshold": 3,
}


class BlockProposer:
    """Refines by doubling BLOCK; regenerates a BLOCK from a seeded draw (some too large)."""

    name = "scripted"
    cost_usd = 0.0

    def __init__(self) -> None:
        self.draws = 0

    def refine(self, context: StepContext) -> tuple[str, list[Edit]]:
        base = context.chain[-1][0]
        block = int(base.split("BLOCK = ")[1].split()[0])
        edit = Edit(f"BLOCK = {block}", f"BLOCK = {block * 2}")
        return base.replace(edit.old, edit.new), [edit]

    def regenerate(self, context: StepContext) -> str:
        self.draws += 1
        return f"def kernel():\n    BLOCK = {(256, 512, 8192)[self.draws % 3]}\n"


PIDS = "TRITONSMITH_TEST_RAY_PIDS"


class SleepyBlockEvaluator:
    """Runs in the actors: time = 1 / BLOCK after a short sleep (so node death finds work in flight)."""

    def __init__(self, task: Task, spec: Any, *, failure_log: Any = None, **options: Any) -> None:
        import ray

        self.baseline_ms: float | None = None
        self.failure_log = failure_log
        pids = Path(os.environ[PIDS])  # where the test finds the actor's process on each node
        pids.mkdir(exist_ok=True)
        (pids / ray.get_runtime_context().get_node_id()).write_text(str(os.getpid()))

    def evaluate(self, source: str) -> Evaluation:
        import ray

        time.sleep(0.4)
        block = int(source.split("BLOCK = ")[1].split()[0])
        node = ray.get_runtime_context().get_node_id()[:8]
        if block > 4096:
            if self.failure_log is not None:
                self.failure_log.record(path="k.py", kernel="kernel", stage="compile", message="BLOCK too large",
                                        rules=[])
            return Evaluation(Outcome.NOT_COMPILED, message=f"BLOCK too large (node {node})")
        time_ms = 1000.0 / block
        baseline = self.baseline_ms if self.baseline_ms is not None else time_ms
        speedup = baseline / time_ms
        return Evaluation(Outcome.CORRECT, speedup=speedup, spread=(speedup * 0.98, speedup * 1.02), time_ms=time_ms,
                          message=f"baseline {baseline} (node {node})")


    def confirm(self, original: str, candidate: str, progress: Any = None) -> Confirmation:
        """In the actor, as the real one: both sides re-timed (here made up, 2% noise)."""
        import random

        from tritonsmith.evaluator.stats import RoundPolicy, confirm

        noise = random.Random(0)
        times = {"original": 1000.0 / _block(original), "original_b": 1000.0 / _block(original),
                 "candidate": 1000.0 / _block(candidate)}
        return confirm(lambda r, order: {side: t * noise.uniform(0.98, 1.02) for side, t in times.items()},
                       RoundPolicy(), progress=progress)


def _block(source: str) -> int:
    return int(source.split("BLOCK = ")[1].split()[0])


class DriverLog:
    """The driver's failure log: what the actors recorded arrives here."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.records: list[dict[str, Any]] = []

    def record(self, **fields: Any) -> None:
        self.records.append(fields)


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    monkeypatch.setenv(PIDS, str(tmp_path / "pids"))  # the nodes' processes inherit it
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the actors need this module's evaluator
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "object_store_memory": 80 * 2**20, "_system_config": SYSTEM_CONFIG,
    })
    workers = [cluster.add_node(num_cpus=1, object_store_memory=80 * 2**20) for _ in range(2)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    try:
        yield cluster, workers
    finally:
        ray.shutdown()
        cluster.shutdown()


def _task(tmp_path: Path) -> Task:
    path = tmp_path / "k.py"
    path.write_text(ORIGINAL)
    return Task(path=str(path), kernel="kernel", source=ORIGINAL, spec="harness:k", device="interpreter")


def _journaled(journal: Journal, search_id: str) -> list[tuple[int, str, str]]:
    with sqlite3.connect(journal.path) as db:
        return db.execute("SELECT node_id, outcome, message FROM search_nodes WHERE search_id = ? ORDER BY node_id",
                          (search_id,)).fetchall()


@pytest.mark.slow  # over 3 s: outside the fast loop
def test_a_search_on_a_ray_cluster_survives_a_worker_node_dying(tmp_path: Path, cluster: Any) -> None:
    from tritonsmith.search.distributed import LOST_MESSAGE, RayEvaluator

    ray_cluster, workers = cluster
    task = _task(tmp_path)
    log = DriverLog(tmp_path)
    evaluator = RayEvaluator(task, None, address=ray_cluster.address, factory=SleepyBlockEvaluator,  # type: ignore[arg-type]
                             failure_log=log)
    assert evaluator.size == 2 and evaluator.per_actor == {"num_cpus": 1}
    killed = threading.Event()

    def kill_soon() -> None:
        time.sleep(0.2)  # both actors are mid-evaluation
        # A node dies with its processes: the raylet and the rest, then the actor's worker.
        pid = int((tmp_path / "pids" / workers[0].node_id).read_text())
        ray_cluster.remove_node(workers[0], allow_graceful=False)
        with contextlib.suppress(ProcessLookupError):  # gone with its raylet already
            os.kill(pid, signal.SIGKILL)
        killed.set()

    def progress(update: Progress) -> None:
        if update.step == 4:
            threading.Thread(target=kill_soon, daemon=True).start()

    journal = Journal(tmp_path)
    steps = 12
    with evaluator:
        search = Search(task, BlockProposer(), evaluator, journal, SearchOptions(steps=steps, seed=1, concurrency=evaluator.size),
                        progress=progress)
        result = search.run()
    assert killed.is_set()
    assert result.stopped == "budget" and result.tree.evaluated_count == steps + 1
    rows = _journaled(journal, result.search_id)
    assert [row[0] for row in rows] == list(range(steps + 1))  # every node once, dense ids
    assert all(LOST_MESSAGE not in message and "step failed" not in message for _, _, message in rows), rows
    # The actors on the surviving node took over: the dead node's evaluation was retried there.
    assert evaluator.lost >= 1
    # One baseline for every node: the root's time.
    root_ms = 1000.0 / 16
    assert all(f"baseline {root_ms}" in message for _, outcome, message in rows if outcome == Outcome.CORRECT.value
               and not message.startswith("same as")), rows
    assert result.improved and result.speedup is not None and result.speedup >= 16
    # Failures recorded on the nodes reached the driver's log.
    blocked = [row for row in rows if "BLOCK too large" in row[2] and not row[2].startswith("same as")]
    assert len(log.records) == len(blocked)


def test_without_a_ray_address_nothing_imports_ray(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from tritonsmith.search import setup\n"
        "from tritonsmith.benchmark import runner\n"
        "import tritonsmith.cli\n"
        "assert setup.SearchRequest(path=None, kernel='k', device='interpreter').ray_address is None\n"
        "assert 'ray' not in sys.modules, 'ray imported'\n"
        "assert 'tritonsmith.search.distributed' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_missing_ray_is_a_setup_error_that_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from tritonsmith.search.distributed import RayUnavailable, import_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(RayUnavailable, match=r'pip install "tritonsmith\[ray\]"'):
        import_ray()


@pytest.mark.compiler
def test_the_real_evaluator_runs_on_the_clusters_actors(tmp_path: Path, cluster: Any) -> None:
    """Compile, verify and time in a Ray actor on a worker node, with the evaluator's own
    sandboxed pools there: a correct variant and a wrong one, against one baseline."""
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    from tritonsmith.evaluator.specs import detect_specs
    from tritonsmith.search.distributed import RayEvaluator

    ray_cluster, _ = cluster
    example = Path(__file__).resolve().parents[2] / "examples" / "vector_add.py"
    path = tmp_path / "vector_add.py"
    source = example.read_text()
    path.write_text(source)
    (spec,) = detect_specs(path)
    task = Task(path=str(path), kernel="add_kernel", source=source, spec="harness:add", device="interpreter")
    with RayEvaluator(task, spec, address=ray_cluster.address, actors=1) as evaluator:
        original = evaluator.evaluate(source)
        wrong = evaluator.evaluate(source.replace("x + y", "x - y"))
    assert original.outcome is Outcome.CORRECT and original.speedup == pytest.approx(1.0), original.message
    assert "verified · interpreter" in original.message
    assert wrong.outcome is Outcome.WRONG and "max abs error" in wrong.message
