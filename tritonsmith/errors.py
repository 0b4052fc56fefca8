"""Errors a user can meet, each with a message that says what happened and what to do.

    TritonsmithError            root; carries `user_message`
    ├── RulePackError           a rule pack could not be read (names the file and line)
    ├── ConfigError             a setting or `[tool.tritonsmith]` value is invalid
    └── UsageError              a command line that cannot be run as given

The server shows `user_message`; logs get the traceback.
"""

from __future__ import annotations

__all__ = ["ConfigError", "RulePackError", "TritonsmithError", "UsageError"]


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
