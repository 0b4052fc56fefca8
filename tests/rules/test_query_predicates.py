"""Learned rules' queries can ask for inferred dtypes and shapes (`#ts-dtype?`, `#ts-bitwidth?`,
`#ts-rank?`, `#ts-pointer?`) and sizes (`#ts-shape?`, `#ts-int?`): a bitcast rule tells 32 -> 16
bits from 32 -> 32, a dot rule K = 8 from K = 16, and nothing matches where the type or size is
not known."""

from __future__ import annotations

import pytest

from tritonsmith.rules import Rule, Severity
from tritonsmith.rules.checks.query import QUERY_CHECK, QueryProblem, compile_query
from tritonsmith.rules.matcher import Matcher

KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def bits_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x.to(tl.{target}, bitcast=True))


def bits():
    x = torch.empty(128, dtype=torch.{source}, device="cuda")
    out = torch.empty(128, dtype=torch.{target}, device="cuda")
    bits_kernel[(1,)](x, out, BLOCK=128)
'''

# A learned rule as graduation writes it: `x.to(<16-bit int>, bitcast=True)` of a 32-bit value.
NARROWING_BITCAST = (
    '((call function: (attribute object: (_) @x attribute: (identifier) @m) '
    'arguments: (argument_list (_) @dt (keyword_argument name: (identifier) @k value: (true)))) @flag '
    '(#eq? @m "to") (#eq? @k "bitcast") (#ts-bitwidth? @x "32") (#ts-qualified? @dt "tl.int16"))'
)


def _codes(query: str, source: str) -> list[str]:
    rule = Rule(code="TSL001", name="learned", title="learned", statement="You cannot do this.",
                severity=Severity.WARNING, category="L", check=QUERY_CHECK, query=query)
    return [f.code for f in Matcher([rule], version=(3, 9)).check_source(source)]


def test_a_bitwidth_predicate_tells_32_to_16_from_32_to_32():
    assert _codes(NARROWING_BITCAST, KERNEL.format(source="float32", target="int16")) == ["TSL001"]
    assert _codes(NARROWING_BITCAST, KERNEL.format(source="float16", target="int16")) == []
    same_width = NARROWING_BITCAST.replace('"tl.int16"', '"tl.int32"')
    assert _codes(same_width, KERNEL.format(source="float32", target="int32")) == ["TSL001"]
    assert _codes(same_width, KERNEL.format(source="float32", target="int32").replace("torch.float32", "torch.int64")) == []


@pytest.mark.parametrize(("predicate", "matches"), [
    ('(#ts-dtype? @x "fp32")', True),
    ('(#ts-dtype? @x "tl.float32" "bf16")', True),
    ('(#ts-dtype? @x "fp16")', False),
    ('(#ts-rank? @x "1")', True),
    ('(#ts-rank? @x "2")', False),
    ('(#ts-pointer? @x)', False),
])
def test_dtype_rank_and_pointer_predicates(predicate: str, matches: bool):
    query = f'((call function: (attribute object: (identifier) @x attribute: (identifier) @m)) @flag (#eq? @m "to") {predicate})'
    assert _codes(query, KERNEL.format(source="float32", target="int32")) == (["TSL001"] if matches else [])


def test_pointers_are_pointers():
    query = '((call function: (_) @f arguments: (argument_list . (_) @p)) @flag (#ts-qualified? @f "tl.load") (#ts-pointer? @p))'
    assert _codes(query, KERNEL.format(source="float32", target="int32")) == ["TSL001"]


def test_an_unknown_type_matches_no_predicate():
    # No launch site: the pointer's element type is not known, so neither fp32 nor "not fp16" is claimed.
    source = KERNEL.format(source="float32", target="int16").split("\n\ndef bits")[0] + "\n"
    assert _codes(NARROWING_BITCAST, source) == []


DOT = '''import torch
import triton
import triton.language as tl


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, BLOCK_K: tl.constexpr):
    rm = tl.arange(0, 32)
    rk = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptr + rm[:, None] * BLOCK_K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * 32 + rm[None, :])
    tl.store(c_ptr + rm[:, None] * 32 + rm[None, :], tl.dot(a, b))


