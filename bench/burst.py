"""Edits that arrive together are checked once (issue 17, item 2).

Spawns ``tritonsmith serve`` (bytecode cached), opens a generated file of ``--lines`` lines and
waits for its diagnostics; then, ``--rounds`` times each, alternating: one edit, timed from the
write to its diagnostics; and ``--burst`` edits written at once (one keystroke each, as a fast
typist's editor sends them), timed from the write to the diagnostics of the last one. Reports
the medians and how many publishes the burst caused.

    .venv/bin/python bench/burst.py --lines 22000 --burst 20 --json docs/benchmarks/burst-N.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import editable_sites, generate  # noqa: E402
from lsp_latency import open_document, server_command, server_env, start_server  # noqa: E402


async def measure(lines: int, burst: int, rounds: int, timeout: float) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="tritonsmith-burst-"))
    text = generate(lines, seed=lines)
    path = folder / f"kernels_{lines}.py"
    path.write_text(text)
    uri = path.as_uri()
    sites = editable_sites(text)
    command, settings = server_command("tritonsmith")
    env = server_env(Path(tempfile.mkdtemp(prefix="tritonsmith-burst-pycache-")))
    client, _, _ = await start_server(command, folder, stderr=asyncio.subprocess.DEVNULL, settings=settings,
                                      timeout=timeout, env=env)
    version, singles, bursts, publishes = 1, [], [], []
    try:
        t0 = time.perf_counter()
        await open_document(client, uri, text, timeout=timeout)
        opened = time.perf_counter() - t0
        row, col = sites[len(sites) // 2]
        for _ in range(rounds):
            version += 1
            mark = len(client.diagnostics)
            sent = await client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                                  "contentChanges": [_change(row, col, 0)]})
            got = await client.wait_diagnostics(uri, after=mark, version=version, timeout=timeout)
            singles.append((got[0] - sent) * 1e3)
            mark = len(client.diagnostics)
            sent = time.perf_counter()
            for k in range(burst):
                version += 1
                client._write({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                    "textDocument": {"uri": uri, "version": version}, "contentChanges": [_change(row, col, k + 1)]}})
            await client.proc.stdin.drain()
            got = await client.wait_diagnostics(uri, after=mark, version=version, timeout=timeout)
            bursts.append((got[0] - sent) * 1e3)
            publishes.append(sum(1 for d in client.diagnostics[mark:] if d[1] == uri))
            version += 1  # back to the text as it was: delete what the burst typed
            await client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                           "contentChanges": [{"range": {
                                                               "start": {"line": row, "character": col},
                                                               "end": {"line": row, "character": col + burst + 1}},
                                                               "text": ""}]})
            await client.wait_diagnostics(uri, after=len(client.diagnostics) - 1, version=version, timeout=timeout)
    finally:
        await client.close()
    return {"lines": lines, "burst": burst, "rounds": rounds, "open_s": round(opened, 2),
            "single_ms": [round(x, 1) for x in singles], "burst_ms": [round(x, 1) for x in bursts],
            "publishes_per_burst": publishes,
            "single_median_ms": round(statistics.median(singles), 1), "burst_median_ms": round(statistics.median(bursts), 1)}


def _change(row: int, col: int, k: int) -> dict:
    at = col + k
    return {"range": {"start": {"line": row, "character": at}, "end": {"line": row, "character": at}}, "text": "x"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=22000)
    parser.add_argument("--burst", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = asyncio.run(measure(args.lines, args.burst, args.rounds, args.timeout))
    print(f"{args.lines} lines: open {result['open_s']} s; one edit {result['single_median_ms']} ms, "
          f"{args.burst} edits in one write {result['burst_median_ms']} ms (medians of {args.rounds}); "
          f"publishes per burst {result['publishes_per_burst']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
