"""The sandbox is a boundary (issue 17, item 5): what hostile candidate code tries, contained.

Each attack runs as a `run_python` job in a jailed worker, with canary secrets in the server's
environment and a fake `~/.ssh/id_rsa`: no canary may come back in any result, no write may land
outside the worker's folders, no process may outlive its job.
"""

from __future__ import annotations

import ctypes
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritonsmith.evaluator import Job, Result, WorkerPool
from tritonsmith.evaluator.jail import (
    JAIL_NAMESPACES,
    JAIL_REDUCED,
    JAIL_TOOL_ENV,
    jail_prefix,
    namespaces_available,
)
from tritonsmith.evaluator.sandbox import scrub, secret_values, worker_environment

ATTACKS = str(Path(__file__).parent / "fixtures" / "attacks.py")
CANARIES = {
    "ANTHROPIC_API_KEY": "sk-ant-canary-7f3a9c1e5b",
    "DATABASE_URL": "postgres://admin:canary-db-91c4e@db.internal/prod",
    "GH_PAT": "ghp_canary0123456789abcdef",
}
SSH_CANARY = "-----BEGIN OPENSSH PRIVATE KEY----- canary-ssh-5e8d2b"

pytestmark = pytest.mark.skipif(not namespaces_available(), reason="no Linux namespaces here")


def call(function: str, *args: object, timeout_s: float = 60) -> Job:
    return Job("run_python", {"path": ATTACKS, "function": function, "args": list(args)},
               timeout_s=timeout_s, memory_mb=2048)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text(SSH_CANARY)
    return home


@pytest.fixture(scope="module", params=["unshare", "bwrap"])
def pool(home: Path, request: pytest.FixtureRequest) -> Iterator[WorkerPool]:
    """A jailed pool, its namespaces made by `unshare`, then by bubblewrap: every attack meets
    both (a tool that cannot make them here is skipped)."""
    saved = dict(os.environ)
    os.environ.update(CANARIES, HOME=str(home))
    os.environ[JAIL_TOOL_ENV] = request.param
    try:
        if jail_prefix() is None:
            pytest.skip(f"{request.param} cannot make the namespaces here")
        with WorkerPool(1) as jailed:
            assert jailed.sandbox == JAIL_NAMESPACES
            assert jailed._command[0] == request.param
            yield jailed
    finally:
        os.environ.clear()
        os.environ.update(saved)


def no_canary(result: Result) -> None:
    text = repr(result.to_dict())
    for value in [*CANARIES.values(), SSH_CANARY]:
        assert value not in text


def test_reading_the_parent_environment_home_and_system_secrets_finds_nothing(pool: WorkerPool, home: Path) -> None:
    server = f"/proc/{os.getpid()}/environ"
    result = pool.run(call("read_everything", [str(home / ".ssh" / "id_rsa"), "/etc/shadow", server]))
    assert result.ok, result.error
    seen = result.payload["value"]
    no_canary(result)
    assert seen["ppid"] == "0"  # the server is outside the worker's pid namespace
    assert not [p for p in seen if p.startswith("/proc/") and not p.startswith("/proc/1/") and p != server]
    assert seen[server].startswith("refused")  # no such process in its namespace
    assert seen["/etc/shadow"] == ""  # hidden behind an empty file
    assert seen[str(home / ".ssh" / "id_rsa")].startswith("refused")


def test_writes_land_only_in_private_folders(pool: WorkerPool, home: Path, tmp_path: Path) -> None:
    repo_file = Path(__file__).with_name("written-by-candidate.txt")
    targets = [str(home / "planted"), str(tmp_path / "planted"), str(repo_file), "/etc/planted"]
    result = pool.run(call("write_outside", targets))
    assert result.ok, result.error
    outcome = result.payload["value"]
    assert outcome[str(repo_file)].startswith("refused") and outcome["/etc/planted"].startswith("refused")
    for target in targets:  # what a write inside reached, if anything, was a private tmpfs
        assert not Path(target).exists()


def test_subprocesses_inherit_no_secret_and_no_privilege(pool: WorkerPool) -> None:
    result = pool.run(call("run_subprocess"))
    assert result.ok, result.error
    no_canary(result)
    assert "CapEff:\t0000000000000000" in result.payload["value"]  # no capability, even as uid 0 inside
    assert "NoNewPrivs:\t1" in result.payload["value"]


