"""What a user waits for while a long check runs (issue 17, item 2).

Spawns ``tritonsmith serve`` (bytecode cached), opens a generated file of ``--lines`` lines and,
without waiting for its diagnostics: asks for a hover on the last kernel (timed from the write
to the answer), then edits that kernel (timed from the write to the diagnostics of the edit's
version), and counts the publishes of the opened version (a stale check that finished). Then
the same hover again with the file checked. ``--rounds`` fresh servers; medians and ranges.

    .venv/bin/python bench/busy_server.py --lines 20000 --rounds 3 --json docs/benchmarks/busy-N.json

Against another checkout: ``PYTHONPATH=<checkout> .venv/bin/python bench/busy_server.py ...``.
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
from lsp_latency import server_command, server_env, start_server  # noqa: E402


async def one_round(lines: int, timeout: float) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="tritonsmith-busy-"))
    text = generate(lines, seed=lines)
    path = folder / f"kernels_{lines}.py"
    path.write_text(text)
    uri = path.as_uri()
    row, col = editable_sites(text)[-1]  # inside the last kernel: checked last
    command, settings = server_command("tritonsmith")
    env = server_env(Path(tempfile.mkdtemp(prefix="tritonsmith-busy-pycache-")))
    client, _, _ = await start_server(command, folder, stderr=asyncio.subprocess.DEVNULL, settings=settings,
                                      timeout=timeout, env=env)
    hover = {"textDocument": {"uri": uri}, "position": {"line": row, "character": col}}
    try:
        t_open = await client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}})
        await asyncio.sleep(0.3)  # the server has read the file and is checking it
        sent = time.perf_counter()
        await asyncio.wait_for(client.request("textDocument/hover", hover), timeout)
        hover_busy = (time.perf_counter() - sent) * 1e3
        sent = await client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                             "contentChanges": [{"range": {
                                                                 "start": {"line": row, "character": col},
                                                                 "end": {"line": row, "character": col}},
                                                                 "text": "x"}]})
        got = await client.wait_diagnostics(uri, after=0, version=2, timeout=timeout)
        edit_busy = (got[0] - sent) * 1e3
        stale = sum(1 for entry in client.diagnostics if entry[1] == uri and entry[2] == 1)
        sent = time.perf_counter()
        await asyncio.wait_for(client.request("textDocument/hover", hover), timeout)
        hover_idle = (time.perf_counter() - sent) * 1e3
        return {"hover_during_first_check_ms": hover_busy, "edit_during_first_check_to_diagnostics_ms": edit_busy,
                "open_to_edit_diagnostics_ms": (got[0] - t_open) * 1e3, "stale_publishes": stale,
                "hover_when_checked_ms": hover_idle}
    finally:
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rounds = [asyncio.run(one_round(args.lines, args.timeout)) for _ in range(args.rounds)]
    summary = {key: {"median": statistics.median(r[key] for r in rounds), "min": min(r[key] for r in rounds),
                     "max": max(r[key] for r in rounds)} for key in rounds[0]}
    for key, value in summary.items():
        print(f"{key:45s} median {value['median']:9.1f}  range {value['min']:.1f}-{value['max']:.1f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"lines": args.lines, "rounds": rounds, "summary": summary,
                                         "python": sys.version.split()[0]}, indent=2) + "\n")


if __name__ == "__main__":
    main()
