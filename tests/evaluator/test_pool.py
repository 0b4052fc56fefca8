"""The worker pool contains faults: each is reported in one line and the next job succeeds."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritonsmith.evaluator import Job, Result, WorkerPool
from tritonsmith.evaluator.sandbox import network_isolation_prefix

FAULTS = str(Path(__file__).parent / "fixtures" / "faults.py")


def call(
    function: str,
    *args: object,
    timeout_s: float = 20,
    memory_mb: int = 1024,
    stall_s: float | None = None,
    limit_address_space: bool = False,
) -> Job:
    return Job(
        "run_python",
        {"path": FAULTS, "function": function, "args": list(args)},
        timeout_s=timeout_s,
        memory_mb=memory_mb,
        stall_s=stall_s,
        limit_address_space=limit_address_space,
    )


def gone(pid: int) -> bool:
    """True once `pid` no longer exists (a zombie still exists: it was not reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def dead_or_zombie(pid: int) -> bool:
    """For a process that is not our child: gone, or dead and waiting for init to reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except FileNotFoundError:
        return True


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    # The pool's own mechanics, seen through pids and files in tmp_path, so without the
    # namespaces (a jailed worker is pid 1 and cannot see tmp_path); test_jail.py covers them.
    with WorkerPool(2, isolate_network=False) as shared:
        yield shared


def test_ping_uses_two_workers(pool: WorkerPool) -> None:
    results: list[Result] = []
    threads = [
        threading.Thread(target=lambda: results.append(pool.run(call("sleep_then_pid", 0.5))))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r.ok for r in results), results
    assert len({r.payload["value"] for r in results}) == 2
    ping = pool.run(Job("ping", {}, timeout_s=10, memory_mb=512))
    assert ping.ok and ping.payload["pid"] in pool.worker_pids()


def test_run_python_returns_value(pool: WorkerPool) -> None:
    assert pool.run(call("add", 2, 3)) == Result(ok=True, kind="run_python", payload={"value": 5})


def test_run_python_from_source(pool: WorkerPool) -> None:
    # A real file, so inspect (and so @triton.jit) can read the function's source.
    source = "import inspect\n\ndef f(x):\n    return len(inspect.getsourcelines(f)[0]) + x\n"
    job = Job("run_python", {"source": source, "function": "f", "args": [1]}, 10, 512)
    assert pool.run(job).payload == {"value": 3}


@pytest.mark.parametrize(
    ("job", "failure", "error"),
    [
        (call("segfault"), "crashed", "worker killed by SIGSEGV while running run_python job"),
        (call("forever", timeout_s=2), "timeout", "run_python job ran past its 2 s timeout"),
        (call("memory_bomb", memory_mb=300), "out-of-memory", "over the 300 MB limit"),
        (call("exit_3"), "exited", "worker exited with status 3 while running run_python job"),
        (call("flood_stdout", 50), "output-flood", "to stdout/stderr, over the 10 MB limit"),
    ],
    ids=["segfault", "endless-loop", "memory-bomb", "os-exit", "stdout-flood"],
)
def test_fault_is_contained(pool: WorkerPool, job: Job, failure: str, error: str) -> None:
    started = time.monotonic()
    result = pool.run(job)
    assert (result.ok, result.failure) == (False, failure), result
    assert result.error is not None and error in result.error and "\n" not in result.error
    assert time.monotonic() - started < job.timeout_s + 5
    assert pool.run(call("add", 1, 1)).payload == {"value": 2}
    assert pool.run(Job("ping", {}, timeout_s=10, memory_mb=512)).ok


def test_handler_exceptions_leave_the_worker_alive(pool: WorkerPool) -> None:
    before = pool.worker_pids()
    for function, error in [
        ("fail", "ValueError: bad input"),
        ("exit_via_sys", "SystemExit: 4"),
        ("not_json", "TypeError: Object of type set is not JSON serializable"),
    ]:
        result = pool.run(call(function))
        assert (result.ok, result.failure, result.error) == (False, None, error)
    assert pool.worker_pids() == before


def test_user_code_cannot_read_the_job_pipe(pool: WorkerPool) -> None:
    assert pool.run(call("read_stdin")).payload == {"value": ""}
    assert pool.run(call("add", 2, 2)).payload == {"value": 4}


def test_secrets_do_not_reach_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    monkeypatch.setenv("MY_SERVICE_PASSWORD", "hunter2")
    with WorkerPool(1) as private:
        env = private.run(call("environment")).payload["value"]
    assert not {"ANTHROPIC_API_KEY", "GITHUB_TOKEN", "MY_SERVICE_PASSWORD"} & set(env)
    assert env["PATH"] == os.environ["PATH"]
    assert env["TRITON_CACHE_DIR"].endswith("triton-cache")


@pytest.mark.skipif(not network_isolation_prefix(), reason="no network namespaces here")
def test_workers_have_no_network() -> None:
    with WorkerPool(1) as private:
        assert private.run(call("interfaces")).payload == {"value": ["lo"]}


def test_cancel_kills_a_running_job(pool: WorkerPool) -> None:
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    result = pool.run(call("forever", timeout_s=60), cancel_event=cancel)
    assert result.failure == "cancelled" and time.monotonic() - started < 5
    assert pool.run(call("add", 0, 1)).payload == {"value": 1}


async def test_cancelling_arun_kills_the_worker(pool: WorkerPool) -> None:
    assert (await pool.arun(call("add", 3, 4))).payload == {"value": 7}
    task = asyncio.create_task(pool.arun(call("forever", timeout_s=60)))
    await asyncio.sleep(0.5)
    busy = set(pool.worker_pids())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline = time.monotonic() + 5
    while set(pool.worker_pids()) == busy and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert set(pool.worker_pids()) != busy  # the looping worker was killed and discarded
    assert (await pool.arun(call("add", 1, 2))).payload == {"value": 3}


def test_close_leaves_no_process_behind() -> None:
    pool = WorkerPool(2, isolate_network=False)  # pids as the host sees them; test_jail.py: in namespaces
    grandchild = pool.run(call("start_grandchild")).payload["value"]
    results: list[Result] = []
    runners = [
        threading.Thread(target=lambda: results.append(pool.run(call("forever")))) for _ in range(2)
    ]
    for runner in runners:
        runner.start()
    deadline = time.monotonic() + 10
    while len(pool.worker_pids()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = pool.worker_pids()
    assert len(pids) == 2
    pool.close()
    for runner in runners:
        runner.join(5)
    assert [r.failure for r in results] == ["cancelled", "cancelled"]
    assert all(gone(pid) for pid in pids)  # killed and reaped: no zombie either
    assert dead_or_zombie(grandchild)  # killed with the worker's process group
    with pytest.raises(Exception, match="closed"):
        pool.run(Job("ping", {}, timeout_s=10, memory_mb=512))


def test_a_worker_whose_cuda_context_is_lost_is_replaced(pool: WorkerPool) -> None:
    """After an illegal memory access every later CUDA call in that process fails: the job
    reports the error and the next job runs in a fresh worker."""
    source = "def f():\n    raise RuntimeError('CUDA error: an illegal memory access was encountered')\n"
    before = pool.run(Job("ping", {}, 10, 512)).payload["pid"]
    lost = pool.run(Job("run_python", {"source": source, "function": "f", "args": []}, 10, 512))
    assert not lost.ok and "illegal memory access" in (lost.error or "")
    after = pool.run(Job("ping", {}, 10, 512))
    assert after.ok and after.payload["pid"] != before


# -- fault verdicts in seconds: hangs, signal-ignoring hangs, memory growth ---------------------


@pytest.mark.parametrize(
    "function", ["forever", "ignore_signals_forever", "ignore_signals_in_c"],
    ids=["endless-loop", "ignores-signals", "ignores-signals-in-c"],
)
def test_a_hang_is_reported_after_the_stall_limit(pool: WorkerPool, function: str) -> None:
    """A job that stops reporting progress is a hang after `stall_s`, well before its overall
    timeout; SIGKILL to the process group ends it whatever signals it ignores."""
    started = time.monotonic()
    result = pool.run(call(function, timeout_s=120, stall_s=2))
    elapsed = time.monotonic() - started
    assert (result.ok, result.failure) == (False, "timeout"), result
    assert "run_python job timed out after 2 s (hang)" in (result.error or "")
    assert 2 <= elapsed < 6, elapsed
    assert pool.run(call("add", 1, 1)).payload == {"value": 2}


@pytest.mark.slow  # over 3 s: outside the fast loop
def test_progress_keeps_a_slow_job_alive(pool: WorkerPool) -> None:
    """Eight steps of 0.5 s with a progress report after each: 4 s in all, past a 1.5 s stall
    limit, and still not a hang (a slow interpreter run that progresses is not killed)."""
    result = pool.run(call("slow_progress", 8, 0.5, timeout_s=60, stall_s=1.5))
    assert result.ok and result.payload == {"value": 8}, result


def test_the_overall_timeout_still_applies_to_a_job_that_progresses(pool: WorkerPool) -> None:
    result = pool.run(call("slow_progress", 100, 0.3, timeout_s=2, stall_s=10))
    assert result.failure == "timeout" and "ran past its 2 s timeout" in (result.error or "")


def test_killing_a_hang_also_kills_a_child_that_left_the_process_group(
    pool: WorkerPool, tmp_path: Path
) -> None:
    pid_file = tmp_path / "child.pid"
    result = pool.run(call("stubborn_child_then_forever", str(pid_file), timeout_s=60, stall_s=2))
    assert result.failure == "timeout", result
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while not dead_or_zombie(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dead_or_zombie(child)


def test_memory_growth_in_a_child_is_counted(pool: WorkerPool) -> None:
    """The watchdog counts every process in the worker's session (this kernel may lack
    /proc/<pid>/task/*/children, so a child's growth went unseen)."""
    started = time.monotonic()
    result = pool.run(call("memory_bomb_in_child", memory_mb=300, timeout_s=60))
    assert result.failure == "out-of-memory", result
    assert "memory limit" in (result.error or "") and "over the 300 MB limit" in (result.error or "")
    assert time.monotonic() - started < 10


def test_memory_growth_in_a_daemonized_grandchild_is_counted_and_killed(
    pool: WorkerPool, tmp_path: Path
) -> None:
    pid_file = tmp_path / "daemon.pid"
    result = pool.run(call("memory_bomb_in_daemon", str(pid_file), memory_mb=300, timeout_s=60))
    assert result.failure == "out-of-memory", result
    daemon = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while not dead_or_zombie(daemon) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dead_or_zombie(daemon)


def test_an_allocation_past_the_address_space_cap_fails_at_once(pool: WorkerPool) -> None:
    """Without CUDA the worker's address space is capped: a 6 GB request fails in the
    allocator (MemoryError) before a page is touched, and the verdict names the memory limit."""
    started = time.monotonic()
    result = pool.run(call("huge_allocation", 6, memory_mb=512, limit_address_space=True))
    assert (result.ok, result.failure) == (False, "out-of-memory"), result
    assert (result.error or "").startswith("memory limit: run_python job could not allocate memory")
    assert "512 MB limit" in (result.error or "") and "MemoryError" in (result.error or "")
    assert time.monotonic() - started < 5
    assert pool.run(call("add", 2, 2)).payload == {"value": 4}  # a fresh worker, no cap left


def test_catching_memory_errors_does_not_escape_the_limit(pool: WorkerPool) -> None:
    """User code that catches the allocator's refusals and carries on is stopped as soon as its
    address space reaches the cap."""
    started = time.monotonic()
    result = pool.run(call("catch_memory_errors", memory_mb=512, limit_address_space=True, timeout_s=60))
    assert result.failure == "out-of-memory", result
    assert "memory limit" in (result.error or "") and "address-space cap" in (result.error or "")
    assert time.monotonic() - started < 10


def test_prestart_warms_a_worker_in_the_background() -> None:
    """A verification starts its candidate worker while the reference runs: `prestart` returns
    at once, and the first job finds the worker with the heavy modules imported (only those
    the worker allows: never user code)."""
    with WorkerPool(1) as private:
        started = time.monotonic()
        private.prestart(("numpy", "fixtures.faults"))
        assert time.monotonic() - started < 0.5
        assert private.run(call("imported", "numpy")).payload == {"value": True}
        assert private.run(call("imported", "fixtures.faults")).payload == {"value": False}


def test_prestart_fill_starts_the_workers_a_pool_lacks_and_leaves_the_idle_one_be() -> None:
    """A prediction's compiles run one per worker: while its profile runs, `prestart(fill=True)`
    starts (and warms) every worker the pool lacks, in the background, without queueing on the
    idle one, and never more than the pool's size."""
    with WorkerPool(2) as private:
        first = private.run(call("imported", "numpy"))
        assert first.ok
        [idle] = private.worker_pids()
        started = time.monotonic()
        private.prestart(("numpy",), fill=True)
        private.prestart(("numpy",), fill=True)  # a second call while the first starts: no third
        assert time.monotonic() - started < 0.5
        deadline = time.monotonic() + 30
        while len(private.worker_pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        pids = private.worker_pids()
        assert len(pids) == 2 and idle in pids
        both = [private.run(call("imported", "numpy")) for _ in range(2)]
        assert all(r.payload == {"value": True} for r in both)
