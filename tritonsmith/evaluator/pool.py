"""A pool of sandboxed worker processes that run evaluator jobs and survive their faults.

Workers are spawned with `subprocess.Popen` (never forked from the server, whose threads and
asyncio loop must not be duplicated), each in its own session and so its own process group,
with a scratch working directory, a secret-free environment and, where the OS allows, no
network (see `sandbox.py`). While a job runs, the thread that waits for its result is also its
watchdog: every `POLL_S` it checks the wall-clock deadline, the stall deadline (a job with
`stall_s` must report progress at least that often: a verification job does after each forward
pass, so an endless loop is a "hang" within seconds while a slow run that progresses lives), the
resident memory of every process in the worker's session (VmRSS; `RLIMIT_AS` would break CUDA,
so only jobs that say they use no CUDA also get an address-space cap, whose edge the watchdog
watches too), the size of its stdout/stderr files, the caller's cancel event, and whether the
worker is still alive. On any breach the worker's whole process group, and anything else in its
session, is killed with SIGKILL (which no handler can ignore) and reaped, the job gets a
`Result` whose `failure` says why in one line, and a fresh worker is started lazily by the next
job.

Nothing here imports torch or triton: the server imports this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, overload

from tritonsmith.errors import EvaluatorError
from tritonsmith.evaluator import jail
from tritonsmith.evaluator.protocol import Failure, Job, Result
from tritonsmith.evaluator.sandbox import (
    address_limit_bytes,
    namespace_members,
    network_isolation_prefix,
    resident_bytes,
    runs_dir,
    scratch_dir,
    scrub,
    secret_values,
    session_members,
    virtual_bytes,
    worker_environment,
)

__all__ = ["OUTPUT_LIMIT_BYTES", "POLL_S", "WARM_MODULES", "WorkerPool", "compile_workers"]

POLL_S = 0.05
"""How often a running job's limits are checked, in seconds."""

OUTPUT_LIMIT_BYTES = 10 * 1024 * 1024
"""Default cap on what one job may write to stdout and stderr together."""

_TAIL_BYTES = 2000

WARM_MODULES = ("torch", "triton", "triton.language")
"""What `prestart` imports in a fresh worker: what every verification job needs first."""

CANDIDATE_WARM_MODULES = (*WARM_MODULES, "tritonsmith.evaluator.accounting")
"""A candidate's worker also starts PyTorch's profiler (its first session costs most of a second)."""

STARTING_WAIT_S = 2.0
"""How long `close` waits for a worker another thread is starting (a process spawn: milliseconds)."""

MEMBERS_EVERY_S = 0.5
"""How often the worker's session is scanned for processes user code started (a /proc scan
costs a few milliseconds; the resident size of the ones known is read every `POLL_S`)."""

ADDRESS_MARGIN_BYTES = 256 * 1024 * 1024
"""A job under an address-space cap whose worker's virtual size comes this close to the cap has
had (or is about to have) an allocation refused: it is stopped as over its memory limit even if
user code catches the MemoryError and carries on."""


def compile_workers() -> int:
    """How many compile jobs run at once by default: two, or one on a one-core machine. Each
    worker holds a Python with triton imported (a few hundred MB), and compiles are CPU-bound."""
    return max(1, min(2, os.cpu_count() or 1))


_MB = 1024 * 1024


