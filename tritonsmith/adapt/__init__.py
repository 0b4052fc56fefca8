"""Learning from failures: the failure log (and, later, rule induction and experience memory)."""

from __future__ import annotations

from .failure_log import FailureLog, state_dir

__all__ = ["FailureLog", "state_dir"]
