"""The rule memory stays true to Triton: every rule that says the compiler rejects its bad
example is checked against the real compiler (sm_90, no GPU needed), and its good example must
compile. Runs the compiles in one subprocess, since compiling imports triton."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritonsmith.rules import load_rules, pack_paths
from tritonsmith.version import installed_triton_version

pytestmark = [pytest.mark.compiler, pytest.mark.slow]

HERE = Path(__file__).parent
VERSION = installed_triton_version()
RULES = [
    r for r in load_rules(pack_paths(None, include_user=False))
    if r.compiler_rejects and VERSION is not None and r.applies_to(VERSION)
]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[str, dict[str, str | None]]:
    if VERSION is None:
        pytest.skip("triton is not installed (pip install 'tritonsmith[eval]')")
    scratch = tmp_path_factory.mktemp("compile")
    out: dict[str, dict[str, str | None]] = {}
    for kind in ("bad", "good"):
        examples = [{"code": r.code, "source": getattr(r, kind)} for r in RULES]
        (scratch / f"{kind}.json").write_text(json.dumps(examples))
        env = dict(os.environ, TRITON_CACHE_DIR=str(scratch / "cache"))
        subprocess.run(
            [sys.executable, str(HERE / "compile_examples.py"), str(scratch / f"{kind}.json"),
             str(scratch / f"{kind}-results.json")],
            check=True, env=env, timeout=900,
        )
        out[kind] = json.loads((scratch / f"{kind}-results.json").read_text())
    return out


def test_there_are_compiler_checked_rules():
    assert VERSION is None or len(RULES) >= 20


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_compiler_rejects_bad_example_with_the_rules_signature(rule, compiled):
    error = compiled["bad"][rule.code]
    assert error is not None, f"{rule.code}: the bad example compiled with triton {VERSION}"
    assert rule.matches_error(error), f"{rule.code}: no signature matches:\n{error[-3000:]}"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_compiler_accepts_good_example(rule, compiled):
    error = compiled["good"][rule.code]
    assert error is None, f"{rule.code}: the good example failed to compile:\n{error[-3000:]}"