class _Worker:
    """One worker process and the pool's ends of its pipes and output files."""

    def __init__(self, number: int, scratch: Path, command: list[str], env: dict[str, str],
                 secrets: list[str] | None = None, *, jailed: bool = False) -> None:
        self.number = number
        self.jailed = jailed
        self.scratch = scratch
        self.secrets = secrets or []
        self.stdout: IO[bytes] = open(scratch / "stdout.log", "ab", buffering=0)  # noqa: SIM115
        self.stderr: IO[bytes] = open(scratch / "stderr.log", "ab", buffering=0)  # noqa: SIM115
        read_fd, write_fd = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [*command, "--result-fd", str(write_fd)],
                stdin=subprocess.PIPE,
                stdout=self.stdout,
                stderr=self.stderr,
                cwd=scratch,
                env=env,
                pass_fds=(write_fd,),
                start_new_session=True,
            )
        except BaseException:
            os.close(read_fd)
            self.stdout.close()
            self.stderr.close()
            raise
        finally:
            os.close(write_fd)
        self.pid = self.proc.pid
        self.result_fd = read_fd
        self.buffer = b""
        self.kill_reason: tuple[Failure, str] | None = None
        self.last_progress = 0.0
        self.progressed = False  # the running job has reported progress at least once
        self.members: list[int] = []
        self.members_at = 0.0
        self._inner: int | None = None  # the worker itself, when `unshare` started it
        self._kill_lock = threading.Lock()

    @property
    def inner_pid(self) -> int:
        """The worker process: the child `unshare --fork` started (the first process of the pid
        namespace), else the process the pool spawned."""
        if not self.jailed:
            return self.pid
        if self._inner is None:
            children = [m for m in session_members(self.pid) if _parent(m) == self.pid]
            if not children:
                return self.pid  # `unshare` has not forked the worker yet
            self._inner = children[0]
        return self._inner

    def _others(self) -> list[int]:
        """Every process in the worker's session and pid namespace but `unshare` and the worker."""
        inner = self.inner_pid
        members = set(session_members(self.pid)) | set(namespace_members(inner) if inner != self.pid else ())
        return sorted(members - {self.pid, inner})

    def kill_strays(self) -> None:
        """Kill every process left in the worker's pid namespace but the worker: what a job
        started (`setsid` or not) ends with the job. Without namespaces, the worker's session."""
        for member in self._others():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(member, signal.SIGKILL)

    def running(self) -> bool:
        """Whether the process has not exited; does not reap it, so its pid (and process
        group id) cannot be reused before `kill` has signalled the group."""
        if self.proc.returncode is not None:
            return False
        try:
            return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
        except ChildProcessError:
            return False

    def kill(self, reason: tuple[Failure, str] | None = None) -> None:
        """SIGKILL the worker's whole process group (user code may have started children), and
        every other process in its session (a child that moved to a group of its own), then reap
        the worker. SIGKILL cannot be caught or ignored, so a job that ignores SIGTERM and SIGINT
        or spins in C dies too. Safe to call from several threads and more than once."""
        with self._kill_lock:
            if reason is not None and self.kill_reason is None:
                self.kill_reason = reason
            if self.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGKILL)
                # While the worker is unreaped its pid cannot be reused, so its session id
                # still names only its own descendants.
                for member in session_members(self.pid):
                    if member != self.pid:
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.kill(member, signal.SIGKILL)
            self.proc.wait()

    def resident(self, now: float) -> int:
        """Resident bytes of the worker and every process in its session (rescanned every
        `MEMBERS_EVERY_S`: children that daemonize or lack a /proc children list count too)."""
        if now - self.members_at >= MEMBERS_EVERY_S:
            self.members = self._others()
            self.members_at = now
        return resident_bytes(self.inner_pid, self.members)  # `unshare` itself: about 1 MB, not counted

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode())
        self.proc.stdin.flush()

    def poll_reply(self, job_id: int, timeout: float) -> Result | bool:
        """The reply to `job_id` if it has arrived; `False` at end of file (the worker is
        gone); `True` if there is nothing yet."""
        readable, _, _ = select.select([self.result_fd], [], [], timeout)
        if not readable:
            return True
        chunk = os.read(self.result_fd, 1 << 16)
        if not chunk:
            return False
        self.buffer += chunk
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if self.secrets:
                line = scrub(line.decode("utf-8", "replace"), self.secrets).encode()
            try:
                reply = json.loads(line)
                if reply.get("id") != job_id:
                    continue  # stale or not ours
                if "progress" in reply:
                    self.last_progress = time.monotonic()
                    self.progressed = True
                    continue
                return Result.from_dict(reply["result"])
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # not ours: something wrote to the result pipe; keep waiting
        return True

    def output_bytes(self) -> int:
        try:
            return os.fstat(self.stdout.fileno()).st_size + os.fstat(self.stderr.fileno()).st_size
        except (OSError, ValueError):
            return 0

    def reset_output(self) -> None:
        """Empty the output files so the cap applies per job (they are opened O_APPEND, so the
        worker's next write lands at the new end, not at its old offset)."""
        for stream in (self.stdout, self.stderr):
            with contextlib.suppress(OSError, ValueError):
                os.ftruncate(stream.fileno(), 0)

    def tails(self) -> dict[str, str]:
        """The last bytes of stdout and stderr, for a failure's payload."""
        tails = {}
        for name in ("stdout", "stderr"):
            try:
                with open(self.scratch / f"{name}.log", "rb") as stream:
                    stream.seek(0, os.SEEK_END)
                    stream.seek(max(0, stream.tell() - _TAIL_BYTES))
                    tails[f"{name}_tail"] = scrub(stream.read().decode("utf-8", "replace"), self.secrets)
            except OSError:
                tails[f"{name}_tail"] = ""
        return tails

    def dispose(self) -> None:
        """Kill, reap and forget: close the pool's ends and remove the scratch directory."""
        self.kill()
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        with contextlib.suppress(OSError):
            os.close(self.result_fd)
        self.stdout.close()
        self.stderr.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


