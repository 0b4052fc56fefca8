#!/usr/bin/env python3
"""Where an edit's time goes in the language server, in process (no LSP transport).

On one generated 2,000-line file (`corpus.py`), measures:

* the incremental re-parse after inserting one character right after a line's indentation
  (where the LSP latency benchmark edits) and in the middle of an expression, by line;
* the time to check one kernel with warm launch types (each of the file's kernels, re-checked);
* importing the server in a child process with bytecode cached (wall time of five runs, then
  `python -X importtime -c "import tritonsmith.server"` for the largest imports by cumulative
  time).

    .venv/bin/python bench/edit_costs.py --json docs/benchmarks/edit-costs-N.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


def parse_costs(source: bytes) -> list[dict[str, float | int | bool]]:
    """Re-parse time of a one-character insert right after the indentation and mid-expression,
    on assignment lines spread over the file: some the first line of an indented block (after a
    line ending in `:`), where tree-sitter-python's indentation scanner makes the re-parse run
    to the end of the file, and some not."""
    from tritonsmith.analysis.document import Document

    document = Document(source)
    candidates = [r for r in range(1, document.line_count)
                  if document.line(r).startswith(b"    ") and b" = " in document.line(r)]
    first = [r for r in candidates if document.line(r - 1).rstrip().endswith(b":")]
    later = [r for r in candidates if r not in set(first)]
    rows = sorted(first[:: max(1, len(first) // 6)][:6] + later[:: max(1, len(later) // 6)][:6])
    out = []
    for row in rows:
        line = document.line(row)
        start = len(line) - len(line.lstrip())
        middle = line.index(b" = ") + 3
        timings = {}
        for where, column in (("after_indent", start), ("mid_expression", middle)):
            began = time.perf_counter()
            document.edit((row, column), (row, column), "x")
            document.tree  # noqa: B018 (edits are parsed when the tree is next read)
            timings[where] = round((time.perf_counter() - began) * 1000, 2)
            document.edit((row, column), (row, column + 1), "")
            document.tree  # noqa: B018
        out.append({"row": row, "first_in_block": row in first, **timings})
    return out


def kernel_check_ms(source: bytes) -> dict[str, float | int]:
    from tritonsmith.analysis.document import Document
    from tritonsmith.analysis.index import index_module
    from tritonsmith.settings import Settings
    from tritonsmith.workspace import Workspace

    matcher = Workspace(None, Settings()).matcher
    document = Document(source)
    index = index_module(document.root)
    matcher.check_module(document.source, index)  # warms the launch types
    began = time.process_time()
    for kernel in index.kernels:
        matcher._check_kernel(kernel, index, document.source)
    seconds = time.process_time() - began
    return {"kernels": len(index.kernels), "ms_per_kernel_cpu": round(seconds / len(index.kernels) * 1000, 2)}


def import_times(pycache: str, runs: int = 5) -> dict[str, object]:
    """Importing the server in a child, with bytecode cached in `pycache` as an installed
    package has it (`PYTHONDONTWRITEBYTECODE` would make every run compile tritonsmith's
    sources) and after one untimed run, which also writes the attrs method cache
    (`server/lsp_types.py`). The wall time of `runs` imports, and the last one's breakdown."""
    env = dict(os.environ, PYTHONPYCACHEPREFIX=pycache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [sys.executable, "-c", "import tritonsmith.server"]
    subprocess.run(command, env=env, check=True)
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, env=env, check=True)
        walls.append(round((time.perf_counter() - started) * 1e3, 1))
    done = subprocess.run([sys.executable, "-X", "importtime", *command[1:]],
                          capture_output=True, text=True, check=True, env=env)
    rows = []
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[0].strip().isdigit():
            rows.append((parts[2].strip(), int(parts[0]), int(parts[1])))
    top = sorted(rows, key=lambda r: -r[2])[:15]
    by_name = {name: (own, total) for name, own, total in rows}
    return {"process_wall_ms": walls,  # interpreter start + import, each run
            "total_ms": round(by_name.get("tritonsmith.server", (0, 0))[1] / 1000, 1),
            "lsprotocol.types_ms": round(by_name.get("lsprotocol.types", (0, 0))[1] / 1000, 1),
            "largest_cumulative_ms": [{"module": n, "self_ms": round(o / 1000, 1), "cumulative_ms": round(t / 1000, 1)}
                                      for n, o, t in top]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    from corpus import write_corpus

    with tempfile.TemporaryDirectory() as folder:
        [path] = write_corpus(Path(folder), 1, args.lines)
        source = path.read_bytes()
        imports = import_times(str(Path(folder) / "pycache"))
    result = {"command": "python bench/edit_costs.py " + " ".join(sys.argv[1:]), "python": platform.python_version(),
              "lines": args.lines, "parse_after_edit_ms": parse_costs(source), "kernel_check": kernel_check_ms(source),
              "server_import": imports}
    for row in result["parse_after_edit_ms"]:
        print(f"line {row['row'] + 1:5}{' (first in block)' if row['first_in_block'] else '                 '}: re-parse "
              f"{row['after_indent']:6.2f} ms after the indentation, {row['mid_expression']:5.2f} ms mid-expression")
    print(f"check one kernel: {result['kernel_check']['ms_per_kernel_cpu']} ms CPU "
          f"({result['kernel_check']['kernels']} kernels)")
    print(f"start Python and import the server: {imports['process_wall_ms']} ms; import alone "
          f"{result['server_import']['total_ms']} ms, "
          f"lsprotocol.types {result['server_import']['lsprotocol.types_ms']} ms")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
