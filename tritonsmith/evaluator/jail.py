"""Linux namespaces around an evaluator worker: what makes the sandbox a boundary.

A worker the pool starts through `jail_command()` runs as the first process of fresh user, pid,
mount, network and IPC namespaces (util-linux `unshare`, or bubblewrap where only it may make
them; no setuid helper, no root needed). The worker calls `enter()` before it reads its first
job, while it still holds the capabilities the new user namespace gave it, and then gives them
up for good. What candidate code sees after that:

- **Files:** every mount read-only; `$HOME`, `/tmp`, `/var/tmp`, `/dev/shm` and `/run` replaced by
  empty private folders; the Python installation and the tritonsmith package mounted back
  read-only where they lived under a hidden folder; the worker's scratch folder and the folders
  the pool names (`writable`: the pool's Triton cache, a verification's work folder) mounted back
  writable; files that hold secrets even on a read-only system (`/etc/shadow`, SSH host keys,
  TLS private keys) hidden.
- **Processes:** its own pid namespace with a fresh `/proc`: no other process's `/proc/<pid>`,
  so neither the server's environment nor its command line; when the worker ends, the kernel
  kills every process left in the namespace (a `setsid` fork storm included).
- **Network and IPC:** none (a loopback device that is down; no shared memory with the host).
- **Privilege:** no capabilities (bounding, ambient, permitted and effective sets cleared) and
  `no_new_privs`, so it cannot undo a mount, enter another namespace or gain privilege through
  a setuid binary. Inside, it runs with the user's own uid: files the user cannot read stay
  unreadable. A server that itself runs as root still reads files only root may read, apart
  from the hidden ones: run the editor as a normal user.

Where namespaces cannot be made (macOS, containers that forbid them), `jail_command()` returns
the plain command and `JAIL_REDUCED` says what still holds; verdicts then carry
"sandbox: reduced". The probe runs once per process.

Nothing here imports torch or triton; `enter` uses only the standard library (and `ctypes` for
`mount(2)`, `prctl(2)` and `capset(2)`).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "JAIL_ENV",
    "JAIL_NAMESPACES",
    "JAIL_REDUCED",
    "JAIL_TOOL_ENV",
    "JailError",
    "enter",
    "jail_command",
    "jail_plan",
    "jail_prefix",
    "namespaces_available",
    "set_not_dumpable",
]

JAIL_ENV = "TRITONSMITH_JAIL"
"""The environment variable that carries the jail's plan (JSON) to the worker."""

JAIL_NAMESPACES = "namespaces (user, pid, mount, network, ipc): read-only system, private work folder"
JAIL_REDUCED = ("reduced: no Linux namespaces here, so candidate code can read the user's files and "
                "see other processes; still enforced: an allow-listed environment, the parent's "
                "secrets scrubbed from output, a scratch working folder, time, memory and output limits")

UNSHARE = ("unshare", "--user", "--map-root-user", "--pid", "--fork", "--kill-child",
           "--mount", "--mount-proc", "--net", "--ipc", "--propagation", "private")

BWRAP = ("bwrap", "--unshare-user", "--uid", "0", "--gid", "0", "--unshare-pid", "--as-pid-1",
         "--unshare-net", "--unshare-ipc", "--die-with-parent", "--bind", "/", "/", "--dev-bind", "/dev", "/dev",
         "--proc", "/proc", "--cap-add", "ALL", "--")
"""The same namespaces made by bubblewrap, for where `unshare` may not make them but bubblewrap
may (Ubuntu 24.04's AppArmor allows user namespaces to `bwrap`, not to `unshare`). It only makes
the namespaces, with the worker as their root and the whole system bound in; `enter` then sets up
the view and drops the capabilities exactly as after `unshare`. A setuid bubblewrap cannot grant
those capabilities and is not used."""

JAIL_TOOL_ENV = "TRITONSMITH_JAIL_TOOL"
"""`unshare` or `bwrap`: use only that one (tests, and a machine where one of them misbehaves)."""

HIDDEN_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm", "/run")
"""Replaced by empty private folders (with `$HOME`)."""

SECRET_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers",
                "/etc/ssh", "/etc/ssl/private", "/root")
"""Hidden even though the system is read-only: readable by root, and a server may run as root."""


class JailError(RuntimeError):
    """The worker could not enter its jail: it must not run candidate code."""


def jail_prefix() -> tuple[str, ...] | None:
    """What starts a command inside fresh namespaces here: `unshare`, else bubblewrap, whichever
    makes them in a trial run; None where neither can. `JAIL_TOOL_ENV` tries only the one it
    names."""
    return _probe(os.environ.get(JAIL_TOOL_ENV) or None)


