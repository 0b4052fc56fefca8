"""The failure log in `.tritonsmith/state.db`: recorded, counted, versioned, shared safely."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tritonsmith.adapt import FailureLog
from tritonsmith.adapt.failure_log import SCHEMA_VERSION
from tritonsmith.errors import TritonsmithError

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
