"""`tritonsmith adapt induce` and `tritonsmith rules review` through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tritonsmith.cli import main
from tritonsmith.state import FailureLog, kernel_hash, load_learned

DTYPE_CALL = "TypeError(\"'tuple' object is not callable\")"
NOT_DEFINED = "at 1:4:\n    x\n    ^\nNameError('{} is not defined')"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    log = FailureLog(tmp_path)
    for i, kernel in enumerate(("k1", "k1", "k2")):
        log.record(path=f"{kernel}.py", kernel=kernel, stage="compile", message=DTYPE_CALL, rules=[],
                   kernel_hash=kernel_hash(str(i)))
    for i in range(3):
        log.record(path="one.py", kernel="only", stage="compile", message=NOT_DEFINED.format(f"v{i}"), rules=[],
                   kernel_hash=kernel_hash(f"v{i}"))
    log.close()
    return tmp_path


def test_induce_prints_what_it_learned_and_review_accepts_and_rejects(workspace: Path, capsys):
    assert main(["adapt", "induce", str(workspace)]) == 0
    out = capsys.readouterr().out
    assert "TSL002 new     active   3 failures in 2 kernels (+3)  tuple-object-not-callable" in out
    assert "TSL001 new     pending  3 failures in 1 kernel (+3)  not-defined" in out
    assert "held: seen in 1 kernel; needs 2" in out
    assert main(["adapt", "induce", str(workspace)]) == 0
    assert "nothing learned" in capsys.readouterr().out

    assert main(["rules", "review", str(workspace)]) == 0
    review = capsys.readouterr().out
    assert "TSL001  pending  not-defined" in review and "TSL002" not in review
    assert "failures: 4, 5, 6" in review and "example: NameError('v0 is not defined')" in review

    assert main(["rules", "review", str(workspace), "--accept", "TSL001", "--reject", "TSL002"]) == 0
    assert "TSL001 accepted: active" in capsys.readouterr().out
    rules = {r.code: r for r in load_learned(workspace)}
    assert (rules["TSL001"].status, rules["TSL001"].reviewed, rules["TSL001"].hold) == ("active", True, None)
    assert (rules["TSL002"].status, rules["TSL002"].reviewed) == ("rejected", True)
    assert main(["rules", "review", str(workspace)]) == 0
    assert "no pending rules" in capsys.readouterr().out
    assert main(["rules", "review", str(workspace), "--all", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["code"], r["status"]) for r in listed] == [("TSL001", "active"), ("TSL002", "rejected")]


def test_review_of_an_unknown_code_is_a_usage_error(workspace: Path, capsys):
    main(["adapt", "induce", str(workspace)])
    assert main(["rules", "review", str(workspace), "--accept", "TSL099"]) == 2
    assert "no rule TSL099" in capsys.readouterr().err


def test_induce_json_and_a_broken_pack(workspace: Path, capsys):
    (workspace / ".tritonsmith" / "rules.toml").write_text("[[rules]\n")
    assert main(["adapt", "induce", str(workspace)]) == 2
    assert "rules.toml:1: invalid TOML" in capsys.readouterr().err
    (workspace / ".tritonsmith" / "rules.toml").unlink()
    assert main(["adapt", "induce", str(workspace), "--format", "json", "--min-kernels", "1"]) == 0
    learned = json.loads(capsys.readouterr().out)
    assert [(r["code"], r["status"], r["count"], r["new"]) for r in learned] == [
        ("TSL001", "active", 3, True), ("TSL002", "active", 3, True)]
