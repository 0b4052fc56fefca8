"""Work over a list split between forked processes: how one large file's kernels are checked
on every core.

A parsed tree cannot be pickled, and parsing and indexing again in each process would cost what
it saves, so the children are forked after the parent has built everything: each inherits the
tree, the index and the loaded rules, works on its slice and sends back only its results. The
parent does the first slice itself. A child that fails, dies or sends nothing has its slice done
again in the parent, so a result never goes missing; the parent never leaves a child behind.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["fork_available", "map_forked"]

T = TypeVar("T")
R = TypeVar("R")

log = logging.getLogger(__name__)


def fork_available() -> bool:
    return hasattr(os, "fork") and hasattr(os, "waitpid")


def map_forked(items: Sequence[T], jobs: int, work: Callable[[list[T]], R]) -> list[R]:
    """`work` over `jobs` interleaved slices of `items` (`items[i::jobs]`: neighbours differ
    the least in cost, so the slices come out even), slice 0 here and the others in forked
    children; the results in slice order."""
    slices = [list(items[i::jobs]) for i in range(jobs)]
    if jobs <= 1 or not fork_available():
        return [work(part) for part in slices]
    children: list[tuple[int, int]] = []  # (pid, read end of its pipe)
    try:
        for part in slices[1:]:
            children.append(_fork(part, work))
        results = [work(slices[0])]
        for (pid, read), part in zip(children, slices[1:]):
            results.append(_collect(pid, read, part, work))
        children.clear()
        return results
    finally:
        for pid, read in children:  # only when the parent itself failed or was interrupted
            with contextlib.suppress(OSError):
                os.close(read)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def _fork(part: list[T], work: Callable[[list[T]], R]) -> tuple[int, int]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the parent's exit handlers
        status = 1
        try:
            os.close(read)
            data = pickle.dumps(work(part), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write, "wb") as out:
                out.write(data)
            status = 0
        except BaseException:  # noqa: BLE001 - the parent redoes the slice
            with contextlib.suppress(Exception):
                log.exception("a forked worker failed; its share is checked again in the parent")
        finally:
            os._exit(status)
    os.close(write)
    return pid, read


def _collect(pid: int, read: int, part: list[T], work: Callable[[list[T]], R]) -> R:
    with os.fdopen(read, "rb") as source:
        data = source.read()  # read to the end before waiting: a full pipe would block the child
    _, status = os.waitpid(pid, 0)
    if status == 0 and data:
        try:
            return pickle.loads(data)  # noqa: S301 - our own child's data, through our own pipe
        except Exception:  # noqa: BLE001
            log.exception("a forked worker's result could not be read")
    return work(part)
