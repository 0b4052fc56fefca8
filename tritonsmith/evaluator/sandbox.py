"""What a worker process may see and use: environment, scratch space, network, memory, output.

DESIGN.md ("Sandbox"): workers get a scratch directory as their working directory, an
environment without secrets, no network where the OS allows it, a wall-clock timeout and a
memory watchdog on resident size. This module holds the pieces that do not need a live pool;
`pool.py` applies them. Nothing here imports torch or triton: the server imports it.

The sandbox contains accidents (a kernel that segfaults, hangs, eats memory or prints without
end); it is not a security boundary against hostile code, which could still read the user's
files.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "SECRET_NAME",
    "network_isolation_prefix",
    "resident_bytes",
    "scratch_dir",
    "worker_environment",
]

SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|^(ANTHROPIC|OPENAI|HF|AWS|GITHUB)_",
    re.IGNORECASE,
)
"""Environment variable names that may hold a secret. Deliberately broad: a worker that misses
a harmless variable loses nothing, a worker that sees an API key can leak it into a log."""


def worker_environment(
    base: Mapping[str, str], *, triton_cache_dir: str | os.PathLike[str] | None = None
) -> dict[str, str]:
    """The environment for a worker: `base` without secrets, with its own Triton cache.

    API keys reach the server through its environment (DESIGN.md, "Secrets") and must never
    reach code run on the user's behalf. A per-pool `TRITON_CACHE_DIR` keeps candidates from a
    search out of the user's own cache. The directory holding the imported `tritonsmith`
    package goes first on `PYTHONPATH`, so the worker runs the same code as the server even from
    a source tree (the GPU machine) and from a scratch working directory.
    """
    env = {name: value for name, value in base.items() if not SECRET_NAME.search(name)}
    if triton_cache_dir is not None:
        env["TRITON_CACHE_DIR"] = os.fspath(triton_cache_dir)
    package_root = str(Path(__file__).resolve().parents[2])
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != package_root]
    env["PYTHONPATH"] = os.pathsep.join([package_root, *paths])
    # Output goes to files the pool caps; unbuffered so that a crash loses none of it.
    env["PYTHONUNBUFFERED"] = "1"
    return env


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


def _status_rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0  # gone, a zombie (no VmRSS line), or not Linux


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


def resident_bytes(pid: int) -> int:
    """Resident set size of `pid` plus its descendants, in bytes (0 if it is gone).

    Descendants are found through `/proc/<pid>/task/*/children` where the kernel provides it;
    elsewhere only the worker itself is counted, which covers Python code and the compiler's
    in-process work (ptxas children are short-lived and small).
    """
    total, seen, todo = 0, set(), [pid]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        total += _status_rss(current)
        todo.extend(_children(current))
    return total
