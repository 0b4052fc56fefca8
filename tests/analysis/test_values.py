"""analysis/values.py: the one folder of the small expressions constexprs and sizes are written
with, as the checks (`evaluate`) and the size planner (`compile_expression`, evaluator/sizes.py)
use it."""

from __future__ import annotations

from typing import Any

import pytest

from tritonsmith.analysis import Document
from tritonsmith.analysis.syntax import dotted_name
from tritonsmith.analysis.values import UNKNOWN, compile_expression, evaluate


def _expression(source: str) -> Any:
    statement = Document(f"x = {source}\n").root.named_children[0]
    return statement.named_children[0].child_by_field_name("right")


@pytest.mark.parametrize(("source", "env", "value"), [
    ("2 * BLOCK + 1", {"BLOCK": 64}, 129),
    ("1 << 10", {}, 1024),
    ("-N", {"N": 3}, -3),
    ("~0", {}, -1),
    ("(M, N)", {"M": 2, "N": 3}, (2, 3)),
    ("(B, *shape)", {"B": 2, "shape": (3, 4)}, (2, 3, 4)),
    ("shape[1]", {"shape": (3, 4)}, 4),
    ("shape[-1]", {"shape": (3, 4)}, 4),
    ("(1, 2) + (3,)", {}, (1, 2, 3)),
    ("(8,) * 2", {}, (8, 8)),
    ("True", {}, True),
    ("None", {}, None),
    ("'evict_last'", {}, "evict_last"),
    ("4_096", {}, 4096),
    ("0x10", {}, 16),
])
def test_folds(source: str, env: dict[str, Any], value: Any) -> None:
    assert evaluate(_expression(source), env) == value


@pytest.mark.parametrize(("source", "env"), [
    ("N", {}),  # an unbound name
    ("N + 1", {}),
    ("1 / 0", {}),  # an error folds to unknown, never raises
    ("2 ** 100", {}),  # nothing a size or a block is written with
    ("1 << 100", {}),
    ("(1,) * 1000", {}),
    ("shape[5]", {"shape": (1, 2)}),
    ("(B, *n)", {"B": 1, "n": 3}),  # a splat of a non-tuple
    ("a < b", {"a": 1, "b": 2}),  # comparisons are not folded
    ("f(1)", {}),  # no qualify: no call folds
])
def test_unknown(source: str, env: dict[str, Any]) -> None:
    assert evaluate(_expression(source), env) is UNKNOWN


def test_a_tuple_keeps_what_it_cannot_fold_as_unknown() -> None:
    assert evaluate(_expression("(BLOCK, N)"), {"BLOCK": 16}) == (16, UNKNOWN)


def test_calls_fold_through_the_names_given() -> None:
    qualify = lambda node: {"triton.next_power_of_2": "triton.next_power_of_2"}.get(dotted_name(node) or "",  # noqa: E731
                                                                                        dotted_name(node))
    assert evaluate(_expression("triton.next_power_of_2(N)"), {"N": 100}, qualify) == 128
    assert evaluate(_expression("max(*shape)"), {"shape": (3, 9)}, qualify) == 9
    assert evaluate(_expression("max(a, key=b)"), {"a": 1, "b": 2}, qualify) is UNKNOWN
    assert evaluate(_expression("len(shape)"), {"shape": (3, 9)}, qualify) is UNKNOWN  # not foldable here
    compiled = compile_expression(_expression("len(shape) * n"), dotted_name, calls={"len": len})
    assert [compiled({"shape": s, "n": 4}) for s in ((1,), (1, 2), (1, 2, 3))] == [4, 8, 12]
