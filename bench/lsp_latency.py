"""Edit-to-diagnostics latency and cold start of tritonsmith's language server, with pylsp +
pyflakes as the reference, measured by a minimal LSP client over stdio.

For each server and file size:

1. spawn the server, ``initialize`` (client capabilities without ``textDocument.diagnostic``,
   so both servers push ``publishDiagnostics``), ``initialized``, ``didChangeConfiguration``,
   ``didOpen`` a generated file; **cold start** = process spawn to the first
   ``publishDiagnostics`` for that URI (also split into spawn->initialize response and
   didOpen->diagnostics). Before any measurement each server is started once and discarded, so
   that every measured start finds what an installed package has after its first run: Python's
   bytecode (kept in a temporary ``PYTHONPYCACHEPREFIX``, also where ``PYTHONDONTWRITEBYTECODE``
   is set) and tritonsmith's cache of attrs' generated methods (``server/lsp_types.py``);
   ``--starts N`` adds N more starts (spawn, initialize, open, first diagnostics, exit) per
   server and size, for the cold start's spread;
2. send ``--edits`` one-character ``didChange`` edits (incremental sync): edit 2k inserts ``x``
   into an assignment target inside a ``@triton.jit`` body (sites spread over the whole file),
   edit 2k+1 deletes it again. Each edit carries a new version; the **latency** is the time from
   writing the notification to reading a ``publishDiagnostics`` for the URI with that version
   (or, for a server that omits versions, the next one). The client waits for each before
   sending the next edit, so the numbers are per-edit, not coalesced.

3. with ``--verify-in-flight [FILE]`` (tritonsmith only), in the same server: open a copy of FILE
   (default ``examples/matmul.py``, a file with a spec), save it and save it again whenever its
   job (compile + verify, ``server/jobs.py``) has published, and edit again meanwhile; edits
   that ran entirely inside a job (``$/progress`` begin to end) give the in-flight latency,
   next to the idle one (see ``edits_in_flight``).

pylsp lints through ``@debounce(LINT_DEBOUNCE_S=0.5, keyed_by="doc_uri")`` (pylsp/python_lsp.py),
a hard-coded 500 ms timer that no setting changes; its latencies therefore include 500 ms of
idle waiting. The table also shows pylsp's latency minus that 500 ms ("work").

Usage::

    .venv/bin/python bench/lsp_latency.py --sizes 200,2000,10000 --edits 200 \\
        --servers tritonsmith,pylsp --json bench/results/lsp_latency.json
    .venv/bin/python bench/lsp_latency.py --sizes 2000 --edits 200 --servers tritonsmith \\
        --verify-in-flight --pause-ms 20
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import editable_sites, generate  # noqa: E402

PYLSP_DEBOUNCE_S = 0.5
REPO = Path(__file__).resolve().parent.parent
DEFAULT_VERIFY_FILE = REPO / "examples" / "matmul.py"
VERIFY_SOURCE = "tritonsmith-verify"  # diagnostics of compile and verify jobs (server/jobs.py)

PYLSP_SETTINGS = {
    "pylsp": {
        "plugins": {
            "pyflakes": {"enabled": True},
            "pycodestyle": {"enabled": False},
            "mccabe": {"enabled": False},
            "pydocstyle": {"enabled": False},
            "autopep8": {"enabled": False},
            "yapf": {"enabled": False},
            "jedi_completion": {"enabled": False},
            "rope_autoimport": {"enabled": False},
            "pylint": {"enabled": False},
            "flake8": {"enabled": False},
        }
    }
}

# `ruff server` with the rules `check`'s comparison runs (`bench/check_cache.py`: E, F, W).
RUFF_SETTINGS = {"settings": {"lint": {"select": ["E", "F", "W"]}}}


def server_command(name: str) -> tuple[list[str], dict | None]:
    """The command line and the settings (sent as initializationOptions and
    didChangeConfiguration) of a server."""
    if name == "tritonsmith":
        return [sys.executable, "-m", "tritonsmith", "serve"], None
    if name == "pylsp":
        return [sys.executable, "-m", "pylsp"], PYLSP_SETTINGS
    if name == "ruff":
        return [str(Path(sys.executable).parent / "ruff"), "server"], RUFF_SETTINGS
    raise SystemExit(f"unknown server {name!r}")


CLIENT_CAPABILITIES = {
    # No textDocument.diagnostic: both servers must push publishDiagnostics.
    "textDocument": {
        "synchronization": {"dynamicRegistration": False, "didSave": True},
        "publishDiagnostics": {"relatedInformation": True, "versionSupport": True},
    },
    "workspace": {"workspaceFolders": False, "configuration": False},
    "general": {"positionEncodings": ["utf-16"]},
}


class Client:
    """JSON-RPC 2.0 over stdio with Content-Length framing."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._next_id = 1
        self._pending: dict[int, asyncio.Future] = {}
        # (time, uri, version, count, count with source "tritonsmith-verify")
        self.diagnostics: list[tuple[float, str, int | None, int, int]] = []
        self.progress: list[tuple[float, str, str, str]] = []  # (time, token, kind, title or message)
        self.server_requests: list[tuple[float, str]] = []  # (time, method)
        self._listeners: set[asyncio.Event] = set()  # one per waiter, set on each publish or progress
        self._reader = asyncio.create_task(self._read_loop())

    # -- sending ---------------------------------------------------------------------------

    def _write(self, message: dict) -> None:
        body = json.dumps(message, separators=(",", ":")).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def request(self, method: str, params: dict | None) -> object:
        rid = self._next_id
        self._next_id += 1
        future = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        await self.proc.stdin.drain()
        return await future

    async def notify(self, method: str, params: dict | None) -> float:
        """Send a notification; returns the time just before it was written."""
        t = time.perf_counter()
        self._write({"jsonrpc": "2.0", "method": method, "params": params})
        await self.proc.stdin.drain()
        return t

    # -- receiving -------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        reader = self.proc.stdout
        try:
            while True:
                length = None
                while True:
                    line = await reader.readline()
                    if not line:
                        return
                    line = line.strip()
                    if not line:
                        break
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length)
                now = time.perf_counter()
                self._dispatch(json.loads(body), now)
        except (asyncio.IncompleteReadError, ConnectionError):
            return

    def _dispatch(self, message: dict, now: float) -> None:
        if "method" in message:
            method = message["method"]
            if "id" in message:  # a request from the server: answer so it never blocks
                self.server_requests.append((now, method))
                result: object = None
                if method == "workspace/configuration":
                    result = [None for _ in message.get("params", {}).get("items", [])]
                self._write({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif method == "textDocument/publishDiagnostics":
                params = message["params"]
                verify = sum(d.get("source") == VERIFY_SOURCE for d in params["diagnostics"])
                self.diagnostics.append((now, params["uri"], params.get("version"), len(params["diagnostics"]), verify))
                self._notify_listeners()
            elif method == "$/progress":
                value = message["params"].get("value") or {}
                text = value.get("title") or value.get("message") or ""
                self.progress.append((now, str(message["params"].get("token")), value.get("kind", ""), text))
                self._notify_listeners()
            return
        future = self._pending.pop(message.get("id"), None)
        if future is not None and not future.done():
            if "error" in message:
                future.set_exception(RuntimeError(f"LSP error: {message['error']}"))
            else:
                future.set_result(message.get("result"))

    def _notify_listeners(self) -> None:
        for event in self._listeners:
            event.set()

    async def _next_message(self, timeout: float) -> None:
        """Wait for the next publishDiagnostics or $/progress (at most `timeout` seconds). Each
        waiter has its own event, so concurrent waiters cannot clear one another's wake-up."""
        event = asyncio.Event()
        self._listeners.add(event)
        try:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(event.wait(), timeout)
        finally:
            self._listeners.discard(event)

    async def wait_diagnostics(self, uri: str, *, after: int, version: int | None, timeout: float):
        """The first publishDiagnostics for `uri` at index >= `after` in `self.diagnostics` with
        `version` (any version when None, or when the server sends none)."""
        deadline = time.perf_counter() + timeout
        index = after
        while True:
            while index < len(self.diagnostics):
                entry = self.diagnostics[index]
                index += 1
                if entry[1] != uri:
                    continue
                if version is None or entry[2] is None or entry[2] == version:
                    return entry
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"no publishDiagnostics for {uri} version {version}")
            await self._next_message(remaining)

    async def wait_job(self, uri: str, *, after: tuple[int, int], timeout: float) -> tuple:
        """The publishDiagnostics for `uri` that ends a save job: the first one after a
        `$/progress` end at index >= `after[1]` of `self.progress`, searching `self.diagnostics`
        from `after[0]` (a save job ends its progress, then publishes; other publishes, such as
        a re-check when `.tritonsmith/` appears, are skipped)."""
        deadline = time.perf_counter() + timeout
        while True:
            ends = [when for when, _, kind, _ in self.progress[after[1]:] if kind == "end"]
            if ends:
                for entry in self.diagnostics[after[0]:]:
                    if entry[1] == uri and entry[0] >= ends[0]:
                        return entry
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"no save job ended for {uri}")
            await self._next_message(remaining)

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self.request("shutdown", None), 5)
            await self.notify("exit", None)
        except Exception:
            pass
        try:
            await asyncio.wait_for(self.proc.wait(), 5)
        except asyncio.TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        self._reader.cancel()