def test_no_network_even_to_the_host(pool: WorkerPool) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        result = pool.run(call("connect", listener.getsockname()[1]))
    finally:
        listener.close()
    assert result.ok and result.payload["value"].startswith("refused")


def _sleepers(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and Path(f"/proc/{entry}/cmdline").read_bytes() == b"sleep\0" + marker.encode() + b"\0":
                found.append(int(entry))
        except OSError:
            continue
    return found


def test_a_setsid_fork_storm_leaves_no_process(pool: WorkerPool) -> None:
    marker = "98765.4321"
    result = pool.run(call("setsid_storm", 50, marker))
    assert result.ok and result.payload["value"] == 50
    deadline = time.monotonic() + 5
    while _sleepers(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sleepers(marker) == []
    assert pool.run(call("echo", "still serving")).payload == {"value": "still serving"}


def test_secret_values_are_scrubbed_from_results_and_output(pool: WorkerPool) -> None:
    """However a secret reaches a candidate (here: in its own arguments), it never comes back."""
    echoed = pool.run(call("echo", f"key={CANARIES['ANTHROPIC_API_KEY']}"))
    assert echoed.payload == {"value": "key=[secret removed]"}
    failed = pool.run(call("print_and_fail", CANARIES["DATABASE_URL"]))
    assert not failed.ok
    no_canary(failed)
    assert "[secret removed]" in (failed.error or "")


def test_the_server_is_not_dumpable(pool: WorkerPool) -> None:
    libc = ctypes.CDLL(None)
    assert libc.prctl(3, 0, 0, 0, 0) == 0  # PR_GET_DUMPABLE: /proc/<server>/environ is closed


def test_the_environment_is_an_allow_list() -> None:
    base = {"PATH": "/usr/bin", "LANG": "C.UTF-8", "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "0",
            "DATABASE_URL": "postgres://x", "GH_PAT": "ghp_x", "TRITON_API_KEY": "secret-value-1"}
    env = worker_environment(base)
    assert {"PATH", "LANG", "TRITON_INTERPRET", "CUDA_VISIBLE_DEVICES"} <= set(env)
    assert not {"DATABASE_URL", "GH_PAT", "TRITON_API_KEY"} & set(env)
    secrets = secret_values({**base, "DATABASE_URL": "postgres://admin:pw@db/prod"})
    assert scrub("url postgres://admin:pw@db/prod", secrets) == "url [secret removed]"
    assert scrub("path /usr/bin", secrets) == "path /usr/bin"  # what the worker was given is no secret


def test_without_namespaces_the_pool_says_reduced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITONSMITH_SANDBOX", "reduced")
    with WorkerPool(1) as reduced:
        assert reduced.sandbox == JAIL_REDUCED
        assert reduced.run(call("echo", "ok")).payload == {"value": "ok"}


def test_bubblewrap_makes_the_namespaces_where_unshare_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where `unshare` may not make user namespaces (Ubuntu 24.04's AppArmor) but bubblewrap may,
    the jail uses bubblewrap; where neither can, there is no jail (and verdicts say reduced)."""
    from tritonsmith.evaluator import jail

    monkeypatch.delenv(JAIL_TOOL_ENV, raising=False)
    monkeypatch.setattr(jail, "UNSHARE", ("false",))  # an `unshare` that is refused
    jail._probe.cache_clear()
    try:
        bwrap = jail._probe("bwrap")
        jail._probe.cache_clear()
        assert jail.jail_prefix() == bwrap  # bubblewrap if it works here, else no jail
        monkeypatch.setattr(jail, "BWRAP", ("false",))
        jail._probe.cache_clear()
        assert jail.jail_prefix() is None and not jail.namespaces_available()
    finally:
        jail._probe.cache_clear()


def test_a_compile_job_leaves_no_temporary_folder() -> None:
    import tempfile

    before = set(Path(tempfile.gettempdir()).glob("tritonsmith-compile-*"))
    with WorkerPool(1, isolate_network=False) as plain:  # in a jail its /tmp is private anyway
        source = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x):\n    pass\n"
        result = plain.run(Job("compile", {"source": source, "kernel": "k", "targets": ["sm_90"]}, 120, 4096))
    assert result.ok, result.error
    assert set(Path(tempfile.gettempdir()).glob("tritonsmith-compile-*")) == before
