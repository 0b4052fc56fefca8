"""The adapt commands' defaults, apart from the code that uses them: the command line's parser
shows them in `--help` on every run, without importing induction or the adapt stage."""

from __future__ import annotations

__all__ = ["COMPARE_MODES", "DEFAULT_STEPS", "MIN_FAILURES", "MIN_KERNELS"]

MIN_FAILURES = 3  # failures (distinct kernel texts) before a cluster becomes a rule
MIN_KERNELS = 2  # distinct kernels before a rule becomes active
DEFAULT_STEPS = 10  # candidates per task in `adapt run`
COMPARE_MODES = ("halves", "baseline")  # `adapt run --compare`
