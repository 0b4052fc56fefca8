"""What `check`'s result cache costs to write and read, alone: N files' findings stored as one cold
run stores them (then pruned, as the run ends), and read back as a cached re-run reads them, in a
fresh folder each repeat; CPU time (user + sys) of this process, so the file system's part counts.

The files are generated and each has no findings, as most files of a corpus have. Run it from
outside the checkout to measure another tree (`PYTHONPATH=<tree>`, a `git worktree` of the commit, so that its commit is recorded).

Usage (`<checkout>`: this repository's folder)::

    cd /tmp && PYTHONPATH=<tree> <checkout>/.venv/bin/python <checkout>/bench/cache_store.py --json OUT
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_scaling import _commit  # noqa: E402


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=814)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args()

    import tritonsmith
    from tritonsmith.check_cache import CheckCache

    sources = [f"# file {index}\n".encode() * 40 for index in range(args.files)]
    rows: list[dict[str, float]] = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="cache-store-") as scratch:
            folder = Path(scratch) / ".tritonsmith" / "cache" / "check"
            began = _cpu()
            cache = CheckCache(folder, "a" * 32)
            for source in sources:
                cache.put(source, [])
            cache.prune(checked=len(sources))  # flushes first, where there is a flush
            written = _cpu() - began
            began = _cpu()
            again = CheckCache(folder, "a" * 32)
            hits = sum(again.get(source) is not None for source in sources)
            read = _cpu() - began
            assert hits == len(sources)
            rows.append({"write_s": written, "read_s": read})
    out: dict[str, Any] = {"tree": _commit(Path(tritonsmith.__file__).parent), "files": args.files, "rows": rows,
                           "write_s": statistics.median(r["write_s"] for r in rows),
                           "read_s": statistics.median(r["read_s"] for r in rows)}
    print(f"{args.files} files: write {out['write_s'] * 1000:.0f} ms, read {out['read_s'] * 1000:.0f} ms "
          f"(CPU, median of {args.repeat})")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