@functools.cache
def _probe(wanted: str | None) -> tuple[str, ...] | None:
    if not sys.platform.startswith("linux"):
        return None
    for prefix in (UNSHARE, BWRAP):
        if wanted is not None and prefix[0] != wanted:
            continue
        try:
            probe = subprocess.run([*prefix, "true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return prefix
    return None


def namespaces_available() -> bool:
    """Whether `unshare` or bubblewrap can make the namespaces here (one trial run, cached)."""
    return jail_prefix() is not None


def jail_command(command: list[str]) -> list[str]:
    """`command` started inside fresh namespaces, or unchanged where none can be made."""
    prefix = jail_prefix()
    return [*prefix, *command] if prefix is not None else list(command)


def jail_plan(writable: Iterable[str | os.PathLike[str]] = (), readable: Iterable[str | os.PathLike[str]] = ()) -> str:
    """The plan `enter` reads from `JAIL_ENV`: folders to keep writable (besides the worker's
    scratch, its working directory) and folders to mount back read-only (the interpreter and
    this package, wherever they live, and `readable`: the folders on the workers' `PYTHONPATH`,
    such as the user's `importPaths`)."""
    package_root = Path(__file__).resolve().parents[2]
    keep = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(package_root),
            os.path.dirname(os.path.realpath(sys.executable))}
    keep.update(p for p in sys.path if p and os.path.isdir(p))
    keep.update(os.fspath(p) for p in readable if os.path.isdir(p))
    if sys.pycache_prefix and os.path.isdir(sys.pycache_prefix):
        keep.add(sys.pycache_prefix)  # read-only: a worker must never write bytecode the server loads
    return json.dumps({"writable": sorted(os.fspath(p) for p in writable), "keep": sorted(keep)})


# -- inside the namespaces -------------------------------------------------------------------

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_RELATIME = 1 << 21
_MOUNT_FLAGS = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
                "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 47, 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return libc


def _mount(libc: ctypes.CDLL, source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    done = libc.mount(source.encode() if source else None, target.encode(), fstype.encode() if fstype else None,
                      flags, data.encode() if data else None)
    if done != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {target}: {os.strerror(error)}")


def _mounts() -> list[tuple[str, int]]:
    """Every mount point with the flags it has now (they must be kept when remounting: a user
    namespace may add `ro` but not drop `nosuid`, `nodev` or `noexec`)."""
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8") as info:
        for line in info:
            fields = line.split()
            point = fields[4].replace("\\040", " ")
            flags = 0
            for option in fields[5].split(","):
                flags |= _MOUNT_FLAGS.get(option, 0)
            out.append((point, flags))
    return out


def _flags_of(path: str, mounts: list[tuple[str, int]]) -> int:
    """The flags of the mount `path` lies on (the longest mount point above it)."""
    best, flags = "", 0
    for point, point_flags in mounts:
        if _under(path, point) and len(point) >= len(best):
            best, flags = point, point_flags
    return flags


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def enter(plan_text: str | None = None) -> str:
    """Make this process's view of the system what the module docstring says, then drop every
    capability. Must run in a fresh user and mount namespace as its root (`jail_command`), before
    any untrusted code. Returns a one-line description; raises `JailError` if any step fails
    (the worker must then refuse jobs, never run them unconfined)."""
    plan = json.loads(plan_text if plan_text is not None else os.environ.get(JAIL_ENV, "{}"))
    libc = _libc()
    work = os.getcwd()
    home = os.path.realpath(os.path.expanduser("~"))
    hidden = [home, *HIDDEN_FOLDERS]
    writable = [work, *(os.path.realpath(p) for p in plan.get("writable", ()))]
    keep = [os.path.realpath(p) for p in plan.get("keep", ())]
    # Folders mounted back after their parent is hidden: held open (O_PATH) first, since the
    # path stops leading to them once the parent is covered.
    back = [(p, True) for p in writable if os.path.isdir(p)]
    back += [(p, False) for p in keep
             if os.path.isdir(p) and any(_under(p, h) for h in hidden + list(SECRET_FILES))
             and not any(_under(p, w) for w, _ in back)]
    try:
        handles = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p, _ in back}
        mounts = _mounts()
        for point, flags in mounts:
            if _under(point, "/proc") or _under(point, "/dev"):
                continue  # the fresh /proc of the pid namespace; device nodes stay usable
            try:
                _mount(libc, None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
            except OSError:
                if not _under(point, "/sys"):  # sysfs below /sys may refuse; it is read-only to a user
                    raise
        for folder in hidden:
            if os.path.isdir(folder) and folder != "/":
                _mount(libc, "tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1g")
        for secret in SECRET_FILES:
            if secret == home or not os.path.exists(secret):
                continue
            if os.path.isdir(secret):
                _mount(libc, "tmpfs", secret, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=4k")
            else:
                _mount(libc, "/dev/null", secret, None, MS_BIND)
        for path, rw in sorted(back, key=lambda item: item[0]):
            os.makedirs(path, exist_ok=True)
            _mount(libc, f"/proc/self/fd/{handles[path]}", path, None, MS_BIND)
            # A bind copies the flags of the mount it comes from, now read-only; the ones a
            # user namespace cannot drop (nosuid, nodev, noexec) are kept either way.
            locked = _flags_of(path, mounts) & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
            _mount(libc, None, path, None, MS_REMOUNT | MS_BIND | locked | (0 if rw else MS_RDONLY | MS_NOSUID))
        for handle in handles.values():
            os.close(handle)
        os.chdir(work)
        _drop_privileges(libc)
    except OSError as error:
        raise JailError(f"the sandbox could not be set up: {error}") from error
    return JAIL_NAMESPACES


def _drop_privileges(libc: ctypes.CDLL) -> None:
    """No capabilities in any set, for good, and no gaining any through exec."""
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # EINVAL: no such cap
            raise OSError(ctypes.get_errno(), "PR_CAPBSET_DROP failed")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(_LINUX_CAPABILITY_VERSION_3, 0), (Data * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")


def set_not_dumpable() -> None:
    """Mark this process (the server, the CLI) non-dumpable: other processes of the same user
    can no longer read its `/proc/<pid>/environ`, `cmdline` or memory. Linux only; harmless
    elsewhere. Debuggers and profilers can no longer attach to it either."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            _libc().prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
