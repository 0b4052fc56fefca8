"""Learning from failures: the failure log, normalised signatures, offline rule induction and the
workspace's learned pack, and the experience memory (verified kernels per task, demonstrations)."""

from __future__ import annotations

from .experience import ExperienceMemory, ExperienceTask, canonical, experience_task
from .failure_log import FailureLog, kernel_hash
from .induce import Learned, Thresholds, generality_filter, induce
from .learned import learned_path, load_learned, update_learned
from .signature import normalise
from .statedb import state_dir

__all__ = [
    "ExperienceMemory",
    "ExperienceTask",
    "FailureLog",
    "Learned",
    "Thresholds",
    "canonical",
    "experience_task",
    "generality_filter",
    "induce",
    "kernel_hash",
    "learned_path",
    "load_learned",
    "normalise",
    "state_dir",
    "update_learned",
]
