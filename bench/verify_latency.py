"""Save-to-verdict time of tritonsmith's language server on the examples, cold and warm.

For each file of ``examples/`` that has a spec (``tritonsmith.evaluator.specs.detect_specs``: a
KernelBench problem or an in-file harness), in a fresh server whose workspace root is a
temporary folder holding a copy of the file (the server writes ``.tritonsmith/`` there):

1. ``didOpen`` the copy and wait for its static diagnostics;
2. send ``didSave`` ``1 + --saves`` times, each after the previous job has answered. A save
   starts the job of ``server/jobs.py`` after its ``SAVE_DEBOUNCE_S`` (0.3 s) debounce: compile
   every kernel for the targets, then (``verifyOnSave = "verify"``, the default) verify each spec
   against its reference, under Triton's interpreter where there is no GPU. When the job ends the
   server pushes ``publishDiagnostics`` for the file (compile and verify findings carry source
   ``tritonsmith-verify``) and asks for ``workspace/codeLens/refresh``; the verdict is then a code
   lens titled ``verified · ...`` or ``FAILED · ...``.

**Save-to-verdict** = writing ``didSave`` to reading that ``publishDiagnostics`` (debounce
included); the script then asks ``textDocument/codeLens`` and checks that a verdict lens is
there. The first save of a server is **cold** (worker processes start and import torch and
Triton, empty Triton cache); the later ones are **warm** (the same workers, Triton's cache
filled by the first save). The job's ``$/progress`` report "checking ... against its
reference" splits each time into the compile part (save to that report) and the rest.

Usage::

    .venv/bin/python bench/verify_latency.py --saves 5 --json /tmp/verify_latency.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lsp_latency import (  # noqa: E402
    CLIENT_CAPABILITIES,
    JOB_CAPABILITIES,
    REPO,
    VERIFY_SOURCE,
    Client,
    open_document,
    percentile,
    start_server,
)

from tritonsmith.evaluator.specs import detect_specs  # noqa: E402

VERDICT_PREFIXES = ("verified · ", "FAILED · ")


@dataclass
class Save:
    verdict_ms: float  # didSave written -> the job's publishDiagnostics read
    compile_ms: float  # didSave written -> the "checking ..." progress report (nan if none)
    verdicts: list[str]  # the verdict lenses' titles after the job
    verify_diagnostics: int  # diagnostics with source tritonsmith-verify in that publish


@dataclass
class FileResult:
    file: str
    specs: list[str]
    cold: Save | None = None
    warm: list[Save] = field(default_factory=list)

    def warm_ms(self) -> list[float]:
        return [s.verdict_ms for s in self.warm]


async def save_once(client: Client, uri: str, *, timeout: float) -> Save:
    mark, progress_mark = len(client.diagnostics), len(client.progress)
    t0 = await client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    got = await client.wait_job(uri, after=(mark, progress_mark), timeout=timeout)
    checking = [when for when, _, kind, text in client.progress[progress_mark:]
                if kind == "report" and text.startswith("checking ")]
    lenses = await asyncio.wait_for(client.request("textDocument/codeLens", {"textDocument": {"uri": uri}}), timeout)
    titles = [lens["command"]["title"] for lens in lenses or [] if lens.get("command")]
    return Save(
        verdict_ms=(got[0] - t0) * 1e3,
        compile_ms=(checking[0] - t0) * 1e3 if checking else float("nan"),
        verdicts=[t for t in titles if t.startswith(VERDICT_PREFIXES)],
        verify_diagnostics=got[4],
    )


async def run_file(source: Path, saves: int, log_dir: Path, timeout: float) -> FileResult:
    result = FileResult(file=source.name, specs=[spec.name for spec in detect_specs(source)])
    with tempfile.TemporaryDirectory(prefix="ts-verify-bench-") as tmp:
        folder = Path(tmp)
        path = folder / source.name
        shutil.copyfile(source, path)
        text = path.read_text(encoding="utf-8")
        with open(log_dir / f"{source.stem}.stderr.log", "wb") as stderr:
            client, _, _ = await start_server(
                [sys.executable, "-m", "tritonsmith", "serve"], folder, stderr=stderr,
                capabilities={**CLIENT_CAPABILITIES, **JOB_CAPABILITIES}, timeout=timeout,
            )
            try:
                await open_document(client, path.as_uri(), text, timeout=timeout)
                for n in range(1 + saves):
                    save = await save_once(client, path.as_uri(), timeout=timeout)
                    if not save.verdicts:
                        raise RuntimeError(f"{source.name}: no verdict lens after save {n + 1}; see {log_dir}")
                    if n == 0:
                        result.cold = save
                    else:
                        result.warm.append(save)
                    print(f"#   {source.name} save {n + 1}: {save.verdict_ms:.0f} ms, {save.verdicts[0][:60]}",
                          file=sys.stderr, flush=True)
                    await asyncio.sleep(0.2)
            finally:
                await client.close()
    return result


def render(results: list[FileResult]) -> str:
    rows = [
        "| file | spec | verdict | cold s | warm median s | warm p95 s | warm compile part s (median) |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in results:
        assert r.cold is not None
        warm = r.warm_ms()
        compile_part = [s.compile_ms for s in r.warm if s.compile_ms == s.compile_ms]
        verdict = (r.warm[-1] if r.warm else r.cold).verdicts[0].split(" · ")[0]
        rows.append(
            f"| {r.file} | {', '.join(r.specs)} | {verdict} | {r.cold.verdict_ms / 1e3:.2f} | "
            f"{statistics.median(warm) / 1e3:.2f} | {percentile(warm, 0.95) / 1e3:.2f} | "
            f"{statistics.median(compile_part) / 1e3 if compile_part else float('nan'):.2f} |"
        )
    return "\n".join(rows)


def example_files(names: str | None) -> list[Path]:
    chosen = {n.strip() for n in names.split(",")} if names else None
    return [
        path for path in sorted((REPO / "examples").glob("*.py"))
        if (chosen is None or path.name in chosen or path.stem in chosen) and detect_specs(path)
    ]


async def main_async(args: argparse.Namespace) -> list[FileResult]:
    results = []
    with tempfile.TemporaryDirectory(prefix="ts-verify-logs-") as tmp:
        log_dir = Path(args.logs) if args.logs else Path(tmp)
        log_dir.mkdir(parents=True, exist_ok=True)
        for source in example_files(args.files):
            print(f"# {source.name} ...", file=sys.stderr, flush=True)
            results.append(await run_file(source, args.saves, log_dir, args.timeout))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description="save-to-verdict time of the language server")
    parser.add_argument("--saves", type=int, default=5, help="warm saves per file, after the cold one")
    parser.add_argument("--files", help="only these examples (comma-separated names)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for one job")
    parser.add_argument("--json", metavar="OUT", help="also write every save's numbers as JSON")
    parser.add_argument("--logs", help="keep the servers' stderr logs in this folder")
    args = parser.parse_args()
    load_before = os.getloadavg()
    started = time.perf_counter()
    results = asyncio.run(main_async(args))
    load = os.getloadavg()
    print(render(results))
    try:
        from importlib.metadata import version

        versions = f"triton {version('triton')}, torch {version('torch')}"
    except Exception:
        versions = "triton/torch versions unknown"
    print(f"\nmachine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"{versions}; load average {load_before[0]:.2f} before, {load[0]:.2f} after "
          f"({time.perf_counter() - started:.0f} s); verdicts have source {VERIFY_SOURCE!r} diagnostics when they fail")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"results": [asdict(r) for r in results], "loadavg": [load_before, load], "cpus": os.cpu_count(),
             "python": platform.python_version(), "versions": versions}, indent=1))


if __name__ == "__main__":
    main()
