"""What a worker process may see and use: environment, scratch space, network, memory, output.

DESIGN.md ("Sandbox"): workers get a scratch directory as their working directory, an
environment without secrets, no network where the OS allows it, a wall-clock timeout and a
memory watchdog on resident size. This module holds the pieces that do not need a live pool;
`pool.py` applies them. Nothing here imports torch or triton: the server imports it.

The limits a verification runs under (docs/ARCHITECTURE.md, "Fault verdicts"):

- **Hang limit** (`hang_limit`): no forward pass may take longer than max(30 s, 20x the
  reference's own forward) unless the user says otherwise. The worker reports progress after
  each forward pass (`progress.py`); the pool's watchdog kills a job that reports none for that
  long, so a slow but progressing interpreter run lives and an endless loop dies in seconds.
- **Memory limit** (`default_memory_mb`): a quarter of the memory the machine (or its cgroup)
  has available, between 1 GB and 32 GB, unless the user says otherwise. The pool's watchdog
  checks the resident size of every process in the worker's session; without CUDA the worker
  also caps its address space (`address_limit_bytes`, `RLIMIT_AS`), so one huge allocation fails
  at once instead of pushing the machine into swap.

These limits contain accidents (a kernel that segfaults, hangs, eats memory or prints without
end). The boundary against hostile code is `jail.py`: Linux namespaces, a read-only system, no
`$HOME`, no network, no capabilities. Here: the allow-listed environment, and `scrub`, which
takes the server's secret values out of anything a worker sends back.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "digests_for",
    "write_recorded",
    "HANG_FACTOR",
    "HANG_FLOOR_S",
    "SECRET_NAME",
    "STARTUP_S",
    "address_limit_bytes",
    "available_memory_mb",
    "default_memory_mb",
    "hang_limit",
    "network_isolation_prefix",
    "namespace_members",
    "resident_bytes",
    "runs_dir",
    "scratch_dir",
    "scrub",
    "secret_values",
    "session_members",
    "virtual_bytes",
    "with_import_paths",
    "worker_environment",
]

SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|^(ANTHROPIC|OPENAI|HF|AWS|GITHUB)_",
    re.IGNORECASE,
)
"""Environment variable names that may hold a secret: never passed on, even when allowed below."""

ALLOWED_NAME = re.compile(
    r"^(PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ|TERM|HOME|USER|LOGNAME|SHELL|TMPDIR|LD_LIBRARY_PATH"
    r"|PYTHON(PATH|HASHSEED|UNBUFFERED|DONTWRITEBYTECODE|PYCACHEPREFIX|WARNINGS|FAULTHANDLER)"
    r"|VIRTUAL_ENV|CONDA_PREFIX|TRITON_[A-Z0-9_]+|CUDA_[A-Z0-9_]+|NVIDIA_[A-Z0-9_]+|CUBLAS_[A-Z0-9_]+"
    r"|CUDNN_[A-Z0-9_]+|NCCL_[A-Z0-9_]+|PYTORCH_[A-Z0-9_]+|TORCH_[A-Z0-9_]+|TORCHINDUCTOR_[A-Z0-9_]+"
    r"|OMP_NUM_THREADS|MKL_NUM_THREADS|OPENBLAS_NUM_THREADS|TRITONSMITH_[A-Z0-9_]+)$"
)
"""What a worker's environment may hold: the search path, locale, Python's own switches, and
the Triton, CUDA and PyTorch settings a kernel's behaviour depends on. An allow list: a name
nobody thought of (`DATABASE_URL`, `GH_PAT`) stays with the server."""

MIN_SECRET_CHARS = 8
"""Values shorter than this are not scrubbed from output: `1`, `true` or `en` would turn every
message into noise, and a secret that short protects nothing."""


def worker_environment(
    base: Mapping[str, str], *, triton_cache_dir: str | os.PathLike[str] | None = None
) -> dict[str, str]:
    """The environment for a worker: `base` cut to `ALLOWED_NAME` (never a `SECRET_NAME`), with
    its own Triton cache.

    API keys reach the server through its environment (DESIGN.md, "Secrets") and must never
    reach code run on the user's behalf. A per-pool `TRITON_CACHE_DIR` keeps candidates from a
    search out of the user's own cache. The directory holding the imported `tritonsmith`
    package goes first on `PYTHONPATH`, so the worker runs the same code as the server even from
    a source tree (the GPU machine) and from a scratch working directory.
    """
    env = {name: value for name, value in base.items()
           if ALLOWED_NAME.match(name) and not SECRET_NAME.search(name)}
    if triton_cache_dir is not None:
        env["TRITON_CACHE_DIR"] = os.fspath(triton_cache_dir)
    package_root = str(Path(__file__).resolve().parents[2])
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != package_root]
    env["PYTHONPATH"] = os.pathsep.join([package_root, *paths])
    # Output goes to files the pool caps; unbuffered so that a crash loses none of it.
    env["PYTHONUNBUFFERED"] = "1"
    return env


def with_import_paths(env: Mapping[str, str], folders: Iterable[str | os.PathLike[str]]) -> dict[str, str]:
    """`env` with `folders` (the `importPaths` setting) appended to `PYTHONPATH`: workers import
    the modules of the user's workspace from there, and the jail mounts them back read-only."""
    out = dict(env)
    paths = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p]
    paths += [os.fspath(f) for f in folders if os.fspath(f) not in paths]
    if paths:
        out["PYTHONPATH"] = os.pathsep.join(paths)
    return out


