"""The failure log in `.tritonsmith/state.db`: recorded, counted, versioned, shared safely."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tritonsmith.errors import TritonsmithError
from tritonsmith.state import FailureLog
from tritonsmith.state.failure_log import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[2]


def test_records_failures_and_counts_rules(tmp_path: Path):
    log = FailureLog(tmp_path)
    log.record(path="k.py", kernel="k", stage="compile", message="arange's range must be a power of 2",
               rules=["TS101"], target="sm_90", config="Config #1")
    log.record(path="k.py", kernel="k", stage="compile", message="odd", rules=[])
    assert [f["rules"] for f in log.failures()] == [[], ["TS101"]]
    assert log.rule_counts() == {"TS101": 1}
    assert "state.db" in (tmp_path / ".tritonsmith" / ".gitignore").read_text()
    log.close()
    reopened = FailureLog(tmp_path)  # the data outlives the process
    assert reopened.rule_counts() == {"TS101": 1}


def test_concurrent_writers_lose_nothing(tmp_path: Path):
    logs = [FailureLog(tmp_path) for _ in range(3)]

    def write(log: FailureLog) -> None:
        for i in range(30):
            log.record(path="k.py", kernel="k", stage="compile", message=f"m{i}", rules=["TS901"])

    threads = [threading.Thread(target=write, args=(log,)) for log in logs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert logs[0].rule_counts() == {"TS901": 90}


def test_a_newer_schema_is_refused_not_dropped(tmp_path: Path):
    FailureLog(tmp_path).close()
    db = sqlite3.connect(tmp_path / ".tritonsmith" / "state.db")
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    with pytest.raises(TritonsmithError, match="newer tritonsmith"):
        FailureLog(tmp_path)


@pytest.mark.compiler
def test_verify_logs_compile_failures_in_the_workspace(tmp_path: Path):
    pytest.importorskip("triton")
    (tmp_path / "pyproject.toml").write_text("")
    kernel = tmp_path / "matmul.py"
    kernel.write_text((ROOT / "examples" / "mistakes" / "autotuned_matmul.py").read_text())
    subprocess.run([sys.executable, "-m", "tritonsmith", "verify", str(kernel)], capture_output=True, timeout=300)
    log = FailureLog(tmp_path)
    assert log.rule_counts().get("TS901") == 1  # num_warps=6 in Config #2
    assert log.failures()[0]["kernel"] == "matmul_kernel"


def _v1_database(root: Path) -> Path:
    """A state.db as schema 1 wrote it, with a search journal's table beside it."""
    folder = root / ".tritonsmith"
    folder.mkdir()
    path = folder / "state.db"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1'), ('search_schema_version', '1');
        CREATE TABLE failures (id INTEGER PRIMARY KEY, at REAL NOT NULL, path TEXT NOT NULL, kernel TEXT NOT NULL,
            stage TEXT NOT NULL, target TEXT, config TEXT, message TEXT NOT NULL, rules TEXT NOT NULL);
        CREATE TABLE rule_hits (code TEXT PRIMARY KEY, count INTEGER NOT NULL);
        INSERT INTO rule_hits VALUES ('TS101', 4);
        CREATE TABLE searches (id TEXT PRIMARY KEY, started REAL NOT NULL, finished REAL, status TEXT NOT NULL,
            path TEXT NOT NULL, kernel TEXT NOT NULL, task TEXT NOT NULL, settings TEXT NOT NULL);
        INSERT INTO searches VALUES ('s1', 1.0, NULL, 'running', 'k.py', 'k', '{}', '{}');
    """)
    db.execute("INSERT INTO failures(at, path, kernel, stage, message, rules) VALUES (1.0, 'k.py', 'k', 'compile', ?, '')",
               ("at 3:8:\n    y = x + z\n        ^\nNameError('z is not defined')",))
    db.commit()
    db.close()
    return path


def test_a_schema_1_database_migrates_forward_keeping_everything(tmp_path: Path):
    path = _v1_database(tmp_path)
    log = FailureLog(tmp_path)
    [old] = log.failures()
    assert old["message"].endswith("NameError('z is not defined')")
    assert old["signature"] == "NameError: <name> is not defined"  # computed on the way
    assert old["snippet"] is None and old["kernel_hash"] is None and old["induced"] is None
    assert log.rule_counts() == {"TS101": 4}
    log.close()
    db = sqlite3.connect(path)
    assert dict(db.execute("SELECT key, value FROM meta").fetchall()) == {
        "schema_version": str(SCHEMA_VERSION), "search_schema_version": "1"}
    assert db.execute("SELECT id FROM searches").fetchall() == [("s1",)]  # the journal's data is untouched
    db.close()


def test_records_the_signature_snippet_hash_and_version(tmp_path: Path):
    from tritonsmith.state import kernel_hash

    log = FailureLog(tmp_path)
    source = "@triton.jit\ndef k(x):\n    tl.float32(x)\n"
    failure = log.record(path="k.py", kernel="k", stage="compile", rules=[], target="sm_90",
                         message="TypeError(\"'dtype' object is not callable\")", snippet="    tl.float32(x)",
                         kernel_hash=kernel_hash(source), triton_version="3.9.0")
    [row] = log.failures()
    assert row["id"] == failure
    assert row["signature"] == "TypeError: 'dtype' object is not callable"
    assert row["snippet"] == "    tl.float32(x)"
    assert row["kernel_hash"] == kernel_hash(source) and len(row["kernel_hash"]) == 64
    assert (row["triton_version"], row["target"]) == ("3.9.0", "sm_90")


def test_two_processes_opening_an_old_database_migrate_it_once(tmp_path: Path):
    _v1_database(tmp_path)
    code = "import sys; from pathlib import Path; from tritonsmith.state import FailureLog; FailureLog(Path(sys.argv[1]))"
    processes = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stderr=subprocess.PIPE) for _ in range(3)]
    errors = [p.communicate(timeout=60)[1].decode() for p in processes]
    assert all(p.returncode == 0 for p in processes), errors
    assert len(FailureLog(tmp_path).failures()) == 1


def test_the_log_keeps_only_recent_and_reasonably_sized_files(tmp_path, monkeypatch):
    from tritonsmith.state import failure_log

    monkeypatch.setattr(failure_log, "MAX_SOURCES", 3)
    log = FailureLog(tmp_path)
    sources = [f"# file {i}\nx = tl.load(p)\n" for i in range(5)]
    ids = [log.record(path=f"f{i}.py", kernel="k", stage="compile", message="ValueError: bad", rules=[],
                      source=source, error_at=(1, 4)) for i, source in enumerate(sources)]
    # The two oldest texts are gone; their failures stay, no longer located.
    assert [text for text, *_ in log.located(ids)] == sources[2:]
    assert len(log.failures(limit=None)) == 5
    # A text that fails again becomes the newest: the next new text pushes out file 3, not file 2.
    again = log.record(path="f2.py", kernel="k", stage="compile", message="ValueError: bad", rules=[],
                       source=sources[2], error_at=(1, 4))
    new = log.record(path="f5.py", kernel="k", stage="compile", message="ValueError: bad", rules=[],
                     source="# file 5\n", error_at=(0, 0))
    assert [text for text, *_ in log.located([*ids, again, new])] == [sources[2], sources[4], sources[2], "# file 5\n"]
    # A huge file is not kept at all; the failure is recorded without it.
    huge = log.record(path="big.py", kernel="k", stage="compile", message="ValueError: bad", rules=[],
                      source="x = 1\n" * (failure_log.MAX_SOURCE_CHARS // 4), error_at=(0, 0))
    assert log.located([huge]) == [] and log.failures(limit=1)[0]["id"] == huge
    log.close()
