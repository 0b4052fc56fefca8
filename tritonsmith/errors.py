"""Errors a user can meet, each with a message that says what happened and what to do.

    TritonsmithError            root; carries `user_message`
    ├── RulePackError           a rule pack could not be read (names the file and line)
    ├── ConfigError             a setting or `[tool.tritonsmith]` value is invalid
    ├── EvaluatorError          an evaluator worker could not finish a job
    │   ├── WorkerCrashed       the worker died (signal, exit, output flood)
    │   ├── WorkerTimeout       the job ran past its wall-clock limit
    │   └── WorkerOutOfMemory   the worker's resident memory passed the job's limit
    └── UsageError              a command line that cannot be run as given

The server shows `user_message`; logs get the traceback.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "EvaluatorError",
    "RulePackError",
    "TritonsmithError",
    "UsageError",
    "WorkerCrashed",
    "WorkerOutOfMemory",
    "WorkerTimeout",
]


class TritonsmithError(Exception):
    """Base of every error tritonsmith reports to a user."""

    @property
    def user_message(self) -> str:
        return str(self)


class RulePackError(TritonsmithError):
    """A rule pack file is malformed; the other packs still load."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        self.path = path
        self.line = line
        self.problem = problem
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {problem}")


class ConfigError(TritonsmithError):
    """A setting has a value tritonsmith cannot use."""


class UsageError(TritonsmithError):
    """The command line asks for something that cannot be done as given."""


class EvaluatorError(TritonsmithError):
    """An evaluator worker could not finish a job; the editor and the pool carry on."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)


class WorkerCrashed(EvaluatorError):
    """The worker process died mid-job (a signal, an exit, or a flood of output)."""

    @property
    def user_message(self) -> str:
        return (
            f"The evaluator worker died: {self.detail}. The kernel or its harness likely "
            "accessed memory out of bounds, exited, or printed without limit; fix it and save "
            "again (the worker has been replaced)."
        )


class WorkerTimeout(EvaluatorError):
    """The job ran past its wall-clock limit and its worker was killed."""

    @property
    def user_message(self) -> str:
        return (
            f"The evaluator job timed out: {self.detail}. Look for an endless loop, or shrink "
            "the problem size (the interpreter is slow); the timeout is a setting."
        )


class WorkerOutOfMemory(EvaluatorError):
    """The worker's resident memory passed the job's limit and the worker was killed."""

    @property
    def user_message(self) -> str:
        return (
            f"The evaluator job ran out of memory: {self.detail}. Use smaller inputs, or "
            "raise the memory limit setting."
        )
