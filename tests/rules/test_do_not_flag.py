"""Correct real-world Triton kernels get no error from any builtin rule.

Each file in `tests/fixtures/do_not_flag/` is a correct kernel module built from the patterns of
the reference's "do not flag" list. A file may name the Triton version it is written for on its
first line (`# triton-version: 3.6`); the default is 3.9.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tritonsmith.analysis.document import Document
from tritonsmith.analysis.index import index_module
from tritonsmith.rules import Matcher, Severity, load_rules, pack_paths

FIXTURES = Path(__file__).parent.parent / "fixtures" / "do_not_flag"
FILES = sorted(FIXTURES.glob("*.py"))
DEFAULT_VERSION = (3, 9)
RULES = load_rules(pack_paths(None, include_user=False))


def file_version(source: str) -> tuple[int, int]:
    first = source.split("\n", 1)[0]
    match = re.match(r"#\s*triton-version:\s*(\d+)\.(\d+)", first)
    return (int(match.group(1)), int(match.group(2))) if match else DEFAULT_VERSION


def describe(path: Path, source: str, findings) -> str:
    lines = source.split("\n")
    return "\n".join(
        f"{path.name}:{f.span.start[0] + 1}:{f.span.start[1] + 1}: {f.code} {f.name} "
        f"[{f.severity.value}] {f.message}\n    {lines[f.span.start[0]].strip()}"
        for f in findings
    )


def test_there_are_fixtures():
    assert len(FILES) >= 8


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_fixture_has_kernels(path: Path):
    """A fixture whose kernels the index does not find would pass vacuously."""
    index = index_module(Document(path.read_bytes()).root)
    assert index.kernels, f"{path.name} has no kernel the index recognises"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_error_on_correct_kernels(path: Path):
    source = path.read_text(encoding="utf-8")
    matcher = Matcher(RULES, version=file_version(source))
    errors = [f for f in matcher.check_source(source) if f.severity is Severity.ERROR]
    assert not errors, "false positives:\n" + describe(path, source, errors)


def test_version_marker_is_read():
    assert file_version("# triton-version: 3.6\nimport triton\n") == (3, 6)
    assert file_version("import triton\n") == DEFAULT_VERSION
    assert file_version((FIXTURES / "block_pointers.py").read_text()) == (3, 6)


WRAPPED = '''
import triton
import triton.language as tl


@triton.jit
def nearest_2x(out_ptr, in_ptr, N, C, OH, OW, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ow = idx % OW
    oh = idx // OW{wrap}
    plane = tl.program_id(1)
    planes = tl.num_programs(1)
    out_ptr += (plane * OH + oh) * OW + ow
    in_ptr += (plane * (OH // 2) + oh // 2) * (OW // 2) + ow // 2
    while plane < N * C:
        tl.store(out_ptr, tl.load(in_ptr))
        out_ptr += planes * OH * OW
        in_ptr += planes * (OH // 2) * (OW // 2)
        plane += planes
'''


def test_offsets_wrapped_by_a_modulus_stay_in_bounds_even_through_a_loop():
    """Found in FlagGems' nearest upsample: the lanes past the plane's end wrap around (`% OW`,
    `% OH`) and store in-bounds values again, so the unmasked store is fine; without the second
    modulus the rows run past the plane and the warning stands."""
    matcher = Matcher(RULES, version=DEFAULT_VERSION)
    assert [f.code for f in matcher.check_source(WRAPPED.format(wrap=" % OH")) if f.code == "TS508"] == []
    assert [f.code for f in matcher.check_source(WRAPPED.format(wrap="")) if f.code == "TS508"] == ["TS508"]


MASKED_LOAD = '''
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, flags_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    keep = offs {compare} n
    flags = tl.load(flags_ptr + offs, mask=keep).to(tl.int1)
    counts = flags.to(tl.int32)
    slots = tl.cumsum(counts, axis=0) - 1
    x = tl.load(x_ptr + offs, mask=keep)
    scaled = -x
    tl.store(out_ptr + slots, x, mask=keep & flags)
    tl.store(out_ptr + n, tl.sum(scaled))
'''


def test_a_masked_load_is_followed_through_names_to_its_reduction_but_a_tail_prefix_sum_is_exact():
    """TS502 follows `x -> scaled = -x -> tl.sum(scaled)` (found missing in attorch's NLL loss),
    and leaves `tl.cumsum` of a load masked only past a bound alone: a prefix sum never reads the
    later lanes (found flagged in FlagGems' masked_select). A mask that drops leading lanes still
    corrupts the prefix sum."""
    matcher = Matcher(RULES, version=DEFAULT_VERSION)

    def flagged(compare: str) -> list[int]:
        return [f.span.start[0] for f in matcher.check_source(MASKED_LOAD.format(compare=compare)) if f.code == "TS502"]

    assert flagged("<") == [12]  # the `x` load, through `scaled`; not the flags' prefix sum
    assert flagged(">=") == [9, 12]
