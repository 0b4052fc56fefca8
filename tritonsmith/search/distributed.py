"""Evaluations on a Ray cluster: the same `Evaluator` protocol as `CandidateEvaluator`, with
each evaluation (compile, verify, time) run by an actor pinned to one GPU of the cluster (one
CPU on a cluster without GPUs).

Each actor builds a `CandidateEvaluator` on its node once and keeps it, with its worker pools
warm: the sandboxing is the same (spawned, secret-free workers, no network, timeouts), only the
process that drives it moved. The journal stays on the driver: only sources go out and
`Evaluation`s come back. The failure log stays on the driver too: an actor records its failures
and the driver writes them (learned rules are read from the driver's workspace path, so a node
that does not share the file system matches the builtin rules only).

Speedups are against one time: the root is evaluated first (the engine does so alone) and its
time travels with every later call, so every node divides by the same baseline.

An evaluation whose actor dies with its node (or its worker or owner) is retried on another
actor, a replacement is started in the background, and after `retries` losses the candidate
is recorded as not compiled with "evaluation lost: node died". `ray` is imported only here,
and this module only when a Ray address is configured.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import TritonsmithError
from ..evaluator.stats import Confirmation
from ..evaluator.verify import Spec
from .model import Evaluation, Outcome, Task

__all__ = ["LOST_MESSAGE", "RayEvaluator", "RayUnavailable", "import_ray"]

log = logging.getLogger(__name__)

LOST_MESSAGE = "evaluation lost: node died"
"""The message of a candidate whose every attempt died with its node."""

EvaluatorFactory = Callable[..., Any]
"""Builds an actor's evaluator: `factory(task, spec, failure_log=..., **options)`; by default
`CandidateEvaluator` (tests pass a scripted one)."""


class RayUnavailable(TritonsmithError):
    """Ray is not installed, or the cluster cannot be reached."""


def import_ray() -> Any:
    """The `ray` module, or a `RayUnavailable` that says how to install it."""
    try:
        import ray
    except ImportError as error:
        raise RayUnavailable('a Ray cluster address was given but ray is not installed: pip install "tritonsmith[ray]"') from error
    return ray


class _RecordingLog:
    """Stands in for the driver's `FailureLog` in an actor: keeps each record for the driver."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.records: list[dict[str, Any]] = []

    def record(self, **fields: Any) -> None:
        self.records.append(fields)


def _candidate_evaluator(task: Task, spec: Spec, **options: Any) -> Any:
    from .evaluate import CandidateEvaluator

    return CandidateEvaluator(task, spec, **options)


class _EvaluationActor:
    """Runs on a cluster node (as a Ray actor): one evaluator, kept warm, one call at a time."""

    def __init__(self, task: Task, spec: Spec, options: dict[str, Any], factory: EvaluatorFactory | None,
                 log_root: str | None) -> None:
        self._task, self._spec, self._options = task, spec, options
        self._factory = factory or _candidate_evaluator
        self._log = _RecordingLog(Path(log_root)) if log_root is not None else None
        self._evaluator: Any = None

    def ready(self) -> str:
        import socket

        return socket.gethostname()

    def evaluate(self, source: str, baseline_ms: float | None) -> tuple[Evaluation, list[dict[str, Any]]]:
        if self._evaluator is None:
            self._evaluator = self._factory(self._task, self._spec, failure_log=self._log, **self._options)
        self._evaluator.baseline_ms = baseline_ms  # the root's time, the same on every node
        if self._log is not None:
            self._log.records = []
        evaluation = self._evaluator.evaluate(source)
        return evaluation, list(self._log.records) if self._log is not None else []

    def confirm(self, original: str, candidate: str) -> Confirmation:
        if self._evaluator is None:
            self._evaluator = self._factory(self._task, self._spec, failure_log=self._log, **self._options)
        confirmation: Confirmation = self._evaluator.confirm(original, candidate)
        return confirmation


def _lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    names = ("RayActorError", "WorkerCrashedError", "NodeDiedError", "ObjectLostError", "OwnerDiedError",
             "LocalRayletDiedError")
    return tuple(getattr(ray.exceptions, name) for name in names if hasattr(ray.exceptions, name))


