"""AdaExplore's metrics against values computed by hand."""

from __future__ import annotations

import math

import pytest

from tritonsmith.benchmark.metrics import TaskOutcome, aggregate, fast_p

OUTCOMES = [
    TaskOutcome("a", True, 25.0),  # clamped to 10
    TaskOutcome("b", True, 2.0),  # exactly 2: not Fast@2 (strict)
    TaskOutcome("c", True, 1.2),  # exactly 1.2: not Fast@1.2
    TaskOutcome("d", True, 0.5),
    TaskOutcome("e", False, None),  # counts 0 in the mean, 0.1 in GM(10)
]


def test_the_aggregate_matches_hand_computed_values() -> None:
    result = aggregate(OUTCOMES)
    assert result.tasks == 5
    assert result.accuracy == pytest.approx(4 / 5)
    assert result.mean_speedup == pytest.approx((10 + 2 + 1.2 + 0.5 + 0) / 5)
    assert result.fast_1_2 == pytest.approx(2 / 5)  # 10 and 2
    assert result.fast_2 == pytest.approx(1 / 5)  # only the clamped one
    assert result.gm10 == pytest.approx(math.exp((math.log(10) + math.log(2) + math.log(1.2) + math.log(0.5)
                                                  + math.log(0.1)) / 5))


def test_fast_p_is_strict_and_over_all_tasks() -> None:
    assert fast_p(OUTCOMES, 1.0) == pytest.approx(3 / 5)
    assert fast_p([TaskOutcome("x", True, 1.0)], 1.0) == 0.0
    assert fast_p([TaskOutcome("x", False, 3.0)], 1.0) == 0.0  # a speedup without correctness counts nothing


def test_no_tasks_and_non_finite_speedups() -> None:
    assert aggregate([]).accuracy == 0.0
    inf = aggregate([TaskOutcome("x", True, math.inf)])
    assert inf.mean_speedup == 0.0 and inf.gm10 == pytest.approx(0.1)