def _may_be_secret(name: str, value: str) -> bool:
    """A value a worker is not given that could be a credential: any value of a `SECRET_NAME`
    variable; otherwise one with a digit or `:@=+` in it that is not a path or a path list
    (`PYENV_ROOT=/root/.pyenv` and `DEBIAN_FRONTEND=noninteractive` stay readable in output,
    `DATABASE_URL=postgres://...` and `GH_PAT=ghp_...` do not)."""
    if len(value) < MIN_SECRET_CHARS:
        return False
    if SECRET_NAME.search(name):
        return True
    if all(part.startswith(("/", "~")) and " " not in part for part in value.split(os.pathsep) if part):
        return False
    return any(c.isdigit() or c in ":@=+" for c in value)


def secret_values(base: Mapping[str, str]) -> list[str]:
    """The values in `base` a worker is not given that may be credentials (what `scrub`
    removes from its output), longest first, each also as JSON writes it inside a string."""
    kept = worker_environment(base)
    values = {value for name, value in base.items() if name not in kept and _may_be_secret(name, value)}
    values -= {value for name, value in kept.items() if not SECRET_NAME.search(name)}
    escaped = {json.dumps(value)[1:-1] for value in values}
    return sorted(values | escaped, key=len, reverse=True)


def scrub(text: str, secrets: list[str]) -> str:
    """`text` with every secret value replaced by `[secret removed]`: anything a candidate
    prints or raises passes through here before it reaches a verdict, a log or the database."""
    for value in secrets:
        if value in text:
            text = text.replace(value, "[secret removed]")
    return text


def scratch_dir(prefix: str = "tritonsmith-worker-", *, parent: str | None = None) -> Path:
    """A fresh private directory (mode 0700) for a pool or a worker; the caller removes it."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))


@functools.lru_cache(maxsize=1)
def network_isolation_prefix() -> tuple[str, ...]:
    """The command prefix that starts a worker without network, or `()` where none works.

    `unshare -n` gives the worker a new network namespace holding only a loopback device that is
    down. Creating one needs CAP_SYS_ADMIN, so it is tried only as root on Linux, and only used
    when a trial `unshare -n true` succeeds: containers often forbid it even to root, and a
    worker that cannot start is worse than one with network. Unprivileged user namespaces
    (`unshare -rn`) would also work without root but change the worker's uid, which confuses
    tools that check file ownership, so they are not used. Checked once per process.
    """
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return ()
    try:
        probe = subprocess.run(
            ["unshare", "-n", "true"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return ("unshare", "-n") if probe.returncode == 0 else ()


HANG_FLOOR_S = 30.0
"""The shortest hang limit by default: worker start, imports and a first interpreted forward
pass of a scaled-down problem fit in it with room to spare on a loaded two-core machine."""

HANG_FACTOR = 20.0
"""By default a forward pass may take this many times the reference's own forward pass."""

