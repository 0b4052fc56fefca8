"""The messages that cross the boundary between the server and an evaluator worker.

Plain dataclasses of JSON values, one JSON object per line on the wire, so that either side can
die without leaving the other holding a half-understood object, and so that nothing here needs
torch or triton (the server imports this module).
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
        timeout_s: wall-clock limit; past it the worker's process group is killed.
        memory_mb: resident-memory limit for the worker and its children, checked by a
            watchdog (not `RLIMIT_AS`, which breaks CUDA's address-space reservations).
    """

    kind: str
    payload: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 60.0
    memory_mb: int = 4096

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