@dataclass
class Result:
    server: str
    lines: int
    edits: int
    cold_start_ms: float
    spawn_to_initialize_ms: float
    open_to_diagnostics_ms: float
    first_diagnostics: int
    cold_start_cpu_ms: float = float("nan")  # the server's own CPU time at its first diagnostics
    file: str | None = None  # the real file opened (`--file`), or None for a generated one
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    max_ms: float = 0.0
    mean_ms: float = 0.0
    versions_sent_back: bool = True
    latencies_ms: list[float] = field(default_factory=list)
    in_flight: InFlight | None = None  # with --verify-in-flight
    # Every measured start (the edit run's first, then --starts more): total, spawn->initialize,
    # didOpen->diagnostics, in ms.
    starts: list[dict[str, float]] = field(default_factory=list)
    sites: str = "kernel"  # where the edits were: in kernels' bodies, or in host functions (--sites)

    @property
    def cold_start_median_ms(self) -> float:
        return statistics.median(s["cold_start_ms"] for s in self.starts) if self.starts else self.cold_start_ms


@dataclass
class InFlight:
    """Edit latencies of the same file while save jobs (compile + verify) of another ran."""

    file: str
    jobs: int = 0  # save jobs completed while editing
    job_s: list[float] = field(default_factory=list)  # each job, $/progress begin to end
    p50_ms: float = float("nan")  # over warm_ms
    p95_ms: float = float("nan")
    max_ms: float = float("nan")
    warm_ms: list[float] = field(default_factory=list)  # edits inside the second and later jobs
    cold_ms: list[float] = field(default_factory=list)  # edits inside the first job
    between_ms: list[float] = field(default_factory=list)  # edits that overlapped no job entirely


