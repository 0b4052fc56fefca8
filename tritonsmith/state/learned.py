"""The learned pack: `.tritonsmith/rules.toml`, the workspace's rules, committed and reviewed.

Learned rules (`TSL` codes) live here beside any rule a team wrote by hand (an override of a
builtin rule's severity, say); induction and review change only the TSL rules and keep every other
rule as it was. Each change is a read-merge-write under an exclusive file lock
(`.tritonsmith/rules.toml.lock`), and the write is atomic (temp file + rename), so two processes
learning at once lose no rule and no count, and a reader (the server's watcher) never sees half a
file. A malformed pack is never overwritten: the change fails with the pack's own error, naming
its file and line, and the person who broke it fixes it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ..errors import RulePackError
from ..rules import Rule, load_pack
from ..rules.pack import write_pack_atomic
from .db import state_dir

__all__ = ["HEADER", "LEARNED_PACK", "active_learned", "learned_path", "load_learned", "pack_lock", "update_learned"]

log = logging.getLogger(__name__)

LEARNED_PACK = "rules.toml"
HEADER = (
    "The workspace's rule pack. Rules with TSL codes were learned from failures by tritonsmith\n"
    "(`tritonsmith adapt induce`); review them with `tritonsmith rules review`. Commit this file."
)


def learned_path(root: Path) -> Path:
    return root / ".tritonsmith" / LEARNED_PACK


def load_learned(root: Path) -> list[Rule]:
    """Every rule of the workspace pack, whatever its status; [] when there is none.
    Raises RulePackError when the pack is malformed."""
    path = learned_path(root)
    return load_pack(path) if path.exists() else []


def active_learned(root: Path) -> list[Rule]:
    """The active learned rules with error signatures, for matching compile errors. A malformed
    pack gives none here (logged); the server reports the pack's error itself."""
    try:
        rules = load_learned(root)
    except RulePackError as error:
        log.warning("learned rules not used: %s", error.user_message)
        return []
    return [r for r in rules if r.code.startswith("TSL") and r.active and r.signatures]


def _lock(handle: IO[str]) -> None:
    if sys.platform == "win32":  # pragma: no cover
        import msvcrt

        msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
    else:
        import fcntl

        fcntl.flock(handle, fcntl.LOCK_EX)


def _unlock(handle: IO[str]) -> None:
    if sys.platform == "win32":  # pragma: no cover
        import msvcrt

        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
    else:
        import fcntl

        fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def pack_lock(root: Path) -> Iterator[None]:
    """Hold the workspace pack's lock (across processes) for a read-merge-write."""
    path = state_dir(root) / f"{LEARNED_PACK}.lock"
    with open(path, "a+", encoding="utf-8") as handle:  # noqa: PTH123
        _lock(handle)
        try:
            yield
        finally:
            _unlock(handle)


def update_learned(root: Path, change: Callable[[list[Rule]], list[Rule]]) -> list[Rule]:
    """Apply `change` to the workspace pack's rules under its lock and write the result.

    Call this only with the lock not already held by this process. Returns the rules written.
    Raises RulePackError (and writes nothing) when the pack on disk is malformed.
    """
    with pack_lock(root):
        return _update_locked(root, change)


def _update_locked(root: Path, change: Callable[[list[Rule]], list[Rule]]) -> list[Rule]:
    rules = change(load_learned(root))
    path = learned_path(root)
    write_pack_atomic(path, rules, header=HEADER)
    return rules
