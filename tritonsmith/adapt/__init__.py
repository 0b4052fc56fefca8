"""Learning from failures: the failure log, normalised signatures, offline rule induction and the
workspace's learned pack (and, later, experience memory)."""

from __future__ import annotations

from .failure_log import FailureLog, kernel_hash, state_dir
from .induce import Learned, Thresholds, generality_filter, induce
from .learned import learned_path, load_learned, update_learned
from .signature import normalise

__all__ = [
    "FailureLog",
    "Learned",
    "Thresholds",
    "generality_filter",
    "induce",
    "kernel_hash",
    "learned_path",
    "load_learned",
    "normalise",
    "state_dir",
    "update_learned",
]