def process_cpu_ms(pid: int) -> float:
    """User+system CPU time of a process so far (Linux /proc; 10 ms resolution), or NaN."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1e3 / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


JOB_CAPABILITIES = {
    "window": {"workDoneProgress": True},
    "workspace": {**CLIENT_CAPABILITIES["workspace"], "codeLens": {"refreshSupport": True}},
}
"""Added to CLIENT_CAPABILITIES when a benchmark watches save jobs: `$/progress` of each job,
and `workspace/codeLens/refresh` when it ends."""


async def start_server(
    command: list[str],
    folder: Path,
    *,
    stderr: IO[bytes],
    capabilities: dict = CLIENT_CAPABILITIES,
    settings: dict | None = None,
    timeout: float = 30.0,
    env: dict[str, str] | None = None,
) -> tuple[Client, float, float]:
    """Spawn a server in `folder` (its workspace root), `initialize` it and send `initialized`
    (and `didChangeConfiguration` with `settings`). Returns the client, the spawn time and the
    time the initialize response arrived (`time.perf_counter()`)."""
    t_spawn = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        cwd=str(folder),
        env=env,
        limit=64 * 1024 * 1024,
    )
    client = Client(proc)
    try:
        await asyncio.wait_for(
            client.request(
                "initialize",
                {
                    "processId": os.getpid(),
                    "rootUri": folder.as_uri(),
                    "rootPath": str(folder),
                    "capabilities": capabilities,
                    "initializationOptions": settings,
                    "clientInfo": {"name": "tritonsmith-bench"},
                },
            ),
            timeout,
        )
        t_init = time.perf_counter()
        await client.notify("initialized", {})
        if settings is not None:
            await client.notify("workspace/didChangeConfiguration", {"settings": settings})
    except BaseException:
        await client.close()
        raise
    return client, t_spawn, t_init


def server_env(pycache: Path) -> dict[str, str]:
    """The servers' environment: bytecode cached (in `pycache`), as an installed package has it."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


