"""Memory of the language server over a long editing session (issue 17: RSS flat within 5 MB
after the first 1,000 edits).

Spawns ``tritonsmith serve`` (bytecode cached, as ``lsp_latency.py`` does), opens a generated
file of ``--lines`` lines and sends ``--edits`` one-character edits inside kernel bodies, or
with ``--sites host`` inside host functions (insert, then delete, at sites spread over the file), waiting for each edit's diagnostics. Every
``--every`` edits it reads the server's resident size (VmRSS) from /proc. The report: RSS after
the first 1,000 edits, at the end, and the largest minus the smallest after 1,000.

    .venv/bin/python bench/soak.py --edits 10000 --json docs/benchmarks/soak-N.json
    .venv/bin/python bench/soak.py --lines 5000 --sites host --edits 10000 --json docs/benchmarks/soak-host-N.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import editable_sites, generate  # noqa: E402
from lsp_latency import open_document, server_command, server_env, start_server  # noqa: E402


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """A resident size of `pid` from /proc: VmRSS (all), RssAnon (its heap) or RssFile (mapped
    files: code and data of the interpreter and the libraries, touched as they are used)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def soak(lines: int, edits: int, every: int, timeout: float, where: str = "kernel") -> dict:
    folder = Path(tempfile.mkdtemp(prefix="tritonsmith-soak-"))
    text = generate(lines, seed=lines)
    path = folder / f"kernels_{lines}.py"
    path.write_text(text)
    uri = path.as_uri()
    sites = editable_sites(text, where)
    pycache = Path(tempfile.mkdtemp(prefix="tritonsmith-soak-pycache-"))
    command, settings = server_command("tritonsmith")
    env = server_env(pycache)
    client, _, _ = await start_server(command, folder, stderr=asyncio.subprocess.DEVNULL, settings=settings,
                                      timeout=timeout, env=env)
    pid = client.proc.pid
    samples: list[tuple[int, float]] = []
    anon: list[tuple[int, float]] = []  # RssAnon at the same points
    started = time.perf_counter()
    try:
        await open_document(client, uri, text, timeout=timeout)
        samples.append((0, rss_mb(pid)))
        anon.append((0, rss_mb(pid, "RssAnon")))
        version = 1
        for n in range(edits):
            row, col = sites[(n // 2 * 7919) % len(sites)]
            version += 1
            end = col if n % 2 == 0 else col + 1
            change = {"range": {"start": {"line": row, "character": col}, "end": {"line": row, "character": end}},
                      "text": "x" if n % 2 == 0 else ""}
            mark = len(client.diagnostics)
            await client.notify("textDocument/didChange",
                                {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]})
            await client.wait_diagnostics(uri, after=mark, version=version, timeout=timeout)
            if (n + 1) % every == 0:
                samples.append((n + 1, rss_mb(pid)))
                anon.append((n + 1, rss_mb(pid, "RssAnon")))
    finally:
        await client.close()
    after = [mb for n, mb in samples if n >= 1000]
    return {
        "lines": lines, "sites": where, "edits": edits, "seconds": round(time.perf_counter() - started, 1),
        "rss_mb": [[n, round(mb, 2)] for n, mb in samples],
        "rss_at_1000_mb": round(next((mb for n, mb in samples if n >= 1000), float("nan")), 2),
        "rss_end_mb": round(samples[-1][1], 2),
        "spread_after_1000_mb": round(max(after) - min(after), 2) if after else None,
        "rss_anon_mb": [[n, round(mb, 2)] for n, mb in anon],
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--edits", type=int, default=10000)
    parser.add_argument("--every", type=int, default=250)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--sites", choices=("kernel", "host"), default="kernel",
                        help="edit inside kernels' bodies or inside host functions (launchers)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = asyncio.run(soak(args.lines, args.edits, args.every, args.timeout, args.sites))
    print(f"{result['edits']} edits ({result['sites']}) on {result['lines']} lines in {result['seconds']} s: RSS "
          f"{result['rss_at_1000_mb']} MB after 1,000 edits, {result['rss_end_mb']} MB at the end, "
          f"spread after 1,000: {result['spread_after_1000_mb']} MB")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
