"""An evaluator worker: `python -m tritonsmith.evaluator.worker --result-fd N`.

The only process in tritonsmith that imports torch and triton, and the only one that runs user
code (lazily, inside a handler, so an idle worker starts in milliseconds). It reads one `Job`
as a JSON line from stdin, runs the handler registered for its `kind`, and writes one `Result`
line to the result pipe whose fd the pool passes on the command line.

Why a dedicated result pipe: user code prints, and C extensions write straight to fd 1 and 2.
The pool points the worker's stdout and stderr at files in its scratch directory (capped by
the pool's watchdog), so a flood can neither block the worker on a full pipe nor corrupt the
protocol. The job pipe is moved off fd 0 (which becomes /dev/null) so user code reading stdin
cannot swallow the next job, and neither pipe is inherited by processes user code starts.

A handler that raises yields an `ok=False` result and the worker carries on; a worker that dies
is the pool's business.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import importlib.util
import itertools
import json
import os
import re
import resource
import select
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tritonsmith.evaluator import jail, progress
from tritonsmith.evaluator.protocol import Job, Result
from tritonsmith.evaluator.sandbox import address_limit_bytes

__all__ = ["HANDLERS", "handle", "main"]

Handler = Callable[[dict[str, Any]], dict[str, Any]]

_module_counter = itertools.count()


def _ping(payload: dict[str, Any]) -> dict[str, Any]:
    """Liveness check; the pid lets callers see which worker answered."""
    return {"pid": os.getpid()}


def _run_python(payload: dict[str, Any]) -> dict[str, Any]:
    """Import a module from a real file and call one of its functions with JSON arguments.

    Payload: `path` (a `.py` file) or `source` (written to a fresh file in the scratch
    directory, optionally named by `filename`), `function`, `args` (list), `kwargs` (dict).
    Returns `{"value": <the function's JSON-encodable return value>}`.

    A real file, not `exec` of a string: `@triton.jit` reads its function's source with
    `inspect.getsourcelines`. Each call imports the file afresh under a unique module name, so
    an edited candidate is never served from `sys.modules`.
    """
    serial = next(_module_counter)
    if "source" in payload:
        job_dir = Path.cwd() / f"job-{serial}"
        job_dir.mkdir(exist_ok=True)
        path = job_dir / str(payload.get("filename", "candidate.py"))
        path.write_text(str(payload["source"]))
    else:
        path = Path(str(payload["path"]))
    name = f"_tritonsmith_job_{serial}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
        function = getattr(module, str(payload["function"]))
        value = function(*payload.get("args", []), **payload.get("kwargs", {}))
    finally:
        sys.modules.pop(name, None)
    json.dumps(value)  # fail here, with a clear TypeError, rather than in the reply
    return {"value": value}


PRELOADABLE = frozenset({"torch", "torch._dynamo", "triton", "triton.language", "numpy",
                         "tritonsmith.evaluator.accounting", "tritonsmith.evaluator.compile"})
"""Modules a `preload` job may import: the heavy ones verification jobs need. `torch._dynamo`
is imported by the first call of any `nn.Module` (torch wraps `__call__` to keep it out of
dynamo): a KernelBench task's first verification pays for it unless a preload did."""


def _preload(payload: dict[str, Any]) -> dict[str, Any]:
    """Import heavy modules before the first real job needs them (`WorkerPool.prestart`), so a
    worker's start overlaps other work. Only `PRELOADABLE` modules; never user code."""
    modules = [str(m) for m in payload.get("modules", []) if str(m) in PRELOADABLE]
    for name in modules:
        warm = getattr(importlib.import_module(name), "warm", None)
        if callable(warm):  # a module of ours with a first use worth paying now
            warm()
    return {"modules": modules}


def _compile(payload: dict[str, Any]) -> dict[str, Any]:
    """Compile kernels for targets; see `tritonsmith.evaluator.compile` (imported lazily,
    because it imports triton)."""
    module = importlib.import_module("tritonsmith.evaluator.compile")
    result: dict[str, Any] = module.handle_compile(payload)
    return result


def _lazy(module_name: str, function: str) -> Handler:
    """A handler from a worker-side module imported on first use (`correctness`, `timing`: they
    import torch and run user code)."""

    def handler(payload: dict[str, Any]) -> dict[str, Any]:
        module = importlib.import_module(f"tritonsmith.evaluator.{module_name}")
        result: dict[str, Any] = getattr(module, function)(payload)
        return result

    return handler


HANDLERS: dict[str, Handler] = {
    "compile": _compile,
    "ping": _ping,
    "preload": _preload,
    "run_python": _run_python,
    "profile": _lazy("profile", "handle_profile"),
    "time_check": _lazy("timing", "handle_time_check"),
    "time_round": _lazy("timing", "handle_time_round"),
    "verify_candidate": _lazy("correctness", "handle_candidate"),
    "verify_inputs": _lazy("correctness", "handle_inputs"),
    "verify_reference": _lazy("correctness", "handle_reference"),
}
"""Job kinds and their handlers. A handler takes the job's payload and returns a JSON-encodable
dict; it may raise (the worker reports the exception's last line and survives)."""


_STICKY_CUDA_ERROR = re.compile(
    r"illegal memory access|illegal address|device-side assert|unspecified launch failure|"
    r"misaligned address|CUDA error: an illegal instruction", re.IGNORECASE)
"""CUDA errors after which every later call in the process fails too."""


