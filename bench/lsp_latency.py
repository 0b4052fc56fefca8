"""Edit-to-diagnostics latency and cold start of tritonsmith's language server, with pylsp +
pyflakes as the reference, measured by a minimal LSP client over stdio.

For each server and file size:

1. spawn the server, ``initialize`` (client capabilities without ``textDocument.diagnostic``,
   so both servers push ``publishDiagnostics``), ``initialized``, ``didChangeConfiguration``,
   ``didOpen`` a generated file; **cold start** = process spawn to the first
   ``publishDiagnostics`` for that URI (also split into spawn->initialize response and
   didOpen->diagnostics);
2. send ``--edits`` one-character ``didChange`` edits (incremental sync): edit 2k inserts ``x``
   into an assignment target inside a ``@triton.jit`` body (sites spread over the whole file),
   edit 2k+1 deletes it again. Each edit carries a new version; the **latency** is the time from
   writing the notification to reading a ``publishDiagnostics`` for the URI with that version
   (or, for a server that omits versions, the next one). The client waits for each before
   sending the next edit, so the numbers are per-edit, not coalesced.

pylsp lints through ``@debounce(LINT_DEBOUNCE_S=0.5, keyed_by="doc_uri")`` (pylsp/python_lsp.py),
a hard-coded 500 ms timer that no setting changes; its latencies therefore include 500 ms of
idle waiting. The table also shows pylsp's latency minus that 500 ms ("work").

Usage::

    .venv/bin/python bench/lsp_latency.py --sizes 200,2000,10000 --edits 200 \\
        --servers tritonsmith,pylsp --json bench/results/lsp_latency.json
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
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import editable_sites, generate  # noqa: E402

PYLSP_DEBOUNCE_S = 0.5

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


def server_command(name: str) -> tuple[list[str], dict | None]:
    """The command line and the settings (sent as initializationOptions and
    didChangeConfiguration) of a server."""
    if name == "tritonsmith":
        return [sys.executable, "-m", "tritonsmith", "serve"], None
    if name == "pylsp":
        return [sys.executable, "-m", "pylsp"], PYLSP_SETTINGS
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
        self.diagnostics: list[tuple[float, str, int | None, int]] = []  # (time, uri, version, count)
        self._diag_event = asyncio.Event()
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
                result: object = None
                if method == "workspace/configuration":
                    result = [None for _ in message.get("params", {}).get("items", [])]
                self._write({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif method == "textDocument/publishDiagnostics":
                params = message["params"]
                self.diagnostics.append((now, params["uri"], params.get("version"), len(params["diagnostics"])))
                self._diag_event.set()
            return
        future = self._pending.pop(message.get("id"), None)
        if future is not None and not future.done():
            if "error" in message:
                future.set_exception(RuntimeError(f"LSP error: {message['error']}"))
            else:
                future.set_result(message.get("result"))

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
            self._diag_event.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._diag_event.wait(), remaining)

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
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    max_ms: float = 0.0
    mean_ms: float = 0.0
    versions_sent_back: bool = True
    latencies_ms: list[float] = field(default_factory=list)


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


async def run_one(server: str, lines: int, edits: int, folder: Path, log_dir: Path, timeout: float) -> Result:
    path = folder / f"kernels_{lines}.py"
    text = generate(lines, seed=lines)
    path.write_text(text)
    uri = path.as_uri()
    sites = editable_sites(text)
    rng = random.Random(lines)
    pairs = (edits + 1) // 2
    # Sites spread evenly over the file, visited in a shuffled order.
    chosen = [sites[(k * len(sites)) // pairs] for k in range(pairs)] if len(sites) >= pairs else [
        sites[k % len(sites)] for k in range(pairs)
    ]
    rng.shuffle(chosen)

    command, settings = server_command(server)
    stderr = open(log_dir / f"{server}_{lines}.stderr.log", "wb")  # noqa: SIM115 (closed in finally)
    t_spawn = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        cwd=str(folder),
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
                    "capabilities": CLIENT_CAPABILITIES,
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
        mark = len(client.diagnostics)
        t_open = await client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        )
        first = await client.wait_diagnostics(uri, after=mark, version=None, timeout=timeout)
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
        )
        # Let any trailing publish of the open (e.g. pylsp's lint after didChangeConfiguration)
        # arrive before the edits start, so it cannot be mistaken for an edit's answer.
        await asyncio.sleep(PYLSP_DEBOUNCE_S + 0.3 if server == "pylsp" else 0.2)

        version = 1
        versions_seen = False
        for n in range(edits):
            row, col = chosen[n // 2]
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
            result.latencies_ms.append((got[0] - t0) * 1e3)
        result.versions_sent_back = versions_seen
        lat = result.latencies_ms
        if lat:
            result.p50_ms = percentile(lat, 0.50)
            result.p95_ms = percentile(lat, 0.95)
            result.max_ms = max(lat)
            result.mean_ms = statistics.fmean(lat)
        return result
    finally:
        await client.close()
        stderr.close()


def _ms(value: float, result: Result) -> str:
    return f"{value:.1f}" if result.latencies_ms else "-"


def render(results: list[Result]) -> str:
    rows = [
        "| server | lines | edits | p50 ms | p95 ms | max ms | mean ms | cold start ms | cold start CPU ms | spawn→init ms | didOpen→diag ms | diags |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rows.append(
            f"| {r.server} | {r.lines:,} | {len(r.latencies_ms)} | {_ms(r.p50_ms, r)} | {_ms(r.p95_ms, r)} | "
            f"{_ms(r.max_ms, r)} | {_ms(r.mean_ms, r)} | {r.cold_start_ms:.0f} | {r.cold_start_cpu_ms:.0f} | {r.spawn_to_initialize_ms:.0f} | {r.open_to_diagnostics_ms:.0f} | "
            f"{r.first_diagnostics} |"
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
        for server in servers:
            for lines in sizes:
                print(f"# {server}: {lines} lines, {args.edits} edits ...", file=sys.stderr, flush=True)
                started = time.perf_counter()
                result = await run_one(server, lines, args.edits, folder, log_dir, args.timeout)
                print(
                    f"#   p50 {result.p50_ms:.1f} ms, p95 {result.p95_ms:.1f} ms, cold start "
                    f"{result.cold_start_ms:.0f} ms ({time.perf_counter() - started:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
                results.append(result)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description="LSP edit-to-diagnostics latency and cold start")
    parser.add_argument("--sizes", default="200,2000,10000", help="file sizes in lines, comma-separated")
    parser.add_argument("--edits", type=int, default=200, help="one-character edits per file (even: insert, delete)")
    parser.add_argument("--servers", default="tritonsmith,pylsp")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for one answer")
    parser.add_argument("--json", metavar="OUT", help="also write the results (with every latency) as JSON")
    parser.add_argument("--logs", help="keep the servers' stderr logs in this folder")
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
