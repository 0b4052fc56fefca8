"""Analysis never raises on broken code: the index and the full matcher with every builtin rule
take arbitrary text, half-typed kernels, huge files, deep nesting, NUL bytes and invalid UTF-8.

A check that raises is caught by the matcher and logged, which would hide it here; so every
test also asserts that no check logged an exception.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tritonsmith.analysis.document import Document
from tritonsmith.analysis.index import index_module
from tritonsmith.rules import Matcher, load_rules, pack_paths

FIXTURES = Path(__file__).parent.parent / "fixtures" / "do_not_flag"
MATCHER = Matcher(load_rules(pack_paths(None, include_user=False)), version=(3, 9))
REAL = (FIXTURES / "matmul_autotune.py").read_text(encoding="utf-8")
REAL_FILES = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*.py"))]
HYPOTHESIS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


class CheckFailures(logging.Handler):
    """Collects the exceptions the matcher logs when a check raises."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(autouse=True, scope="module")
def check_failures():
    handler = CheckFailures()
    logger = logging.getLogger("tritonsmith")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


def analyse(source: str | bytes, failures: CheckFailures | None = None) -> list[str]:
    """Index and check `source`; neither may raise, and no check may fail."""
    before = len(failures.records) if failures is not None else 0
    document = Document(source)
    index = index_module(document.root)
    for kernel in index.kernels:
        assert kernel.name is not None
    MATCHER.check_module(document.source, index)
    MATCHER.check_source(source)
    if failures is not None:
        new = failures.records[before:]
        assert not new, "a check raised:\n" + "\n".join(
            f"{r.getMessage()}\n{logging.Formatter().formatException(r.exc_info)}"
            for r in new if r.exc_info
        ) + "\non source:\n" + repr(source)[:3000]
    return [kernel.name for kernel in index.kernels]


# -- arbitrary text -----------------------------------------------------------------------


@HYPOTHESIS
@given(st.text())
def test_arbitrary_text(check_failures, source):
    analyse(source, check_failures)


PYTHONISH = st.lists(
    st.sampled_from([
        "@triton.jit\n", "def k(", "x_ptr", ", ", "BLOCK: tl.constexpr", "):\n", "    ",
        "tl.arange(0, ", "BLOCK", ")", "tl.zeros([", "], tl.float32)", "tl.load(", "mask=",
        "tl.dot(a, b)", "for i in range(", "tl.static_range(", "while ", "if ", ":\n",
        "return ", "[grid](", "k", "(", ")", "[", "]", "{", "}", "\n", "lambda meta: ",
        "triton.Config({'BLOCK': 128}, num_warps=4)", "@triton.autotune(configs=[", "key=['n'])\n",
        "@triton.heuristics({'E': lambda a: 1})\n", "import triton\n", "import triton.language as tl\n",
        "from triton.language.extra.libdevice import pow\n", "= ", "+ ", "** ", "'", '"', "#",
        "é", "\U0001F680", "\t", "\\", "2 ** i", "tl.make_block_ptr(", "tl.advance(", ".to(tl.int64)",
        "tl.atomic_add(", "tl.reshape(x, [", "tl.program_id(0)", "x: tl.constexpr = ", "global ",
    ]),
    max_size=80,
).map("".join)


@HYPOTHESIS
@given(PYTHONISH)
def test_token_soup(check_failures, source):
    analyse(source, check_failures)


# -- half-typed code ----------------------------------------------------------------------


@HYPOTHESIS
@given(st.data())
def test_truncations_and_deletions_of_a_real_kernel(check_failures, data):
    source = data.draw(st.sampled_from(REAL_FILES))
    cut = data.draw(st.integers(0, len(source)))
    analyse(source[:cut], check_failures)  # typing stopped here
    start = data.draw(st.integers(0, len(source)))
    end = data.draw(st.integers(start, min(len(source), start + 400)))
    analyse(source[:start] + source[end:], check_failures)  # a selection deleted


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(REAL)), st.integers(0, 60)), min_size=1, max_size=6))
def test_many_deletions_of_a_real_kernel(check_failures, cuts):
    source = REAL
    for start, length in cuts:
        start = min(start, len(source))
        source = source[:start] + source[start + length:]
    analyse(source, check_failures)