def mm(a, b, c):
    mm_kernel[(1,)](a, b, c, BLOCK_K={k})
'''
DOT_QUERY = ('((call function: (_) @fn arguments: (argument_list . (_) @a . (_) @b)) @flag '
             '(#ts-qualified? @fn "tl.dot") {predicate})')


@pytest.mark.parametrize(("predicate", "k", "matches"), [
    ('(#ts-shape? @a "_" "<=8")', 8, True),
    ('(#ts-shape? @a "_" "<=8")', 16, False),
    ('(#ts-shape? @a "32" ">=16")', 64, True),
    ('(#ts-shape? @a "<=16" "_")', 8, False),  # 32 rows
    ('(#ts-shape? @a "_")', 8, False),  # a 2-D block is not of rank 1
    ('(#ts-shape? @b "<=8" "_")', 4, True),
])
def test_a_shape_predicate_reads_each_dimension_in_the_launch_configuration(predicate: str, k: int, matches: bool):
    assert _codes(DOT_QUERY.format(predicate=predicate), DOT.format(k=k)) == (["TSL001"] if matches else [])


def test_an_unknown_size_meets_no_bound():
    # No launch site: BLOCK_K is not known, so the block is 2-D with a second dimension of no known size.
    source = DOT.format(k=8).split("\n\ndef mm(")[0].replace(
        "a = tl.load(a_ptr + rm[:, None] * BLOCK_K + rk[None, :])", "a = tl.zeros((32, BLOCK_K), dtype=tl.float16)") + "\n"
    assert _codes(DOT_QUERY.format(predicate='(#ts-shape? @a "_" "<=8")'), source) == []
    assert _codes(DOT_QUERY.format(predicate='(#ts-shape? @a "32" "_")'), source) == ["TSL001"]


ARANGE_QUERY = ('((call function: (_) @fn arguments: (argument_list . (_) . (_) @n)) @flag '
                '(#ts-qualified? @fn "tl.arange") {predicate})')


@pytest.mark.parametrize(("predicate", "matches"), [
    ('(#ts-int? @n "!pow2")', ["tl.arange(0, 100)", "tl.arange(0, BLOCK)"]),
    ('(#ts-int? @n "pow2")', ["tl.arange(0, 64)"]),
    ('(#ts-int? @n ">=64" "<=100")', ["tl.arange(0, 64)", "tl.arange(0, 100)", "tl.arange(0, BLOCK)"]),
    ('(#ts-int? @n "96")', ["tl.arange(0, BLOCK)"]),
])
def test_an_integer_predicate_reads_literals_and_constexpr_values(predicate: str, matches: list[str]):
    source = '''import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    a = tl.load(x_ptr + tl.arange(0, 64))
    b = tl.load(x_ptr + tl.arange(0, 100))
    c = tl.load(x_ptr + tl.arange(0, BLOCK))
    d = tl.load(x_ptr + tl.arange(0, n))
    tl.store(x_ptr, tl.sum(a) + tl.sum(b) + tl.sum(c) + tl.sum(d))


def run(x):
    k[(1,)](x, x.numel(), BLOCK=96)
'''
    rule = Rule(code="TSL001", name="learned", title="learned", statement="You cannot do this.",
                severity=Severity.WARNING, category="L", check=QUERY_CHECK, query=ARANGE_QUERY.format(predicate=predicate))
    lines = source.splitlines()
    found = [lines[f.span.start[0]].strip() for f in Matcher([rule], version=(3, 9)).check_source(source)]
    # `n` is a run-time argument: no integer predicate claims anything of it.
    assert [next(m for m in matches if m in line) for line in found] == matches and len(found) == len(matches)


@pytest.mark.parametrize("bad", ['(#ts-dtype? @x "float")', '(#ts-bitwidth? @x "wide")', '(#ts-rank? @x "-1")',
                                 '(#ts-shape? @x "<=a")', '(#ts-shape? @x "<16")', '(#ts-int? @x "_")',
                                 '(#ts-int? @x "power")'])
def test_values_outside_the_vocabulary_are_refused(bad: str):
    with pytest.raises(QueryProblem):
        compile_query(f'((identifier) @x @flag {bad})')
