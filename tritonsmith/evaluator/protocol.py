"""The messages that cross the boundary between the server and an evaluator worker.

Plain dataclasses of JSON values, one JSON object per line on the wire, so that either side can
die without leaving the other holding a half-understood object, and so that nothing here needs
torch or triton (the server imports this module).

On the wire: the pool writes `{"id": n, "job": Job}` to the worker's stdin; the worker writes
`{"id": n, "result": Result}` to its result pipe when the job ends and, while it runs, any
number of `{"id": n, "progress": "<note>"}` lines (`progress.py`), which reset the job's stall
clock (`Job.stall_s`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, cast, get_args

from tritonsmith.errors import EvaluatorError, WorkerCrashed, WorkerOutOfMemory, WorkerTimeout

__all__ = ["FAILURES", "Failure", "Job", "Result"]

Failure = Literal["crashed", "timeout", "out-of-memory", "output-flood", "exited", "cancelled"]
"""Why a job has no answer from its handler: the worker was lost (or stopped) while running it.

A handler that raises is not a failure in this sense: its worker survives and the result is
`ok=False` with `failure=None`.
"""

FAILURES: tuple[str, ...] = get_args(Failure)


@dataclass(frozen=True)
class Job:
    """One unit of work for a worker.

    Attributes:
        kind: names the handler (`"ping"`, `"run_python"`, `"compile"`, ...).
        payload: the handler's arguments, JSON values only.
        timeout_s: wall-clock limit for the whole job; past it the worker's process group is
            killed.
        memory_mb: resident-memory limit for the worker and every process in its session,
            checked by a watchdog.
        stall_s: the longest the job may go without a progress report (`progress.py`; a
            verification job reports one per forward pass); past it the job is reported as
            hung and its worker killed. None: only `timeout_s` applies.
        startup_s: extra time the stall limit allows before the job's first progress report
            (a fresh worker's start and the handler's own imports of torch and Triton, slow on
            a loaded machine; verification handlers report progress before user code runs).
        limit_address_space: also cap the worker's address space for this job
            (`RLIMIT_AS`, `sandbox.address_limit_bytes(memory_mb)`), so an allocation past the
            limit fails at once. Only for jobs that never use CUDA, whose address-space
            reservations it breaks.
    """

    kind: str
    payload: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 60.0
    memory_mb: int = 4096
    stall_s: float | None = None
    startup_s: float = 0.0
    limit_address_space: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Job:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Job:
        return cls(
            kind=str(data["kind"]),
            payload=dict(data.get("payload") or {}),
            timeout_s=float(data.get("timeout_s", 60.0)),
            memory_mb=int(data.get("memory_mb", 4096)),
            stall_s=None if data.get("stall_s") is None else float(data["stall_s"]),
            startup_s=float(data.get("startup_s", 0.0)),
            limit_address_space=bool(data.get("limit_address_space", False)),
        )


@dataclass(frozen=True)
class Result:
    """What became of a job.

    Attributes:
        ok: the handler returned normally.
        kind: the job's kind, echoed so that logs read on their own.
        payload: the handler's return value; on a failure, diagnostics such as `stderr_tail`.
        error: one line saying what went wrong (`None` when `ok`), e.g. "worker killed by
            SIGSEGV while running compile job", or a handler's exception line.
        failure: `None` when the worker survived the job, else one of `FAILURES`.
    """

    ok: bool
    kind: str
    payload: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    failure: Failure | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Result:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        failure = data.get("failure")
        if failure is not None and failure not in FAILURES:
            raise ValueError(f"unknown failure {failure!r}")
        return cls(
            ok=bool(data["ok"]),
            kind=str(data["kind"]),
            payload=dict(data.get("payload") or {}),
            error=data.get("error"),
            failure=cast("Failure | None", failure),
        )

    def to_error(self) -> EvaluatorError | None:
        """The exception a caller should raise for this result, or `None` when the worker
        survived (a handler's own error is data for the caller, not a worker fault).

        A cancelled job maps to `None` too: cancelling is the caller's decision, not a fault.
        """
        if self.failure is None or self.failure == "cancelled":
            return None
        detail = self.error or self.failure
        if self.failure == "timeout":
            return WorkerTimeout(detail)
        if self.failure == "out-of-memory":
            return WorkerOutOfMemory(detail)
        return WorkerCrashed(detail)