def test_every_prefix_by_line_of_every_fixture(check_failures):
    """Typing each fixture top to bottom, a line at a time (and the line half typed)."""
    for source in REAL_FILES:
        lines = source.split("\n")
        for row in range(len(lines)):
            prefix = "\n".join(lines[:row])
            analyse(prefix + "\n" + lines[row][: len(lines[row]) // 2], check_failures)


# -- size and depth -----------------------------------------------------------------------


def many_kernels(target_bytes: int) -> str:
    header = "import torch\nimport triton\nimport triton.language as tl\n\n"
    body = REAL.split("import triton.language as tl\n", 1)[1]
    parts = [header]
    size, n = len(header), 0
    while size < target_bytes:
        chunk = body.replace("matmul_kernel", f"matmul_kernel_{n}").replace("def matmul(", f"def matmul_{n}(")
        parts.append(chunk)
        size += len(chunk)
        n += 1
    return "".join(parts)


@pytest.mark.slow
def test_one_megabyte_file(check_failures):
    source = many_kernels(1_000_000)
    assert len(source) >= 1_000_000
    started = time.perf_counter()
    document = Document(source)
    index = index_module(document.root)
    findings = MATCHER.check_module(document.source, index)
    elapsed = time.perf_counter() - started
    assert len(index.kernels) > 200
    assert all(len(k.launches) == 1 for k in index.kernels)
    assert isinstance(findings, list)
    assert elapsed < 60, f"checking a 1 MB file took {elapsed:.1f} s"
    assert not check_failures.records


def kernel_around(body: str) -> str:
    return (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def deep(x_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n" + body + "\n"
    )


def test_deeply_nested_parentheses(check_failures):
    depth = 500
    expr = "(" * depth + "tl.load(x_ptr + offs)" + ")" * depth
    assert analyse(kernel_around(f"    y = {expr}\n    tl.store(x_ptr + offs, y)"), check_failures) == ["deep"]


def test_deeply_nested_calls_and_subscripts(check_failures):
    depth = 300
    calls = "tl.abs(" * depth + "offs" + ")" * depth
    subscripts = "x" + "[0]" * depth
    lists = "[" * depth + "BLOCK" + "]" * depth
    assert analyse(kernel_around(f"    y = {calls}\n    z = {subscripts}\n    w = tl.zeros({lists}, tl.float32)"),
            check_failures) == ["deep"]


def test_deeply_nested_ifs(check_failures):
    depth = 200
    lines = [("    " * (i + 1)) + f"if n > {i}:" for i in range(depth)]
    lines.append("    " * (depth + 1) + "tl.store(x_ptr + offs, tl.zeros([BLOCK], tl.float32))")
    assert analyse(kernel_around("\n".join(lines)), check_failures) == ["deep"]


def test_deeply_nested_loops_and_binary_operators(check_failures):
    depth = 150
    lines = [("    " * (i + 1)) + f"for i{i} in range(0, n, BLOCK):" for i in range(depth)]
    lines.append("    " * (depth + 1) + "offs += " + " + ".join(["1"] * 2000))
    assert analyse(kernel_around("\n".join(lines)), check_failures) == ["deep"]


def test_nesting_deeper_than_the_recursion_limit(check_failures):
    depth = sys.getrecursionlimit() + 100
    analyse(kernel_around("    y = " + "-" * depth + "offs"), check_failures)
    analyse(kernel_around("    y = " + "(" * depth + "offs" + ")" * depth), check_failures)


def test_very_long_lines_and_many_parameters(check_failures):
    params = ", ".join(f"p{i}: tl.constexpr" for i in range(2000))
    source = f"import triton\nimport triton.language as tl\n\n@triton.jit\ndef k({params}):\n    pass\n"
    analyse(source, check_failures)
    analyse(kernel_around("    y = offs" + " * 2" * 5000), check_failures)


# -- bytes that are not text --------------------------------------------------------------


def test_nul_bytes_and_invalid_utf8(check_failures):
    base = REAL.encode("utf-8")
    analyse(b"\x00" * 100, check_failures)
    analyse(base.replace(b"tl.arange", b"tl.ar\x00ange"), check_failures)
    analyse(base.replace(b"BLOCK_K", b"BLOCK_\xff\xfe"), check_failures)
    analyse(b"\xff\xfe\xfd" + base, check_failures)
    analyse(base[: len(base) // 2] + b"\xc3" + base[len(base) // 2:], check_failures)
    analyse(base.replace(b"\n", b"\r"), check_failures)  # old Mac line breaks
    analyse(base.replace(b"    ", b"\t"), check_failures)
    analyse("\ufeff".encode() + base, check_failures)  # a BOM


@HYPOTHESIS
@given(st.binary(max_size=400), st.integers(0, len(REAL)))
def test_arbitrary_bytes_inside_a_kernel(check_failures, junk, position):
    base = REAL.encode("utf-8")
    analyse(base[:position] + junk + base[position:], check_failures)


@HYPOTHESIS
@given(st.binary(max_size=2000))
def test_arbitrary_bytes(check_failures, source):
    analyse(source, check_failures)
