"""Learned rules' queries can ask for inferred dtypes and shapes (`#ts-dtype?`, `#ts-bitwidth?`,
`#ts-rank?`, `#ts-pointer?`): a bitcast rule tells 32 -> 16 bits from 32 -> 32, and nothing
matches where the type is not known."""

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


@pytest.mark.parametrize("bad", ['(#ts-dtype? @x "float")', '(#ts-bitwidth? @x "wide")', '(#ts-rank? @x "-1")'])
def test_values_outside_the_vocabulary_are_refused(bad: str):
    with pytest.raises(QueryProblem):
        compile_query(f'((identifier) @x @flag {bad})')
