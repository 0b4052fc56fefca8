"""bench/search_stats.py's baselines and statistics: the random and grid baselines set the
block of every launch wherever it is written (a multi-line launch, a local, two kernels), the
random-moves ablation draws from the tree's own nodes, and the summary's intervals and paired
differences are the textbook ones."""

from __future__ import annotations

import random
import statistics
from pathlib import Path
from types import ModuleType

import pytest
from bench_scripts import load

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ROOT / "bench" / "problems"


@pytest.fixture(scope="module")
def stats() -> ModuleType:
    return load("search_stats")


def test_the_random_baseline_moves_every_launch_of_a_two_kernel_launcher(stats: ModuleType) -> None:
    source = (PROBLEMS / "bias_silu.py").read_text()
    sizes = iter([256, 1024])
    variant = stats.knob_variant(source, lambda name, count: next(sizes), 8)
    assert "bias_add_kernel[grid](x, self.bias, tmp, n, x.shape[-1], BLOCK_SIZE=256, num_warps=8)" in variant
    assert "silu_kernel[grid](tmp, out, n, BLOCK_SIZE=1024, num_warps=8)" in variant


def test_a_multi_line_launch_with_calls_in_its_arguments_is_moved_too(stats: ModuleType) -> None:
    """`x.stride(0)` inside the launch's arguments once hid the block from a regex baseline,
    which then never moved: a random search that could not search."""
    source = (PROBLEMS / "linear_bias_relu.py").read_text()
    variant = stats.knob_variant(source, lambda name, count: {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 128}.get(name, 512),
                                 None)
    assert "BLOCK_M=64, BLOCK_N=32, BLOCK_K=128)" in variant
    assert "BLOCK_SIZE=512)" in variant and "num_warps" not in variant


def test_a_block_held_in_a_local_is_moved_where_it_is_set(stats: ModuleType) -> None:
    source = (PROBLEMS / "glu.py").read_text().replace(
        "        glu_kernel[grid](x, out, n, half, BLOCK_SIZE=16)\n",
        "        block = 16\n        glu_kernel[grid](x, out, n, half, BLOCK_SIZE=block, num_warps=4)\n")
    variant = stats.knob_variant(source, lambda name, count: 2048, 2)
    assert "block = 2048\n" in variant and "BLOCK_SIZE=block, num_warps=2)" in variant


def test_a_tiled_launch_draws_each_block_from_the_smaller_range(stats: ModuleType) -> None:
    assert max(stats.blocks_for(1)) == 4096 and max(stats.blocks_for(3)) == 256


def test_the_random_moves_ablation_draws_from_evaluated_kernels_or_the_root(stats: ModuleType) -> None:
    from tritonsmith.search.model import Evaluation, Outcome, StepKind
    from tritonsmith.search.tree import Tree

    tree = Tree()
    user = tree.add(tree.root, StepKind.ROOT, "src", Evaluation(Outcome.CORRECT, speedup=1.0))
    refined = tree.add(user, StepKind.REFINE, "src2", Evaluation(Outcome.CORRECT, speedup=2.0))
    seen = {stats.random_select(tree, random.Random(seed))[0].id for seed in range(60)}
    assert seen == {tree.root.id, user.id, refined.id}
    assert all(stats.random_select(tree, random.Random(s))[1] is StepKind.REGENERATE
               for s in range(60) if stats.random_select(tree, random.Random(s))[0] is tree.root)


def _row(name: str, tree: list[float], random_: list[float]) -> dict[str, object]:
    return {"problem": name, "curves": {"tree": [[1.0, t] for t in tree], "random": [[1.0, r] for r in random_],
                                        "grid": [[1.0, 1.0]] * len(tree)}}


def test_the_summary_is_a_t_interval_over_seeds_and_a_paired_difference(stats: ModuleType) -> None:
    rows = [_row("a", [2.0, 4.0, 30.0], [1.0, 1.5, 1.1]), _row("b", [1.1, 1.0, 1.3], [1.0, 1.25, 1.0])]
    summary = stats.summarise(rows, [0, 1, 2], [2])["2"]
    per_seed = [(2.0 + 1.1) / 2, (4.0 + 1.0) / 2, (10.0 + 1.3) / 2]  # clamped at 10x
    assert summary["tree"]["mean_speedup"]["per_seed"] == pytest.approx(per_seed)
    mean, low, high = summary["tree"]["mean_speedup"]["mean_ci"]
    half = 4.30 * statistics.stdev(per_seed) / 3 ** 0.5
    assert (mean, low, high) == pytest.approx((statistics.fmean(per_seed), statistics.fmean(per_seed) - half,
                                               statistics.fmean(per_seed) + half))
    assert summary["tree"]["fast_1_2"]["per_seed"] == [0.5, 0.5, 1.0]
    assert summary["random"]["fast_1_2"]["per_seed"] == [0.0, 1.0, 0.0]
    difference = [t - r for t, r in zip(summary["tree"]["mean_speedup"]["per_seed"],
                                        summary["random"]["mean_speedup"]["per_seed"], strict=True)]
    assert summary["tree_minus_random"]["mean_speedup"][0] == pytest.approx(statistics.fmean(difference))
    assert "tree_minus_random-moves" not in summary  # not run: nothing to pair with
    # The geometric mean is not clamped: 30x counts as 30x.
    assert summary["tree"]["geomean"]["per_seed"][2] == pytest.approx((30.0 * 1.3) ** 0.5)
    ratios = [t / r for t, r in zip(summary["tree"]["geomean"]["per_seed"], summary["random"]["geomean"]["per_seed"],
                                    strict=True)]
    assert summary["tree_minus_random"]["geomean_ratio"][0] == pytest.approx(statistics.geometric_mean(ratios))
    low, high = summary["tree_minus_random"]["geomean_ratio"][1:]
    assert 0 < low < statistics.geometric_mean(ratios) < high  # an interval of ratios, never below zero
