"""A learned matcher's conditions in words (`rules review`)."""

from __future__ import annotations

from tritonsmith.rules.checks.query import predicates_in_words


def test_a_matchers_predicates_read_as_words() -> None:
    query = ('((call function: (_) @fn arguments: (argument_list . (_) @o0 . (_) @o1)) @flag\n'
             ' (#ts-qualified? @fn "triton.language.dot")\n'
             ' (#ts-dtype? @o0 "fp16" "fp32")\n (#ts-rank? @o0 "2")\n'
             ' (#ts-dtype-differs? @o0 @o1))\n'
             '((unary_operator operator: _ @op argument: (_) @o0) @flag\n (#any-of? @op "~")\n'
             ' (#ts-dtype? @o0 "bf16" "fp16" "fp32" "fp64" "fp8e4b15" "fp8e4b8" "fp8e4nv" "fp8e5" "fp8e5b16")\n'
             ' (#ts-rank? @o0 "0"))\n'
             '((call function: (_) @fn arguments: (argument_list . (_) @o0)) @flag\n'
             ' (#ts-qualified? @fn "triton.language.zeros")\n (#ts-any-int? @o0 "!pow2"))')
    assert predicates_in_words(query) == [
        "the function is tl.dot; operand 1 has elements of fp16 or fp32; operand 1 is a 2-D block; "
        "operand 1 and operand 2 have different element types",
        "the operator is ~; operand 1 has elements of any floating-point type; operand 1 is a scalar",
        "the function is tl.zeros; operand 1 has a size that is not a power of two",
    ]


RESHAPES = '''import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, out_ptr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs)
    a = tl.reshape(x, (8, 16))
    b = tl.reshape(x, (8, 8))
    c = tl.permute(tl.reshape(x, (8, 8)), (1, 0))
    tl.store(out_ptr + offs, tl.reshape(a, (64,)) + tl.reshape(b, (64,)) + tl.reshape(c, (64,)))


def run(x):
    k[(1,)](x, torch.empty_like(x))
'''


def test_relations_between_operands_are_matched_with_the_kernels_types() -> None:
    from tritonsmith.rules import Matcher, Rule, Severity

    def flagged(query: str) -> list[str]:
        rule = Rule(code="TSL001", name="n", title="t", statement="s", severity=Severity.WARNING, category="c",
                    check="query", query=query)
        lines = RESHAPES.splitlines()
        return [lines[f.span.start[0]].strip() for f in Matcher([rule], version=None).check_source(RESHAPES)]

    numel = ('((call function: (_) @fn arguments: (argument_list . (_) @o0 . (_) @o1)) @flag\n'
             ' (#ts-qualified? @fn "triton.language.reshape" "triton.language.permute")\n'
             ' (#ts-numel-differs? @o0 @o1))')
    assert flagged(numel) == ["a = tl.reshape(x, (8, 16))"]  # 64 values into 128; (1, 0) is a permutation
    assert predicates_in_words(numel)[0].endswith("operand 1 and operand 2 have different numbers of elements")