def _shutdown(workers: set[_Worker], idle: list[_Worker], lock: threading.Lock, root: Path) -> None:
    """Kill every worker's process group and reap it; remove the pool's scratch tree.

    Idle workers are disposed of here; busy ones are killed and reaped here and disposed of by
    the thread running their job. A module-level function for `weakref.finalize`, so that a
    pool dropped without `close()` (or an interpreter exit) still leaves no orphan behind.
    """
    with lock:
        busy = [w for w in workers if w not in idle]
        idle_now = list(idle)
        idle.clear()
        workers.difference_update(idle_now)
    for worker in busy:
        worker.kill(("cancelled", "the worker pool was closed while the job ran"))
    for worker in idle_now:
        worker.dispose()
    shutil.rmtree(root, ignore_errors=True)


class WorkerPool:
    """Up to `size` worker processes, started on demand, each running one job at a time.

    Usage:
        with WorkerPool(2) as pool:
            result = pool.run(Job("ping", {}, timeout_s=10, memory_mb=512))

    `run` blocks and may be called from many threads; `arun` awaits it from asyncio, and
    cancelling the awaiting task kills the job's worker. A job whose worker is lost returns a
    `Result` with `failure` set (never raises), and the pool replaces the worker.
    """

    def __init__(
        self,
        size: int = 2,
        *,
        env: Mapping[str, str] | None = None,
        start_method: str = "spawn",
        python: str | None = None,
        output_limit_bytes: int = OUTPUT_LIMIT_BYTES,
        isolate_network: bool = True,
        writable: tuple[str | os.PathLike[str], ...] = (),
    ) -> None:
        """
        Args:
            size: the most workers alive at once (and so the most jobs running at once).
            env: the environment to derive workers' from (default `os.environ`); secrets are
                removed either way.
            start_method: only `"spawn"`: a fresh interpreter. Forking the server would copy its
                threads, locks and event loop into the child; the argument exists to say so.
            python: the interpreter for workers (default: the server's own).
            output_limit_bytes: what one job may write to stdout and stderr together.
            isolate_network: start workers in their sandbox (`jail.py`: namespaces, no network)
                where the OS allows; false only for tests of the pool's own mechanics. The
                `TRITONSMITH_SANDBOX=reduced` environment variable turns the namespaces off
                (network isolation alone is kept where it works) for a machine where they break
                CUDA; verdicts then say "sandbox: reduced".
            writable: folders workers may write besides their scratch folder and the pool's
                Triton cache (`sandbox.runs_dir()`, where verifications keep their files, always).
        """
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        if start_method != "spawn":
            raise ValueError("workers are always spawned, never forked from the server")
        self.size = size
        self.output_limit_bytes = output_limit_bytes
        self._root = scratch_dir("tritonsmith-pool-")
        try:  # until the finalizer owns the folder, an interrupt (Ctrl-C, SIGTERM) removes it here
            base = os.environ if env is None else env
            (self._root / "triton-cache").mkdir()
            self._env = worker_environment(base, triton_cache_dir=self._root / "triton-cache")
            # Values the workers are not given, from the server's environment and the one passed.
            self._secrets = secret_values({**os.environ, **base})
            command = [python or sys.executable, "-m", "tritonsmith.evaluator.worker"]
            jailed = isolate_network and os.environ.get("TRITONSMITH_SANDBOX") != "reduced" and jail.namespaces_available()
            if jailed:
                imports = [p for p in self._env.get("PYTHONPATH", "").split(os.pathsep) if p]
                self._env[jail.JAIL_ENV] = jail.jail_plan([self._root, runs_dir(), *writable], imports)
                self._command = jail.jail_command(command)
                self.sandbox = jail.JAIL_NAMESPACES
                jail.set_not_dumpable()
            else:
                prefix = list(network_isolation_prefix()) if isolate_network else []
                self._command = [*prefix, *command]
                self.sandbox = jail.JAIL_REDUCED
            self._lock = threading.Lock()
            self._changed = threading.Condition(self._lock)
            self._workers: set[_Worker] = set()
            self._idle: list[_Worker] = []
            self._starting = 0
            self._closed = False
            self._job_ids = itertools.count(1)
            self._numbers = itertools.count(1)
            self._finalizer = weakref.finalize(
                self, _shutdown, self._workers, self._idle, self._lock, self._root
            )
        except BaseException:
            shutil.rmtree(self._root, ignore_errors=True)
            raise

    # -- public API -------------------------------------------------------------------------

    def run(self, job: Job, cancel_event: threading.Event | None = None) -> Result:
        """Run `job` on a worker and return its result; blocks until a worker is free.

        Setting `cancel_event` (e.g. when a newer save supersedes this job) kills the worker
        running it within `POLL_S`; the result then has `failure="cancelled"`.

        Raises:
            EvaluatorError: the pool is closed, or a worker process could not be started.
        """
        if cancel_event is not None and cancel_event.is_set():
            return _failed(job, "cancelled", f"{job.kind} job cancelled before it started")
        return self._run_on(self._acquire(), job, cancel_event)

    async def arun(self, job: Job, cancel_event: threading.Event | None = None) -> Result:
        """`run` in a thread; cancelling the awaiting task kills the job's worker."""
        event = cancel_event if cancel_event is not None else threading.Event()
        try:
            return await asyncio.to_thread(self.run, job, event)
        except asyncio.CancelledError:
            event.set()
            raise

    def prestart(self, modules: tuple[str, ...] = WARM_MODULES, *, fill: bool = False) -> None:
        """Start a worker now, in the background, and have it import `modules` (see the
        worker's `PRELOADABLE`), so that the first real job finds it warm: a verification
        starts its candidate worker while the reference worker runs. Returns at once; a job
        submitted meanwhile waits for that worker as for any busy one. `fill`: start as many as
        the pool lacks, leaving the idle ones be (a prediction's compiles run on every worker,
        and its profile leaves time to start the second)."""
        preload = Job("preload", {"modules": list(modules)}, timeout_s=300, memory_mb=4096)

        def warm() -> None:
            with contextlib.suppress(EvaluatorError):
                self.run(preload)

        def start() -> None:
            with contextlib.suppress(EvaluatorError):
                if (worker := self._acquire(new=True)) is not None:
                    self._run_on(worker, preload, None)

        if not fill:
            threading.Thread(target=warm, name="tritonsmith-prestart", daemon=True).start()
            return
        with self._lock:
            missing = self.size - len(self._workers) - self._starting
        for _ in range(max(0, missing)):
            threading.Thread(target=start, name="tritonsmith-prestart", daemon=True).start()

    def worker_pids(self) -> list[int]:
        """Process ids of the workers alive now (for diagnostics and tests)."""
        with self._lock:
            return sorted(w.pid for w in self._workers)

    def close(self) -> None:
        """Kill every worker's process group, reap them, and remove the scratch directories.

        Jobs still running get `failure="cancelled"`. Idempotent. A worker another thread is
        starting (a `prestart`) is waited for briefly: it sees the pool closed and disposes of
        itself, so its folder is not made again inside the pool's after that is removed.
        """
        with self._lock:
            self._closed = True
            self._changed.notify_all()
            deadline = time.monotonic() + STARTING_WAIT_S
            while self._starting and (left := deadline - time.monotonic()) > 0:
                self._changed.wait(left)
        self._finalizer()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- workers ------------------------------------------------------------------------------

    @overload
    def _acquire(self) -> _Worker: ...

    @overload
    def _acquire(self, *, new: bool) -> _Worker | None: ...

    def _acquire(self, *, new: bool = False) -> _Worker | None:
        """An idle worker, else a new one while the pool has room, else wait. `new`: a new
        worker or, when the pool is full, None (never an idle one, never a wait)."""
        with self._lock:
            while True:
                if self._closed:
                    raise EvaluatorError("the evaluator's worker pool is closed")
                if new:
                    if len(self._workers) + self._starting >= self.size:
                        return None
                    self._starting += 1
                    number = next(self._numbers)
                    break
                while self._idle:
                    worker = self._idle.pop()
                    if worker.running():
                        return worker
                    self._workers.discard(worker)  # died while idle (killed from outside)
                    worker.dispose()
                if len(self._workers) + self._starting < self.size:
                    self._starting += 1
                    number = next(self._numbers)
                    break
                self._changed.wait()
        try:
            worker = _Worker(
                number,
                scratch_dir(f"worker-{number}-", parent=str(self._root)),
                self._command,
                self._env,
                self._secrets,
                jailed=self.sandbox == jail.JAIL_NAMESPACES,
            )
        except OSError as exc:
            with self._lock:
                self._starting -= 1
                self._changed.notify()
            raise EvaluatorError(f"could not start an evaluator worker: {exc}") from exc
        with self._lock:
            self._starting -= 1
            self._changed.notify_all()  # `close` may be waiting for this start
            self._workers.add(worker)
            if self._closed:  # closed while it started: do not let it outlive the pool
                self._workers.discard(worker)
                worker.dispose()
                raise EvaluatorError("the evaluator's worker pool is closed")
        return worker

    def _run_on(self, worker: _Worker, job: Job, cancel_event: threading.Event | None) -> Result:
        try:
            return self._execute(worker, job, cancel_event)
        finally:
            self._release(worker)

    def _release(self, worker: _Worker) -> None:
        with self._lock:
            keep = not self._closed and worker.running() and worker.kill_reason is None
            if keep:
                self._idle.append(worker)
            else:
                self._workers.discard(worker)
            self._changed.notify()
        if not keep:
            worker.dispose()  # replaced lazily: the next job starts a fresh one

    # -- one job ------------------------------------------------------------------------------

    def _execute(self, worker: _Worker, job: Job, cancel_event: threading.Event | None) -> Result:
        job_id = next(self._job_ids)
        worker.reset_output()
        worker.last_progress, worker.progressed = time.monotonic(), False
        deadline = worker.last_progress + job.timeout_s
        memory_limit = job.memory_mb * _MB
        try:
            worker.send(json.dumps({"id": job_id, "job": job.to_dict()}) + "\n")
        except OSError:
            return self._lost(worker, job)
        try:
            return self._wait(worker, job, job_id, cancel_event, deadline, memory_limit)
        finally:
            if worker.running():
                worker.kill_strays()

    def _wait(self, worker: _Worker, job: Job, job_id: int, cancel_event: threading.Event | None,
              deadline: float, memory_limit: int) -> Result:
        while True:
            reply = worker.poll_reply(job_id, POLL_S)
            if isinstance(reply, Result):
                written = worker.output_bytes()
                if written > self.output_limit_bytes:  # a flood that ended before a check
                    worker.kill(("output-flood", self._flood_message(job, written)))
                    return self._lost(worker, job)
                if reply.payload.get("retire"):  # the worker cannot run another job (lost CUDA context)
                    worker.kill()
                return reply
            if reply is False or not worker.running():
                return self._lost(worker, job)
            reason = self._breach(worker, job, cancel_event, deadline, memory_limit)
            if reason is not None:
                worker.kill(reason)
                return self._lost(worker, job)

    def _breach(
        self,
        worker: _Worker,
        job: Job,
        cancel_event: threading.Event | None,
        deadline: float,
        memory_limit: int,
    ) -> tuple[Failure, str] | None:
        """The first limit the running job has broken, if any, with a one-line message."""
        if cancel_event is not None and cancel_event.is_set():
            return "cancelled", f"{job.kind} job cancelled; its worker was killed"
        if self._closed:
            return "cancelled", f"the worker pool was closed while the {job.kind} job ran"
        now = time.monotonic()
        if now > deadline:
            return "timeout", (
                f"{job.kind} job ran past its {job.timeout_s:g} s timeout; worker killed"
            )
        resident = worker.resident(now)
        if job.stall_s is not None and now - worker.last_progress > job.stall_s + (
                0.0 if worker.progressed else job.startup_s):
            return "timeout", (
                f"{job.kind} job timed out after {job.stall_s:g} s (hang): no progress in that "
                f"time, holding {resident / _MB:.0f} MB; worker killed"
            )
        if resident > memory_limit:
            return "out-of-memory", (
                f"memory limit: worker used {resident / _MB:.0f} MB, over the {job.memory_mb} MB "
                f"limit, while running {job.kind} job; worker killed"
            )
        if job.limit_address_space:
            cap = address_limit_bytes(job.memory_mb)
            if virtual_bytes(worker.inner_pid) > cap - ADDRESS_MARGIN_BYTES:
                return "out-of-memory", (
                    f"memory limit: {job.kind} job reached its address-space cap "
                    f"({cap / _MB:.0f} MB for a {job.memory_mb} MB limit); worker killed"
                )
        written = worker.output_bytes()
        if written > self.output_limit_bytes:
            return "output-flood", self._flood_message(job, written)
        return None

    def _flood_message(self, job: Job, written: int) -> str:
        return (
            f"worker wrote {written / _MB:.0f} MB to stdout/stderr, over the "
            f"{self.output_limit_bytes / _MB:.0f} MB limit, while running {job.kind} job; "
            "worker killed"
        )

    def _lost(self, worker: _Worker, job: Job) -> Result:
        """The result for a job whose worker is gone or has been killed; reaps the worker."""
        worker.kill()
        tails = worker.tails()
        if worker.kill_reason is not None:
            failure, error = worker.kill_reason
        else:
            failure, error = _death(worker.proc.returncode, job)
        return _failed(job, failure, error, tails)


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _death(returncode: int | None, job: Job) -> tuple[Failure, str]:
    """Classify a worker that died on its own."""
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        hint = " (the system may be out of memory)" if -returncode == signal.SIGKILL else ""
        return "crashed", f"worker killed by {name} while running {job.kind} job{hint}"
    return "exited", f"worker exited with status {returncode} while running {job.kind} job"


def _failed(
    job: Job, failure: Failure, error: str, payload: dict[str, Any] | None = None
) -> Result:
    return Result(ok=False, kind=job.kind, payload=payload or {}, error=error, failure=failure)