async def one_start(server: str, uri: str, text: str, folder: Path, *, env: dict[str, str],
                    timeout: float) -> dict[str, float]:
    """Spawn, initialize, open `text`, wait for its first diagnostics, exit."""
    command, settings = server_command(server)
    client, t_spawn, t_init = await start_server(
        command, folder, stderr=asyncio.subprocess.DEVNULL, settings=settings, timeout=timeout, env=env)  # type: ignore[arg-type]
    try:
        t_open, first = await open_document(client, uri, text, timeout=timeout)
    finally:
        await client.close()
    return {"cold_start_ms": (first[0] - t_spawn) * 1e3, "spawn_to_initialize_ms": (t_init - t_spawn) * 1e3,
            "open_to_diagnostics_ms": (first[0] - t_open) * 1e3}


async def open_document(client: Client, uri: str, text: str, *, timeout: float) -> tuple[float, tuple]:
    """`didOpen` (version 1); returns the time it was sent and its first publishDiagnostics."""
    mark = len(client.diagnostics)
    t_open = await client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
    )
    return t_open, await client.wait_diagnostics(uri, after=mark, version=None, timeout=timeout)


async def run_one(
    server: str,
    lines: int,
    edits: int,
    folder: Path,
    log_dir: Path,
    timeout: float,
    *,
    pause_s: float = 0.0,
    verify_in_flight: Path | None = None,
    env: dict[str, str] | None = None,
    starts: int = 0,
    where: str = "kernel",
    source: Path | None = None,
) -> Result:
    """One server on one file: a generated one of `lines` lines, or a copy of `source` (a real
    kernel file; `lines` is then its length)."""
    path = folder / (source.name if source is not None else f"kernels_{lines}.py")
    text = source.read_text() if source is not None else generate(lines, seed=lines)
    path.write_text(text)
    uri = path.as_uri()
    sites = editable_sites(text, where)
    rng = random.Random(lines)
    pairs = (edits + 1) // 2
    # Sites spread evenly over the file, visited in a shuffled order.
    chosen = [sites[(k * len(sites)) // pairs] for k in range(pairs)] if len(sites) >= pairs else [
        sites[k % len(sites)] for k in range(pairs)
    ]
    rng.shuffle(chosen)

    command, settings = server_command(server)
    stderr = open(log_dir / f"{server}_{path.stem}.stderr.log", "wb")  # noqa: SIM115 (closed in finally)
    capabilities = CLIENT_CAPABILITIES
    if verify_in_flight:  # as an editor has them: the job reports progress and refreshes lenses
        capabilities = {**CLIENT_CAPABILITIES, **JOB_CAPABILITIES}
    await one_start(server, uri, text, folder, env=env or dict(os.environ), timeout=timeout)  # warm-up, discarded
    client, t_spawn, t_init = await start_server(
        command, folder, stderr=stderr, capabilities=capabilities, settings=settings, timeout=timeout, env=env
    )
    proc = client.proc
    try:
        t_open, first = await open_document(client, uri, text, timeout=timeout)
        cold_cpu = process_cpu_ms(proc.pid)
        result = Result(
            server=server,
            lines=lines,
            edits=edits,
            cold_start_ms=(first[0] - t_spawn) * 1e3,
            spawn_to_initialize_ms=(t_init - t_spawn) * 1e3,
            open_to_diagnostics_ms=(first[0] - t_open) * 1e3,
            first_diagnostics=first[3],
            cold_start_cpu_ms=cold_cpu,
            sites=where,
            file=source.name if source is not None else None,
        )
        result.starts.append({"cold_start_ms": result.cold_start_ms,
                              "spawn_to_initialize_ms": result.spawn_to_initialize_ms,
                              "open_to_diagnostics_ms": result.open_to_diagnostics_ms})
        # Let any trailing publish of the open (e.g. pylsp's lint after didChangeConfiguration)
        # arrive before the edits start, so it cannot be mistaken for an edit's answer.
        await asyncio.sleep(PYLSP_DEBOUNCE_S + 0.3 if server == "pylsp" else 0.2)

        version = 1
        versions_seen = False

        async def edit(n: int) -> tuple[float, float]:
            """Edit number `n` (even: insert, odd: delete); returns (sent, answered)."""
            nonlocal version, versions_seen
            row, col = chosen[(n // 2) % len(chosen)]
            version += 1
            if n % 2 == 0:
                change = {"range": {"start": {"line": row, "character": col}, "end": {"line": row, "character": col}}, "text": "x"}
            else:
                change = {"range": {"start": {"line": row, "character": col}, "end": {"line": row, "character": col + 1}}, "text": ""}
            mark = len(client.diagnostics)
            t0 = await client.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
            )
            got = await client.wait_diagnostics(uri, after=mark, version=version, timeout=timeout)
            versions_seen |= got[2] is not None
            if pause_s:
                await asyncio.sleep(pause_s)
            return t0, got[0]

        for n in range(edits):
            t0, t1 = await edit(n)
            result.latencies_ms.append((t1 - t0) * 1e3)
        result.versions_sent_back = versions_seen
        lat = result.latencies_ms
        if lat:
            result.p50_ms = percentile(lat, 0.50)
            result.p95_ms = percentile(lat, 0.95)
            result.max_ms = max(lat)
            result.mean_ms = statistics.fmean(lat)
        if verify_in_flight is not None:
            result.in_flight = await edits_in_flight(
                client, edit, first=edits, edits=edits, source=verify_in_flight, folder=folder, timeout=timeout
            )
    finally:
        await client.close()
        stderr.close()
    for _ in range(starts):  # one server at a time: the machine's cores are not shared
        result.starts.append(await one_start(server, uri, text, folder, env=env or dict(os.environ), timeout=timeout))
    return result


async def edits_in_flight(
    client: Client,
    edit: Callable[[int], Awaitable[tuple[float, float]]],
    *,
    first: int,
    edits: int,
    source: Path,
    folder: Path,
    timeout: float,
) -> InFlight:
    """Edit latency while save jobs run: open a copy of `source` (a file with a spec, so each
    save compiles and verifies it), save it, save it again as soon as its job has published, and
    meanwhile send edits (`edit(first)`, `edit(first + 1)`, ...). An edit counts as in flight
    when a job had begun (`$/progress` begin) before it was sent and had not ended when its
    diagnostics arrived; the first job (cold: workers start, imports, empty Triton cache) is
    reported apart from the warm ones. Stops after `edits` warm in-flight edits."""
    path = folder / f"verify_{source.name}"
    text = source.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    vuri = path.as_uri()
    await open_document(client, vuri, text, timeout=timeout)
    stats = InFlight(file=source.name)
    done = asyncio.Event()

    async def saver() -> None:
        while not done.is_set():
            mark = (len(client.diagnostics), len(client.progress))
            await client.notify("textDocument/didSave", {"textDocument": {"uri": vuri}})
            await client.wait_job(vuri, after=mark, timeout=max(timeout, 600.0))
            stats.jobs += 1

    def running_job(t0: float, t1: float) -> int | None:
        """The index of the job that began before `t0` and had not ended by `t1`, if any."""
        begun: dict[str, int] = {}
        ordinal = 0
        for when, token, kind, _ in client.progress:
            if kind == "begin":
                if when <= t0:
                    begun[token] = ordinal
                ordinal += 1
            elif kind == "end" and when <= t1:
                begun.pop(token, None)
        return min(begun.values()) if begun else None

    task = asyncio.create_task(saver())
    try:
        deadline = time.perf_counter() + max(timeout, 600.0)
        while not any(kind == "begin" for _, _, kind, _ in client.progress):
            if time.perf_counter() > deadline or task.done():
                raise TimeoutError("the save job never began (is triton installed, verifyOnSave on?)")
            await asyncio.sleep(0.01)
        n = first
        while len(stats.warm_ms) < edits:
            if time.perf_counter() > deadline or task.done():
                raise TimeoutError(f"only {len(stats.warm_ms)} edits ran while a warm job was in flight")
            t0, t1 = await edit(n)
            n += 1
            job = running_job(t0, t1)
            if job is None:
                stats.between_ms.append((t1 - t0) * 1e3)
            else:
                (stats.cold_ms if job == 0 else stats.warm_ms).append((t1 - t0) * 1e3)
    finally:
        done.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await task
    starts: dict[str, float] = {}
    for when, token, kind, _ in client.progress:
        if kind == "begin":
            starts[token] = when
        elif kind == "end" and token in starts:
            stats.job_s.append(when - starts.pop(token))
    warm = stats.warm_ms
    stats.p50_ms, stats.p95_ms, stats.max_ms = percentile(warm, 0.5), percentile(warm, 0.95), max(warm)
    return stats


def _ms(value: float, result: Result) -> str:
    return f"{value:.1f}" if result.latencies_ms else "-"


def _starts(r: Result) -> str:
    totals = [s["cold_start_ms"] for s in r.starts] or [r.cold_start_ms]
    return f"{r.cold_start_median_ms:.0f} ({min(totals):.0f}-{max(totals):.0f}, {len(totals)})"


def render(results: list[Result]) -> str:
    rows = [
        "| server | lines | edited | edits | p50 ms | p95 ms | max ms | mean ms | cold start ms, median (range, n) | cold start CPU ms | spawn→init ms | didOpen→diag ms | diags |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rows.append(
            f"| {r.server} | {r.lines:,}{f' ({r.file})' if r.file else ''} | {r.sites} | {len(r.latencies_ms)} | {_ms(r.p50_ms, r)} | {_ms(r.p95_ms, r)} | "
            f"{_ms(r.max_ms, r)} | {_ms(r.mean_ms, r)} | {_starts(r)} | {r.cold_start_cpu_ms:.0f} | {r.spawn_to_initialize_ms:.0f} | {r.open_to_diagnostics_ms:.0f} | "
            f"{r.first_diagnostics} |"
        )
    busy = [r for r in results if r.in_flight is not None]
    if busy:
        rows += [
            "",
            "The same file, same server, while save jobs (compile + verify) of another file ran:",
            "",
            "| lines | verifying | idle p95 ms | in-flight edits | p50 ms | p95 ms | max ms | p95 / idle p95 "
            "| jobs | job s (median) | first-job edits | first-job p95 ms |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in busy:
            f = r.in_flight
            assert f is not None
            rows.append(
                f"| {r.lines:,} | {f.file} | {r.p95_ms:.1f} | {len(f.warm_ms)} | {f.p50_ms:.1f} | {f.p95_ms:.1f} | "
                f"{f.max_ms:.1f} | {f.p95_ms / r.p95_ms:.2f} | {f.jobs} | "
                f"{statistics.median(f.job_s) if f.job_s else float('nan'):.1f} | {len(f.cold_ms)} | "
                f"{percentile(f.cold_ms, 0.95):.1f} |"
            )
    pylsp = [r for r in results if r.server == "pylsp"]
    if pylsp:
        rows += [
            "",
            f"pylsp minus its fixed {PYLSP_DEBOUNCE_S * 1e3:.0f} ms lint debounce (the time it actually works):",
            "",
            "| server | lines | p50 ms | p95 ms | max ms |",
            "|---|---:|---:|---:|---:|",
        ]
        d = PYLSP_DEBOUNCE_S * 1e3
        for r in pylsp:
            if not r.latencies_ms:
                continue
            rows.append(f"| pylsp (work) | {r.lines:,} | {r.p50_ms - d:.1f} | {r.p95_ms - d:.1f} | {r.max_ms - d:.1f} |")
    return "\n".join(rows)


async def main_async(args: argparse.Namespace) -> list[Result]:
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="ts-lsp-bench-") as tmp:
        folder = Path(tmp) / "ws"
        folder.mkdir()
        log_dir = Path(args.logs) if args.logs else Path(tmp)
        log_dir.mkdir(parents=True, exist_ok=True)
        env = server_env(Path(tmp) / "pycache")
        files: list[tuple[int, Path | None]] = (
            [(len(f.read_text().split("\n")), f) for f in args.file] if args.file else [(n, None) for n in sizes])
        for server, (lines, source), where in ((s, f, w) for s in servers for f in files for w in args.sites.split(",")):
            shown = f"{source.name}, " if source is not None else ""
            print(f"# {server}: {shown}{lines} lines, {args.edits} edits in {where} code ...", file=sys.stderr, flush=True)
            started = time.perf_counter()
            verify = args.verify_in_flight if server == "tritonsmith" else None
            result = await run_one(
                server, lines, args.edits, folder, log_dir, args.timeout,
                pause_s=args.pause_ms / 1e3, verify_in_flight=verify, env=env, starts=args.starts, where=where,
                source=source,
            )
            print(
                f"#   p50 {result.p50_ms:.1f} ms, p95 {result.p95_ms:.1f} ms, cold start "
                f"{result.cold_start_median_ms:.0f} ms (median of {len(result.starts)}) ({time.perf_counter() - started:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
            if result.in_flight is not None:
                print(f"#   with {result.in_flight.file} verifying: p50 {result.in_flight.p50_ms:.1f} ms, "
                      f"p95 {result.in_flight.p95_ms:.1f} ms", file=sys.stderr, flush=True)
            results.append(result)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description="LSP edit-to-diagnostics latency and cold start")
    parser.add_argument("--sizes", default="200,2000,10000", help="file sizes in lines, comma-separated")
    parser.add_argument("--file", type=Path, action="append", default=[], metavar="PATH",
                        help="a real kernel file to open and edit, instead of generated ones (repeatable; "
                        "--sizes is then ignored)")
    parser.add_argument("--edits", type=int, default=200, help="one-character edits per file (even: insert, delete)")
    parser.add_argument("--servers", default="tritonsmith,pylsp")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for one answer")
    parser.add_argument("--json", metavar="OUT", help="also write the results (with every latency) as JSON")
    parser.add_argument("--logs", help="keep the servers' stderr logs in this folder")
    parser.add_argument("--starts", type=int, default=0, help="more cold starts to measure per server and size")
    parser.add_argument("--sites", default="kernel", help="where the edits go: kernel, host or kernel,host "
                        "(assignments in @triton.jit bodies, or in the other functions: the launchers)")
    parser.add_argument("--pause-ms", type=float, default=0.0, help="wait this long after each answer before the next edit")
    parser.add_argument(
        "--verify-in-flight", nargs="?", type=Path, const=DEFAULT_VERIFY_FILE, metavar="FILE",
        help="tritonsmith only: after the idle edits, keep save jobs (compile + verify) of a copy of FILE "
        f"running and edit again (default FILE: {DEFAULT_VERIFY_FILE.relative_to(REPO)})",
    )
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    table = render(results)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(table)
    print(f"\nmachine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, load average after the run {load[0]:.2f}" if load else "")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(
            {"results": [asdict(r) for r in results], "pylsp_debounce_s": PYLSP_DEBOUNCE_S,
             "loadavg": load, "cpus": os.cpu_count(), "python": platform.python_version()},
            indent=1,
        ))


if __name__ == "__main__":
    main()
