"""Process-wide tuning for tritonsmith's own entry points (the command line and the server).

Checking allocates many small, short-lived objects (tree-sitter nodes, findings) and almost no
reference cycles, so CPython's default cyclic-GC thresholds make the collector run constantly:
about 15% of a cold check. Entry points freeze what is loaded at start-up (the rule packs, the
imported modules: never garbage) and raise the first generation's threshold. Memory stays
bounded, since the collector still runs, just less often. Library users calling tritonsmith
from their own process are left alone.
"""

from __future__ import annotations

import gc

__all__ = ["tune_gc"]


def tune_gc() -> None:
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
