"""The experience memory: verified kernels per task, deduplicated, and the demonstrations a
search's prompts get from them (arXiv 2502.02534's adaptive self-improvement, for Triton).

- A **task** is what a kernel is checked against, not where it lives: the spec's kind plus the
  hash of the reference's canonical form (a harness's `<launcher>_inputs`/`_reference`/
  `_tolerances`, KernelBench's `Model`/`get_inputs`/`get_init_inputs`; the original kernel for
  an oracle spec). Moving or renaming the file keeps the task; changing the reference makes a
  new one. Each task counts its attempts and successes; its difficulty is `1 - successes /
  attempts`.
- A **solution** is the text a verified candidate adds to the task: its Triton kernels and its
  entry point (the launcher or `ModelNew`) with the helpers and constants they use, cut out of
  the file (no imports, no harness). Solutions that are the same up to renaming (`canonical`:
  the syntax tree with local names numbered by first occurrence, comments and docstrings
  dropped, API and attribute names kept) are one class, represented by its shortest text.
- **Demonstrations** are one representative per solved task (its shortest), hardest tasks
  first, then the rest alternately from the hard and the easy end (the paper's hard-only then
  mixed sets), within a token budget (tokens approximated as characters / 4).

The tables live in `.tritonsmith/state.db` beside the failure log and the search journal
(`experience_tasks`, `experience_solutions`), with their own schema version
(`meta.experience_schema_version`), migrated forward inside a write transaction; WAL and a
busy timeout let several processes record at once without losing a count.

Nothing here imports torch or triton.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tree_sitter import Node

from ..analysis import Document
from ..analysis.canonical import canonical_hash, top_level
from ..analysis.syntax import text
from .db import connect, migrate, write

__all__ = [
    "SCHEMA_VERSION",
    "ExperienceMemory",
    "ExperienceTask",
    "Solution",
    "TaskInfo",
    "cut_solution",
    "experience_task",
]

SCHEMA_VERSION = 1
_VERSION_KEY = "experience_schema_version"  # the failure log owns `schema_version`, the journal `search_schema_version`

_MIGRATIONS = {
    1: [
        """CREATE TABLE experience_tasks (
               id INTEGER PRIMARY KEY,
               key TEXT NOT NULL UNIQUE,
               description TEXT NOT NULL,
               attempts INTEGER NOT NULL DEFAULT 0,
               successes INTEGER NOT NULL DEFAULT 0,
               created REAL NOT NULL,
               updated REAL NOT NULL
           )""",
        """CREATE TABLE experience_solutions (
               id INTEGER PRIMARY KEY,
               task_id INTEGER NOT NULL REFERENCES experience_tasks(id),
               canonical TEXT NOT NULL,  -- sha256 of `canonical(source)`: one row per class
               source TEXT NOT NULL,  -- the class's shortest text so far
               length INTEGER NOT NULL,
               speedup REAL,  -- the best speedup any member of the class measured
               device TEXT,  -- where that speedup was measured ("gpu" | "interpreter")
               seen INTEGER NOT NULL DEFAULT 1,  -- how many verified kernels fell into the class
               created REAL NOT NULL,
               UNIQUE (task_id, canonical)
           )""",
    ],
}

_CHARS_PER_TOKEN = 4
_REFERENCE_PARTS = {
    "kernelbench": ("Model", "get_inputs", "get_init_inputs"),
}


# -- tasks ------------------------------------------------------------------------------------


class TaskLike(Protocol):
    """What a search's `Task` (search/model.py) offers; the memory needs nothing else."""

    @property
    def path(self) -> str: ...
    @property
    def kernel(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def spec(self) -> str: ...


@dataclass(frozen=True)
class ExperienceTask:
    """A task as the memory knows it.

    Attributes:
        key: "<spec kind>:<hash>", e.g. "harness:3f2a…" (the hash of the reference's canonical form).
        description: one line for the demonstration, e.g. "softmax_kernel in softmax.py, checked
            by the harness of softmax".
        entry: what a solution is cut around (the launcher, `ModelNew`, or the kernel).
        kernel: the kernel the search optimised.
    """

    key: str
    description: str
    entry: str
    kernel: str


@dataclass(frozen=True)
class TaskInfo:
    """A task's counts and its representative solution, as `ExperienceMemory.tasks` lists them."""

    key: str
    description: str
    attempts: int
    successes: int
    solution: str | None  # the shortest representative, None while unsolved
    classes: int  # solutions distinct up to renaming

    @property
    def success_rate(self) -> float:
        return self.successes / self.attempts if self.attempts else 0.0

    @property
    def difficulty(self) -> float:
        return 1.0 - self.success_rate


@dataclass(frozen=True)
class Solution:
    """One class of isomorphic solutions of a task."""

    canonical: str
    source: str
    speedup: float | None
    device: str | None
    seen: int


def _spec_kind(spec: str) -> tuple[str, str | None]:
    kind, _, launcher = spec.partition(":")
    return kind, launcher or None


def experience_task(task: TaskLike | ExperienceTask) -> ExperienceTask:
    """The memory's task for a search's task (an `ExperienceTask` is returned as it is)."""
    if isinstance(task, ExperienceTask):
        return task
    kind, launcher = _spec_kind(task.spec)
    statements = dict(top_level(Document(task.source).root))
    if kind == "harness" and launcher:
        names: tuple[str, ...] = tuple(launcher + suffix for suffix in ("_inputs", "_reference", "_tolerances"))
        entry, checked = launcher, f"checked by the harness of {launcher}"
    elif kind == "kernelbench":
        names, entry, checked = _REFERENCE_PARTS["kernelbench"], "ModelNew", "a KernelBench problem"
    else:
        names, entry, checked = (), task.kernel, f"checked by a {kind or 'custom'} spec"
    reference = "\n".join(text(statements[name]) for name in names if name in statements)
    if not reference:  # no reference in the file (an oracle, a sibling KernelBench file): the kernel itself
        reference = text(statements[task.kernel]) if task.kernel in statements else task.source
    key = f"{kind}:{canonical_hash(reference)[:32]}"
    description = f"{task.kernel} in {Path(task.path).name}, {checked}"
    return ExperienceTask(key=key, description=description, entry=entry, kernel=task.kernel)


def cut_solution(source: str, task: ExperienceTask) -> str:
    """What a verified file contributes: the entry (launcher, `ModelNew`, or the kernel) and the
    module-level definitions and constants it uses, transitively, in file order; no imports and
    no harness. The whole file when the entry is not a module-level definition."""
    root = Document(source).root
    statements = top_level(root)
    by_name = {name: node for name, node in statements}
    if task.entry not in by_name:
        return source.strip()
    excluded = {task.entry + suffix for suffix in ("_inputs", "_reference", "_tolerances")}
    excluded |= set(_REFERENCE_PARTS["kernelbench"]) - {task.entry}
    kept: set[str] = set()
    todo = [task.entry]
    while todo:
        name = todo.pop()
        if name in kept or name in excluded or name not in by_name:
            continue
        kept.add(name)
        todo.extend(text(node) for node in _identifiers(by_name[name]))
    chosen = [node for name, node in statements if name in kept]
    return "\n\n\n".join(text(node).strip() for node in chosen)


def _identifiers(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            yield current
        stack.extend(current.children)


def _tokens(value: str) -> int:
    return math.ceil(len(value) / _CHARS_PER_TOKEN)


def _demonstration(info: TaskInfo) -> str:
    # The prompt fences each demonstration as Python (prompts.demonstrations_block), so the
    # task description rides along as comments.
    header = (f"# Task: {info.description}\n"
              f"# Verified in {info.successes} of {info.attempts} attempts ({info.success_rate:.0%}).")
    return f"{header}\n{(info.solution or '').strip()}\n"


# -- the memory ---------------------------------------------------------------------------------


class ExperienceMemory:
    """Verified kernels per task in one workspace's `.tritonsmith/state.db`."""

    def __init__(self, root: Path) -> None:
        self.path, self._db = connect(root)
        self._lock = threading.Lock()  # used from the engine's and the server's threads
        self._migrate()

    def _migrate(self) -> None:
        with self._lock, write(self._db):
            migrate(self._db, key=_VERSION_KEY, version=SCHEMA_VERSION, migrations=_MIGRATIONS, path=self.path,
                    what="an experience memory")

    def _task_id(self, task: ExperienceTask, attempts: int = 0, successes: int = 0) -> int:
        """The task's row (created on first use), its counts raised; inside a write transaction."""
        now = time.time()
        self._db.execute(
            "INSERT INTO experience_tasks(key, description, attempts, successes, created, updated) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET attempts = attempts + excluded.attempts, "
            "successes = successes + excluded.successes, description = excluded.description, updated = excluded.updated",
            (task.key, task.description, attempts, successes, now, now),
        )
        row = self._db.execute("SELECT id FROM experience_tasks WHERE key = ?", (task.key,)).fetchone()
        return int(row[0])

    # -- recording ---------------------------------------------------------------------------

    def record_attempt(self, task: TaskLike | ExperienceTask, outcome: str) -> None:
        """Count one attempt at `task`; a success when `outcome` is "correct" (`Outcome.CORRECT`)."""
        found = experience_task(task)
        success = 1 if str(getattr(outcome, "value", outcome)) == "correct" else 0
        with self._lock, write(self._db):
            self._task_id(found, attempts=1, successes=success)

    def record_solution(self, task: TaskLike | ExperienceTask, source: str, speedup: float | None = None,
                        device: str | None = None) -> str:
        """Store a verified file (`source`, cut with `cut_solution`) as a solution of `task`;
        returns its canonical hash. An isomorphic solution already stored keeps the shorter
        text of the two and the better speedup. Counts nothing: `record_attempt` does."""
        found = experience_task(task)
        solution = cut_solution(source, found)
        digest = canonical_hash(solution)
        if speedup is not None and not math.isfinite(speedup):
            speedup = None
        now = time.time()
        with self._lock, write(self._db):
            task_id = self._task_id(found)
            row = self._db.execute(
                "SELECT id, length, speedup FROM experience_solutions WHERE task_id = ? AND canonical = ?",
                (task_id, digest),
            ).fetchone()
            if row is None:
                self._db.execute(
                    "INSERT INTO experience_solutions(task_id, canonical, source, length, speedup, device, seen, created) "
                    "VALUES (?, ?, ?, ?, ?, ?, 1, ?)",
                    (task_id, digest, solution, len(solution), speedup, device, now),
                )
                return digest
            row_id, length, best = row
            self._db.execute("UPDATE experience_solutions SET seen = seen + 1 WHERE id = ?", (row_id,))
            if len(solution) < length:
                self._db.execute("UPDATE experience_solutions SET source = ?, length = ? WHERE id = ?",
                                 (solution, len(solution), row_id))
            if speedup is not None and (best is None or speedup > best):
                self._db.execute("UPDATE experience_solutions SET speedup = ?, device = ? WHERE id = ?",
                                 (speedup, device, row_id))
        return digest

    # -- reading -----------------------------------------------------------------------------

    def tasks(self) -> list[TaskInfo]:
        """Every task, hardest first (lowest success rate; then more attempts; then by key)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT t.key, t.description, t.attempts, t.successes, "
                "(SELECT s.source FROM experience_solutions s WHERE s.task_id = t.id ORDER BY s.length, s.id LIMIT 1), "
                "(SELECT COUNT(*) FROM experience_solutions s WHERE s.task_id = t.id) "
                "FROM experience_tasks t"
            ).fetchall()
        infos = [TaskInfo(key, description, attempts, successes, solution, classes)
                 for key, description, attempts, successes, solution, classes in rows]
        return sorted(infos, key=lambda info: (info.success_rate, -info.attempts, info.key))

    def solutions(self, task: TaskLike | ExperienceTask | str) -> list[Solution]:
        """A task's solution classes, shortest representative first."""
        key = task if isinstance(task, str) else experience_task(task).key
        with self._lock:
            rows = self._db.execute(
                "SELECT s.canonical, s.source, s.speedup, s.device, s.seen FROM experience_solutions s "
                "JOIN experience_tasks t ON t.id = s.task_id WHERE t.key = ? ORDER BY s.length, s.id",
                (key,),
            ).fetchall()
        return [Solution(*row) for row in rows]

    def demonstrations(self, token_budget: int = 4000, exclude_task: TaskLike | ExperienceTask | str | None = None,
                       *, groups: int = 3) -> list[str]:
        """Demonstrations for a prompt, hard-first then mixed, within `token_budget`.

        The solved tasks (at least one success and one solution), hardest first, are split into
        `groups` strata of equal size (the paper's β); the hardest stratum comes first, then the
        others alternately from the hard and the easy end. Each task gives one demonstration
        (its description and its shortest solution); one that does not fit the remaining budget
        is skipped and the next one tried. `exclude_task` (the task being searched) is left out.
        """
        excluded = None
        if exclude_task is not None:
            excluded = exclude_task if isinstance(exclude_task, str) else experience_task(exclude_task).key
        solved = [info for info in self.tasks() if info.successes > 0 and info.solution and info.key != excluded]
        if not solved:
            return []
        size = math.ceil(len(solved) / max(1, groups))
        hard, rest = solved[:size], solved[size:]
        order = list(hard)
        low, high = 0, len(rest) - 1
        take_hard = True
        while low <= high:
            if take_hard:
                order.append(rest[low])
                low += 1
            else:
                order.append(rest[high])
                high -= 1
            take_hard = not take_hard
        chosen: list[str] = []
        left = token_budget
        for info in order:
            demo = _demonstration(info)
            cost = _tokens(demo)
            if cost <= left:
                chosen.append(demo)
                left -= cost
        return chosen

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ExperienceMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