STARTUP_S = 60.0
"""Extra time before a verification job's first progress report: a fresh worker starts and its
handler imports torch and Triton (trusted code, seconds, more on a loaded machine) before any
user code runs; the hang limit counts from that report."""

MEMORY_FRACTION = 0.25
"""The default memory limit's share of the available memory: two verification workers, a
compile pool and the editor share the machine."""

MEMORY_MIN_MB = 1024
MEMORY_MAX_MB = 32768
MEMORY_FALLBACK_MB = 8192
"""The default memory limit where the available memory cannot be read (not Linux)."""


def hang_limit(reference_s: float | None, override_s: float | None = None) -> float:
    """Seconds a forward pass may run before the job is reported as hung: `override_s` when the
    user set one (`--timeout`, the `verifyTimeout` setting), else max(`HANG_FLOOR_S`,
    `HANG_FACTOR` x the reference's forward time), else the floor when that time is unknown."""
    if override_s is not None and override_s > 0:
        return float(override_s)
    if reference_s is None or reference_s <= 0:
        return HANG_FLOOR_S
    return max(HANG_FLOOR_S, HANG_FACTOR * reference_s)


def _read_int(path: str) -> int | None:
    try:
        with open(path, "rb") as handle:
            text = handle.read().strip()
    except OSError:
        return None
    if not text or text == b"max":
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", "rb") as meminfo:
            for line in meminfo:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_headroom() -> int | None:
    """What the process's memory cgroup still allows (limit minus usage), if it sets a limit.
    cgroup v2 (`memory.max`, `memory.current`) or v1 (`memory.limit_in_bytes`)."""
    own = "/"
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as cgroups:
            for line in cgroups:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if controllers == "" or "memory" in controllers.split(","):
                    own = path or "/"
                    if controllers:  # v1's memory controller wins over the v2 entry
                        break
    except (OSError, ValueError):
        pass
    candidates = [
        (f"/sys/fs/cgroup{own}/memory.max", f"/sys/fs/cgroup{own}/memory.current"),
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        (f"/sys/fs/cgroup/memory{own}/memory.limit_in_bytes",
         f"/sys/fs/cgroup/memory{own}/memory.usage_in_bytes"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ]
    for limit_path, usage_path in candidates:
        limit = _read_int(limit_path)
        if limit is None or limit >= 1 << 60:  # no limit set ("max", or v1's huge number)
            continue
        usage = _read_int(usage_path) or 0
        return max(0, limit - usage)
    return None


def available_memory_mb() -> int | None:
    """Memory available to new work now, in MB: the kernel's MemAvailable, or less where this
    process's memory cgroup allows less; None where neither can be read."""
    values = [v for v in (_meminfo_available(), _cgroup_headroom()) if v is not None]
    return min(values) // (1024 * 1024) if values else None


def default_memory_mb() -> int:
    """The memory limit for one worker when the user has not set one: `MEMORY_FRACTION` of the
    available memory, at least `MEMORY_MIN_MB` and at most `MEMORY_MAX_MB`."""
    available = available_memory_mb()
    if available is None:
        return MEMORY_FALLBACK_MB
    return int(min(MEMORY_MAX_MB, max(MEMORY_MIN_MB, available * MEMORY_FRACTION)))


def address_limit_bytes(memory_mb: int) -> int:
    """The address-space cap (`RLIMIT_AS`) for a worker whose memory limit is `memory_mb` and
    that does not use CUDA (CUDA reserves far more address space than it uses).

    A worker's virtual size exceeds its resident size: torch and Triton map about 1 GB of
    libraries, and each thread reserves a stack and a malloc arena (64 MB on 64-bit glibc).
    The headroom covers those, so a job that stays under its resident limit never meets this
    cap, while a single allocation past the limit fails at once (MemoryError) instead of being
    touched page by page until the watchdog notices.
    """
    headroom_mb = 1536 + 96 * (os.cpu_count() or 1)
    return (memory_mb + headroom_mb) * 1024 * 1024


def _status_field(pid: int, field: bytes) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0  # gone, a zombie (no Vm* lines), or not Linux


def _status_rss(pid: int) -> int:
    return _status_field(pid, b"VmRSS:")


def virtual_bytes(pid: int) -> int:
    """Virtual size (VmSize) of `pid` alone, in bytes (0 if it is gone)."""
    return _status_field(pid, b"VmSize:")


def session_members(session: int) -> list[int]:
    """Every process in session `session` (a worker is the leader of its own session), found by
    scanning `/proc/*/stat`: children, grandchildren, and daemons user code started that were
    reparented away from the worker. Empty where /proc cannot be read."""
    members: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return members
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command: state, ppid, pgrp, session, ...
        if len(fields) > 3 and fields[3] == str(session).encode():
            members.append(int(entry))
    return members


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as children:
                kids.extend(int(k) for k in children.read().split())
        except (OSError, ValueError):
            continue  # the kernel lacks CONFIG_PROC_CHILDREN, or the task ended
    return kids


def _unique_bytes(pid: int) -> int:
    """Memory only `pid` holds (USS: its private pages, from `smaps_rollup`); its RSS where that
    file is missing. A forked child shares its parent's pages until it writes them: counting
    its RSS would count the parent's memory once per child."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
            total = 0
            for line in rollup:
                if line.startswith((b"Private_Clean:", b"Private_Dirty:")):
                    total += int(line.split()[1]) * 1024
            return total
    except (OSError, ValueError, IndexError):
        return _status_rss(pid)


def resident_bytes(pid: int, also: list[int] | tuple[int, ...] = ()) -> int:
    """Memory of `pid` (its resident size) plus what its descendants and the processes in
    `also` hold of their own (unique set size), in bytes (0 if all are gone).

    Descendants are found through `/proc/<pid>/task/*/children` where the kernel provides it
    (CONFIG_PROC_CHILDREN; many kernels, this project's development machine's among them, lack
    it). The pool passes the worker's session and namespace members as `also`, so a child that
    allocates is counted either way; fifty forks of a 160 MB worker count what each wrote, not
    8 GB of shared pages.
    """
    total, seen, todo = _status_rss(pid), {pid}, [*_children(pid), *also]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        total += _unique_bytes(current)
        todo.extend(_children(current))
    return total


def namespace_members(pid: int) -> list[int]:
    """Every process in `pid`'s pid namespace (itself included) when that namespace is not
    this process's own; empty otherwise, or where /proc cannot be read."""
    try:
        target = os.readlink(f"/proc/{pid}/ns/pid")
        if target == os.readlink("/proc/self/ns/pid"):
            return []
        entries = os.listdir("/proc")
    except OSError:
        return []
    members = []
    for entry in entries:
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/ns/pid") == target:
                    members.append(int(entry))
            except OSError:
                continue
    return members


def runs_dir() -> Path:
    """The folder verifications keep their work in (`tritonsmith-runs-<uid>` in the temporary
    folder, mode 0700): sandboxed workers may write there, and nowhere else outside their own
    scratch folder and their pool's Triton cache."""
    path = Path(tempfile.gettempdir()) / f"tritonsmith-runs-{os.getuid() if hasattr(os, 'getuid') else 0}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def write_recorded(path: Path, text: str, written: dict[str, str]) -> None:
    """Write a file a worker will import into the runs folder, and record its sha256 in
    `written`: every worker may write there, so a job imports only bytes with that digest."""
    data = text.encode("utf-8")
    path.write_bytes(data)
    written[str(path)] = hashlib.sha256(data).hexdigest()


def digests_for(payload: dict[str, Any], written: dict[str, str]) -> dict[str, str]:
    """The recorded digests of the files a job's payload names (its `sha256` entry)."""
    return {v: written[v] for v in payload.values() if isinstance(v, str) and v in written}