_ALLOCATION_FAILED = re.compile(
    r"can't allocate memory|Cannot allocate memory|DefaultCPUAllocator", re.IGNORECASE)
"""How torch's CPU allocator says an allocation failed (a RuntimeError, not a MemoryError)."""


@contextlib.contextmanager
def _address_limit(job: Job) -> Iterator[None]:
    """Cap this process's address space for `job` when it asks (`Job.limit_address_space`:
    only jobs that never touch CUDA), and lift the cap again afterwards (only the soft limit
    changes, so raising it back is allowed)."""
    if not job.limit_address_space:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = address_limit_bytes(job.memory_mb)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):  # pragma: no cover - a platform without RLIMIT_AS
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _out_of_memory(exc: BaseException) -> bool:
    """An allocation failed: Python's MemoryError (numpy's is a subclass), ENOMEM from a system
    call, or torch's CPU allocator's RuntimeError."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError):  # mmap and friends: ENOMEM
        return exc.errno == errno.ENOMEM
    return isinstance(exc, RuntimeError) and bool(_ALLOCATION_FAILED.search(str(exc)))


def handle(job: Job) -> Result:
    """Run one job in this process; exceptions become `ok=False` results.

    An allocation that fails (past the job's address-space cap, or refused by the system)
    gives `failure="out-of-memory"` and retires the worker: its heap may be left fragmented or
    half-built, and the pool starts a fresh one."""
    handler = HANDLERS.get(job.kind)
    if handler is None:
        known = ", ".join(sorted(HANDLERS))
        return Result(
            ok=False, kind=job.kind, error=f"unknown job kind {job.kind!r} (known: {known})"
        )
    try:
        payload = handler(job.payload)
        json.dumps(payload)
    except BaseException as exc:  # SystemExit from user code must not end the worker
        if isinstance(exc, KeyboardInterrupt):
            raise
        lines = traceback.format_exception_only(type(exc), exc)
        error = lines[-1].strip() if lines else type(exc).__name__
        details: dict[str, Any] = {"traceback": traceback.format_exc()}
        told = getattr(exc, "tritonsmith_details", None)  # what the handler knew when it failed
        if isinstance(told, dict):
            details.update({str(k): v for k, v in told.items() if k != "traceback"})
        if _out_of_memory(exc):
            details["retire"] = True
            return Result(ok=False, kind=job.kind, payload=details, failure="out-of-memory", error=(
                f"memory limit: {job.kind} job could not allocate memory within its "
                f"{job.memory_mb} MB limit ({error.splitlines()[0][:200]}); worker replaced"))
        if _STICKY_CUDA_ERROR.search(str(exc)):
            details["retire"] = True  # the CUDA context is lost for good: the pool replaces us
        return Result(ok=False, kind=job.kind, error=error, payload=details)
    return Result(ok=True, kind=job.kind, payload=payload)


def _detach_stdin() -> int:
    """Move the job pipe off fd 0 and leave /dev/null there; returns the job pipe's new fd."""
    job_fd = os.dup(0)  # non-inheritable, so user subprocesses never hold it
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return job_fd


def _guard_against_orphaning(parent: int, job_fd: int) -> None:
    """Kill this worker's process group if the pool's process goes away.

    A server killed without cleanup closes the job pipe, which ends an idle worker, but a
    worker stuck in user code would run on as an orphan. A daemon thread that notices the
    reparenting, or the job pipe's far end closing (in a pid namespace the parent is outside
    and reads as 0), ends it and anything user code started within a second: its group, or, as
    the first process of a pid namespace, the whole namespace.
    """
    poller = select.poll()
    poller.register(job_fd, select.POLLHUP)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent or poller.poll(0):
                if os.getpid() == 1:
                    with contextlib.suppress(OSError):
                        os.kill(-1, signal.SIGKILL)  # everything else in the namespace
                elif os.getpgrp() == os.getpid():  # our own group, as the pool starts us
                    os.killpg(0, signal.SIGKILL)
                os._exit(1)

    threading.Thread(target=watch, name="orphan-guard", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    """Serve jobs until stdin closes. Each input line is `{"id": n, "job": {...}}`; each reply
    is `{"id": n, "result": {...}}`, the id letting the pool drop anything stale. While a job
    runs, code in it may send `{"id": n, "progress": ...}` lines (`progress.py`)."""
    parser = argparse.ArgumentParser(prog="python -m tritonsmith.evaluator.worker")
    parser.add_argument("--result-fd", type=int, required=True)
    args = parser.parse_args(argv)
    os.set_inheritable(args.result_fd, False)
    if os.environ.get(jail.JAIL_ENV):
        try:
            jail.enter()
        except jail.JailError as error:  # never run a job unconfined when confinement was asked for
            print(f"tritonsmith worker: {error}", file=sys.stderr)
            return 3
    job_fd = _detach_stdin()
    _guard_against_orphaning(os.getppid(), job_fd)
    jobs = os.fdopen(job_fd, "r", encoding="utf-8")
    replies = os.fdopen(args.result_fd, "w", encoding="utf-8", buffering=1)
    write_lock = progress.connect(replies)
    for line in jobs:
        if not line.strip():
            continue
        envelope = json.loads(line)
        job = Job.from_dict(envelope["job"])
        progress.begin(envelope["id"])
        try:
            with _address_limit(job):
                result = handle(job)
        finally:
            progress.end()
        reply = json.dumps({"id": envelope["id"], "result": result.to_dict()})
        with write_lock:
            replies.write(reply + "\n")
            replies.flush()
        if result.payload.get("retire"):
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