class RayEvaluator:
    """Evaluates a search's candidates on a Ray cluster's actors, one per GPU.

    Args:
        task, spec: as for `CandidateEvaluator`.
        address: the cluster (`ray://host:10001`, `host:6379`, or "auto"); a driver that is
            already connected uses its connection.
        actors: how many actors (and evaluations at once); default: the cluster's GPUs, or its
            CPUs when it has none.
        retries: attempts after the first when an actor dies with its node.
        wait_s: how long an evaluation waits for a free actor before it counts as lost.
        factory: builds each actor's evaluator (default `CandidateEvaluator`).
        failure_log: the driver's failure log; actors' records are written to it.
        cancel: set to stop waiting (running actor calls finish on their own).
        rounds, runs, trials, tolerances: passed to every actor's evaluator.
    """

    def __init__(self, task: Task, spec: Spec, *, address: str, actors: int | None = None, retries: int = 3,
                 wait_s: float = 600.0, factory: EvaluatorFactory | None = None, failure_log: Any = None,
                 cancel: threading.Event | None = None, rounds: int | None = None, runs: int | None = None,
                 trials: int = 3, tolerances: dict[str, float] | None = None) -> None:
        ray = import_ray()
        self._ray = ray
        self._owns_connection = not ray.is_initialized()
        if self._owns_connection:
            try:
                ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
            except (ConnectionError, RuntimeError, ValueError) as error:
                raise RayUnavailable(f"cannot connect to the Ray cluster at {address}: {error}") from error
        self._lost = _lost_errors(ray)
        self.task, self.spec = task, spec
        self.failure_log = failure_log
        self.cancel = cancel or threading.Event()
        self.retries = retries
        self.wait_s = wait_s
        self.baseline_ms: float | None = None  # the root's time, set by its evaluation
        self.baseline_predicted_s: float | None = None  # unused: Ray evaluates GPU time (open_search)
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        self.per_actor = {"num_gpus": 1} if gpus else {"num_cpus": 1}
        self.size = max(1, actors or gpus or int(resources.get("CPU", 1)))
        options = {"rounds": rounds, "runs": runs, "trials": trials, "tolerances": tolerances}
        log_root = str(failure_log.root) if failure_log is not None else None
        self._actor_class = ray.remote(_EvaluationActor).options(scheduling_strategy="SPREAD", **self.per_actor)
        self._actor_args = (task, spec, options, factory, log_root)
        self._lock = threading.Lock()
        self._closed = False
        self._replacements = 0
        self.lost = 0  # attempts lost with their actor (each was retried or counted as lost)
        self._idle: queue.Queue[Any] = queue.Queue()
        self._actors: list[Any] = []
        for _ in range(self.size):
            actor = self._actor_class.remote(*self._actor_args)
            self._actors.append(actor)
            self._idle.put(actor)

    # -- the protocol ----------------------------------------------------------------------

    def evaluate(self, source: str) -> Evaluation:
        """Evaluate `source` on a free actor; retried elsewhere when its node dies."""
        began = time.perf_counter()
        for attempt in range(self.retries + 1):
            actor = self._take()
            if actor is None:
                break
            ref = actor.evaluate.remote(source, self.baseline_ms)
            try:
                result = self._wait(ref)
            except self._lost as error:
                with self._lock:
                    self.lost += 1
                log.warning("evaluation lost with its actor (attempt %d of %d): %s", attempt + 1, self.retries + 1,
                            str(error).splitlines()[0] if str(error) else type(error).__name__)
                self._replace(actor)
                continue
            except BaseException:
                self._idle.put(actor)
                raise
            self._idle.put(actor)
            if result is None:  # cancelled while waiting; the actor finishes the call on its own
                return Evaluation(Outcome.NOT_COMPILED, message="cancelled",
                                  seconds=round(time.perf_counter() - began, 3))
            evaluation, records = result
            if self.failure_log is not None:
                for fields in records:
                    self.failure_log.record(**fields)
            with self._lock:
                if self.baseline_ms is None and evaluation.outcome is Outcome.CORRECT and evaluation.time_ms:
                    self.baseline_ms = evaluation.time_ms
            return evaluation
        return Evaluation(Outcome.NOT_COMPILED, message=LOST_MESSAGE, seconds=round(time.perf_counter() - began, 3))

    def confirm(self, original: str, candidate: str,
                progress: Callable[[int, Confirmation], None] | None = None) -> Confirmation:
        """Confirm on one free actor (its own fresh workers on its node's GPU); retried
        elsewhere when its node dies. Round-by-round progress does not cross the cluster."""
        failure = "no actor was free to confirm on"
        for attempt in range(self.retries + 1):
            actor = self._take()
            if actor is None:
                break
            ref = actor.confirm.remote(original, candidate)
            try:
                while True:
                    ready, _ = self._ray.wait([ref], timeout=0.2)
                    if ready:
                        confirmation: Confirmation = self._ray.get(ref)
                        self._idle.put(actor)
                        return confirmation
                    if self.cancel.is_set():
                        self._idle.put(actor)
                        failure = "cancelled"
                        break
            except self._lost as error:
                failure = f"lost with its actor (attempt {attempt + 1}): {type(error).__name__}"
                self._replace(actor)
                continue
            except BaseException:
                self._idle.put(actor)
                raise
            break
        nan = float("nan")
        return Confirmation(speedup=nan, low=nan, high=nan, noise_floor=float("inf"), rounds=0, claimed=False,
                            stopped="cancelled" if failure == "cancelled" else "failed",
                            error="" if failure == "cancelled" else failure)

    # -- actors ------------------------------------------------------------------------------

    def _take(self) -> Any:
        """A free actor, or None when cancelled or none came within `wait_s`."""
        deadline = time.monotonic() + self.wait_s
        while not self.cancel.is_set() and time.monotonic() < deadline:
            try:
                return self._idle.get(timeout=0.2)
            except queue.Empty:
                continue
        return None

    def _wait(self, ref: Any) -> tuple[Evaluation, list[dict[str, Any]]] | None:
        while True:
            ready, _ = self._ray.wait([ref], timeout=0.2)
            if ready:
                result: tuple[Evaluation, list[dict[str, Any]]] = self._ray.get(ref)
                return result
            if self.cancel.is_set():
                return None

    def _replace(self, dead: Any) -> None:
        """Drop a dead actor and start another where the cluster has room (in the background: it
        joins the free actors once it is up; on a cluster without room it never does)."""
        with self._lock:
            if dead in self._actors:
                self._actors.remove(dead)
            if self._closed or self._replacements >= 2 * self.size:
                return
            self._replacements += 1
            actor = self._actor_class.remote(*self._actor_args)
            self._actors.append(actor)
        with contextlib.suppress(Exception):  # already gone
            self._ray.kill(dead, no_restart=True)

        def join() -> None:
            try:
                self._ray.get(actor.ready.remote())
            except Exception:  # killed by close(), or died before it was up
                return
            self._idle.put(actor)

        threading.Thread(target=join, name="tritonsmith-ray-replacement", daemon=True).start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            actors, self._actors = self._actors, []
        for actor in actors:
            with contextlib.suppress(Exception):
                self._ray.kill(actor, no_restart=True)
        if self._owns_connection and self._ray.is_initialized():
            self._ray.shutdown()

    def __enter__(self) -> RayEvaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
