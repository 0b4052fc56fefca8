"""The workspace's state: `.tritonsmith/state.db` and the learned-rule pack beside it.

One home for what tritonsmith remembers about a workspace, below the evaluator and the search
(which report into it through their callers) and the adaptation package (which reads it):

    db            the folder (with its .gitignore), the connection, versioned migrations
    failure_log   every compile and verification failure, with its file and error position
    signature     error messages normalised, so the same mistake clusters across kernels
    record        failure-log rows from the evaluator's reports and verdicts
    contradictions  a learned rule that flagged a file which compiled is demoted, then retracted
    journal       the search journal's tables: searches, evaluated nodes, confirmations
    experience    verified solutions per task and the demonstrations drawn from them
    learned       the learned-rule pack (`.tritonsmith/rules.toml`): statements, matchers and
                  their provenance (failures, kernels, examples, contradictions)

Imports flow one way: this package uses only `analysis`, `rules` and the top-level helpers.
"""

from __future__ import annotations

from .db import state_dir
from .experience import ExperienceMemory, ExperienceTask, experience_task
from .failure_log import FailureLog, kernel_hash
from .learned import active_learned, learned_path, load_learned, update_learned
from .record import record_checked, record_compile, record_verdict
from .signature import normalise

__all__ = [
    "ExperienceMemory",
    "ExperienceTask",
    "FailureLog",
    "active_learned",
    "experience_task",
    "kernel_hash",
    "learned_path",
    "load_learned",
    "normalise",
    "record_checked",
    "record_compile",
    "record_verdict",
    "state_dir",
    "update_learned",
]
