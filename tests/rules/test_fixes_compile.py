"""A quick fix writes code that compiles (issue 34): every builtin rule's fix, applied to its
bad example and to the probes below, gives a file the real Triton compiles for sm_90, and
`check` finds nothing of that rule in it. A fix that swaps one error for another (TS109's
`(-float("inf")).to(tl.float32)`: a Python float has no `.to`) fails here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritonsmith.rules import Matcher, Rule, load_rules, pack_paths
from tritonsmith.rules.fixes import apply_fixes
from tritonsmith.version import installed_triton_version

pytestmark = [pytest.mark.compiler, pytest.mark.slow]

HERE = Path(__file__).parent
VERSION = installed_triton_version()
BUILTIN = {r.code: r for r in load_rules(pack_paths(None, include_user=False))}

HEADER = "import triton\nimport triton.language as tl\n\n\n"

# Places a fix meets in real code that the rules' bad examples do not show.
PROBES: dict[str, tuple[str, str]] = {
    "TS109:python-number": ("TS109", HEADER + '''@triton.jit
def row_max_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=float("-inf"))
    start = tl.float32(-float("inf"))
    scale = tl.float32(1.5)
    width = tl.float32(BLOCK)
    tl.store(out_ptr, tl.maximum(start, tl.max(x, axis=0)) * scale + width)


def row_max(x, out):
    row_max_kernel[(1,)](x, out, x.numel(), BLOCK=128)
'''),
    "TS109:tensor": ("TS109", HEADER + '''@triton.jit
def half_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, tl.float16(x * 2), mask=offs < n)


def half(x, out):
    half_kernel[(1,)](x, out, x.numel(), BLOCK=128)
'''),
    "TS101:launch-literal": ("TS101", HEADER + '''@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def copy(x, y):
    n = x.numel()
    copy_kernel[(triton.cdiv(n, 1000),)](x, y, n, BLOCK=1000)
'''),
    "TS101:config-literal": ("TS101", HEADER + '''@triton.autotune(configs=[triton.Config({"BLOCK": 48}, num_warps=4)], key=["n"])
@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def copy(x, y):
    n = x.numel()
    copy_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
'''),
}


def _findings(rule: Rule, source: str) -> list:
    version = max((3, minor) for minor in range(0, 10) if rule.applies_to((3, minor)))
    return Matcher([rule], version=version).check_source(source)


def _fixed_examples() -> dict[str, tuple[Rule, str]]:
    """Each fixable probe, fixed: {key: (rule, fixed source)}."""
    out = {}
    sources = {code: (code, rule.bad) for code, rule in BUILTIN.items() if rule.check and rule.fix and rule.bad}
    sources.update(PROBES)
    for key, (code, source) in sources.items():
        rule = BUILTIN[code]
        if VERSION is not None and not rule.applies_to(VERSION):
            continue
        fixable = [f for f in _findings(rule, source) if f.fix]
        if fixable:
            out[key] = (rule, apply_fixes(source.encode(), fixable).decode())
    return out


FIXED = _fixed_examples()


def test_the_probes_are_fixable():
    """A probe without a fix would test nothing: TS109 on a Python number and TS101 at a
    literal launch value or Config entry offer one."""
    assert set(PROBES) <= set(FIXED), sorted(set(PROBES) - set(FIXED))
    assert "tl.cast(-float(\"inf\"), tl.float32)" in FIXED["TS109:python-number"][1]
    assert "x * 2).to(tl.float16)" in FIXED["TS109:tensor"][1]
    assert "cdiv(n, 1024),)](x, y, n, BLOCK=1024)" in FIXED["TS101:launch-literal"][1]
    assert '{"BLOCK": 64}' in FIXED["TS101:config-literal"][1]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[str, str | None]:
    if VERSION is None:
        pytest.skip("triton is not installed (pip install 'tritonsmith[eval]')")
    scratch = tmp_path_factory.mktemp("fixed")
    examples = [{"code": key, "source": source} for key, (_, source) in FIXED.items()]
    (scratch / "fixed.json").write_text(json.dumps(examples))
    subprocess.run([sys.executable, str(HERE / "compile_examples.py"), str(scratch / "fixed.json"),
                    str(scratch / "results.json")],
                   check=True, env=dict(os.environ, TRITON_CACHE_DIR=str(scratch / "cache")), timeout=900)
    return json.loads((scratch / "results.json").read_text())


@pytest.mark.parametrize("key", sorted(FIXED))
def test_a_fixed_file_compiles_and_is_clean(key: str, compiled):
    rule, source = FIXED[key]
    assert _findings(rule, source) == [], f"{key}: the fix left findings:\n{source}"
    error = compiled[key]
    assert error is None, f"{key}: the fixed file does not compile:\n{source}\n{error[-3000:]}"
