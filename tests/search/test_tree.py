"""AdaExplore's tree: rewards, values, UCB with the expand arm, step choice, chain, pool, best."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from tritonsmith.search.model import Evaluation, Outcome, StepKind
from tritonsmith.search.tree import ROOT_ID, Node, Tree, TreeSettings, fallback, reward

REFINE, REGENERATE, ROOT = StepKind.REFINE, StepKind.REGENERATE, StepKind.ROOT


def correct(speedup: float) -> Evaluation:
    return Evaluation(Outcome.CORRECT, speedup=speedup)


WRONG = Evaluation(Outcome.WRONG, message="mismatch")
BROKEN = Evaluation(Outcome.NOT_COMPILED, message="syntax error")


def started(speedup: float = 1.0, settings: TreeSettings | None = None) -> tuple[Tree, Node]:
    tree = Tree(settings)
    return tree, tree.add(tree.root, ROOT, "original", correct(speedup))


class AlwaysBelow(random.Random):
    """random() returns 0: every probabilistic choice says yes."""

    def random(self) -> float:
        return 0.0


class AlwaysAbove(random.Random):
    def random(self) -> float:
        return 0.999


# -- reward and value --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "speedup", "expected"),
    [
        (Outcome.NOT_COMPILED, None, 0.0),
        (Outcome.NOT_COMPILED, 5.0, 0.0),
        (Outcome.WRONG, 3.0, 0.05),
        (Outcome.CORRECT, 0.1, 0.4),
        (Outcome.CORRECT, 0.01, 0.4),  # clipped up to 0.1
        (Outcome.CORRECT, 0.0, 0.4),
        (Outcome.CORRECT, 10.0, 1.6),
        (Outcome.CORRECT, 50.0, 1.6),  # saturates at 10x
        (Outcome.CORRECT, math.inf, 1.6),
        (Outcome.CORRECT, 1.0, 0.4 + 1.2 * 0.9 / 9.9),
        (Outcome.CORRECT, 5.05, 1.0),  # the middle of [0.1, 10] maps to the middle of [0.4, 1.6]
        (Outcome.CORRECT, None, 0.4),  # verified, not timed: the lowest correct reward
        (Outcome.CORRECT, math.nan, 0.4),
    ],
)
def test_reward(outcome: Outcome, speedup: float | None, expected: float):
    assert reward(outcome, speedup) == pytest.approx(expected)


def test_value_is_average_by_default_and_mixes_in_the_max_with_alpha():
    for alpha, expected in [(0.0, (0.4 + 1.6) / 2), (1.0, 1.6), (0.5, 0.5 * 1.6 + 0.5 * 1.0)]:
        tree, original = started(0.1, TreeSettings(alpha=alpha))
        tree.add(original, REFINE, "fast", correct(10.0))
        assert original.visits == 2 and original.total == pytest.approx(2.0)
        assert original.best == pytest.approx(1.6)
        assert tree.value(original) == pytest.approx(expected)
        assert tree.root.visits == 2  # the dummy root sees everything


def test_settings_default_to_adaexplore_level_2_and_reject_nonsense():
    settings = TreeSettings()
    assert (settings.alpha, settings.exploration, settings.expand) == (0.0, 0.3, 0.3)
    assert (settings.regenerate_probability, settings.max_refinements, settings.pool_size) == (0.2, 2, 5)
    assert TreeSettings.from_dict({"pool_size": 3, "steps": 50}) == TreeSettings(pool_size=3)
    assert TreeSettings.from_dict(settings.to_dict()) == settings
    with pytest.raises(ValueError):
        TreeSettings(alpha=2.0)
    with pytest.raises(ValueError):
        TreeSettings(pool_size=0)


# -- selection ---------------------------------------------------------------------------------


def test_the_first_selection_refines_or_regenerates_the_original():
    tree, original = started()
    node, _ = tree.select(random.Random(0))
    assert node is original  # one visit: ln 1 = 0, the expand arm does not beat descending
    empty = Tree()
    assert empty.select(random.Random(0)) == (empty.root, REGENERATE)


def test_ucb_scores_an_unvisited_child_infinite_and_selection_takes_it_first():
    tree, original = started()
    tree.add(original, REFINE, "a", correct(9.0))
    fresh = Node(id=99, parent=original.id, kind=REFINE, source="b", evaluation=WRONG)
    original.children.append(fresh)  # never backpropagated: visits 0
    tree.nodes[fresh.id] = fresh
    assert tree.ucb(fresh, original.visits) == math.inf
    assert tree.descend(original) is fresh  # over the 9x child and the expand arm


def test_a_less_visited_child_wins_a_tie_in_value():
    tree, original = started()
    a = tree.add(original, REFINE, "a", correct(2.0))
    b = tree.add(original, REFINE, "b", correct(2.0))
    tree.add(a, REFINE, "a2", correct(2.0))
    assert tree.value(a) == pytest.approx(tree.value(b))
    assert tree.ucb(b, original.visits) > tree.ucb(a, original.visits)


def test_the_expand_arm_wins_when_children_are_poor_and_the_node_is_visited_a_lot():
    # Progressive widening: bonus sqrt(ln N / k^2) against the best child's UCB.
    tree, original = started()
    poor = tree.add(original, REFINE, "poor", WRONG)
    node = poor
    for i in range(30):  # a deep, well-visited, poor line under `poor`
        node = tree.add(node, REFINE, f"poor{i}", WRONG)
    expand = tree.expand_score(original)
    child = tree.ucb(poor, original.visits)
    assert original.visits == 32 and len(original.children) == 1
    assert expand > child
    assert tree.descend(original) is None  # expand here, not down the poor line

    # With several children the k^2 term shrinks the arm: a good, rarely visited child wins.
    tree, original = started()
    for speedup in (8.0, 8.0, 8.0):
        tree.add(original, REFINE, "good", correct(speedup))
    best = max(original.children, key=lambda c: tree.ucb(c, original.visits))
    assert tree.expand_score(original) < tree.ucb(best, original.visits)
    assert tree.descend(original) is best


def test_the_root_expands_once_the_original_has_been_visited():
    tree, original = started()
    tree.add(original, REFINE, "r", correct(1.0))
    node, kind = tree.select(random.Random(0))
    assert (node, kind) == (tree.root, REGENERATE)  # k = 1: sqrt(ln N) beats sqrt(ln N / N_child)


def test_selection_never_descends_into_a_placeholder():
    tree, original = started()
    slot = tree.reserve(original, REFINE)
    assert slot.pending and slot.visits == 1 and original.visits == 2 and tree.root.visits == 2
    for seed in range(20):
        node, _ = tree.select(random.Random(seed))
        assert not node.pending


# -- the step kind -----------------------------------------------------------------------------


def test_step_kind_at_the_root_with_two_refinements_and_by_probability():
    tree, original = started()
    assert tree.step_kind(tree.root, AlwaysAbove()) is REGENERATE
    assert tree.step_kind(original, AlwaysAbove()) is REFINE
    assert tree.step_kind(original, AlwaysBelow()) is REGENERATE  # p = 0.2 drawn
    tree.add(original, REFINE, "a", WRONG)
    tree.add(original, REGENERATE, "x", WRONG)  # regenerate children do not count
    assert tree.step_kind(original, AlwaysAbove()) is REFINE
    tree.reserve(original, REFINE)  # an in-flight refinement takes a slot
    assert tree.refinements(original) == 2
    assert tree.step_kind(original, AlwaysAbove()) is REGENERATE

    kinds = Counter(tree.step_kind(tree.nodes[1], random.Random(seed)) for seed in range(2000))
    assert kinds[REGENERATE] / 2000 == pytest.approx(0.2, abs=0.03)
    def draws(seed: int) -> list[StepKind]:
        rng = random.Random(seed)
        return [tree.step_kind(tree.nodes[1], rng) for _ in range(20)]

    assert draws(7) == draws(7)  # seeded: reproducible


def test_a_failed_step_falls_back_to_the_other_kind():
    tree, original = started()
    assert fallback(REFINE) is REGENERATE and fallback(REGENERATE) is REFINE
    assert tree.fallback(original, REFINE) is REGENERATE
    assert tree.fallback(original, REGENERATE) is REFINE
    assert tree.fallback(tree.root, REGENERATE) is None  # nothing to refine at the root
    empty = tree.add(original, REGENERATE, "", BROKEN)  # the proposer produced nothing
    assert tree.fallback(empty, REGENERATE) is None
    assert tree.step_kind(empty, AlwaysAbove()) is REGENERATE


# -- chain and pool ----------------------------------------------------------------------------


def test_chain_stops_at_the_regenerate_ancestor_and_keeps_the_last_five():
    tree, original = started()
    a = tree.add(original, REFINE, "a", WRONG)
    assert [n.source for n in tree.chain(a)] == ["original", "a"]
    head = tree.add(a, REGENERATE, "head", correct(2.0))
    node = head
    for i in range(7):
        node = tree.add(node, REFINE, f"r{i}", correct(2.0 + i))
    assert [n.source for n in tree.chain(head)] == ["head"]
    assert [n.source for n in tree.chain(node)] == ["r2", "r3", "r4", "r5", "r6"]
    short = tree.nodes[head.id + 2]
    assert [n.source for n in tree.chain(short)] == ["head", "r0", "r1"]
    assert tree.chain_context(short)[-1] == ("r1", short.evaluation)
    assert tree.chain(tree.root) == []


def test_pool_is_the_best_correct_kernel_of_each_component_on_the_path():
    tree, original = started(1.0)
    tree.add(original, REFINE, "orig-fast", correct(1.5))
    orig_side = tree.add(original, REFINE, "orig-faster-but-off-path", correct(1.8))
    # A branch regenerated from the original: its component's best is a refinement.
    b = tree.add(original, REGENERATE, "b", correct(2.0))
    b1 = tree.add(b, REFINE, "b1", correct(3.0))
    tree.add(b1, REFINE, "b2-wrong", WRONG)
    # A branch with nothing correct contributes nothing.
    c = tree.add(b1, REGENERATE, "c", WRONG)
    # A branch off the path (a root regenerate) is not in the pool.
    tree.add(tree.root, REGENERATE, "elsewhere", correct(9.0))
    d = tree.add(c, REGENERATE, "d", correct(1.1))
    # The component's best counts even when it is off the root→node path within the component.
    entries = tree.pool(d, random.Random(0))
    assert [e.source for e in entries] == ["orig-faster-but-off-path", "b1", "d"]
    assert entries[1].evaluation.speedup == 3.0
    assert orig_side.evaluation is entries[0].evaluation
    # The refine edges under a regenerate node belong to the new component, not the old one.
    assert [n.source for n in tree.component(b)] == ["b", "b1", "b2-wrong"]


def test_pool_samples_pool_size_when_more_branches_qualify():
    tree, node = started(1.0)
    for i in range(7):  # eight components on one path
        node = tree.add(node, REGENERATE, f"g{i}", correct(1.0 + i))
    everything = tree.pool(node, random.Random(0))
    assert len(everything) == 5
    sources = [e.source for e in everything]
    order = ["original"] + [f"g{i}" for i in range(7)]
    assert sources == sorted(sources, key=order.index)  # kept in path order
    samples = {tuple(e.source for e in tree.pool(node, random.Random(seed))) for seed in range(30)}
    assert len(samples) > 1  # sampled, not the first five
    assert tree.pool(node, random.Random(3)) == tree.pool(node, random.Random(3))
    small = Tree(TreeSettings(pool_size=8))
    n = small.add(small.root, ROOT, "original", correct(1.0))
    for i in range(7):
        n = small.add(n, REGENERATE, f"g{i}", correct(1.0))
    assert len(small.pool(n, random.Random(0))) == 8


def test_best_is_the_lexicographic_max_of_compiled_correct_speedup():
    tree = Tree()
    assert tree.best() is None
    broken = tree.add(tree.root, ROOT, "x", BROKEN)
    assert tree.best() is broken
    wrong = tree.add(broken, REFINE, "w", Evaluation(Outcome.WRONG, speedup=50.0))
    assert tree.best() is wrong  # compiled beats not compiled; a wrong kernel's speed is nothing
    slow = tree.add(wrong, REFINE, "slow", correct(0.5))
    assert tree.best() is slow  # correct beats wrong however fast
    fast = tree.add(wrong, REFINE, "fast", correct(2.0))
    tree.add(fast, REFINE, "tie", correct(2.0))
    tree.add(fast, REFINE, "untimed", correct(math.nan))
    assert tree.best() is fast  # the earliest wins a tie


# -- concurrency -------------------------------------------------------------------------------


def test_reserve_complete_and_discard_keep_the_statistics_exact():
    tree, original = started()
    slot = tree.reserve(original, REFINE)
    other = tree.reserve(tree.root, REGENERATE)
    assert (slot.id, other.id) == (1, 2)
    assert tree.value(original) == pytest.approx(reward(Outcome.CORRECT, 1.0) / 2)  # virtual loss
    with pytest.raises(ValueError):
        tree.reserve(slot, REFINE)  # no kernel yet
    tree.complete(slot, correct(4.0), source="s", proposer="offline", cost_usd=0.0)
    tree.discard(other)
    twin, twin_original = started()
    twin.add(twin_original, REFINE, "s", correct(4.0))
    for a, b in [(tree.root, twin.root), (original, twin_original)]:
        assert (a.visits, a.total, a.best) == pytest.approx((b.visits, b.total, b.best))
    assert tree.next_id == 3 and 2 not in tree.nodes  # ids are not reused
    assert tree.add(original, REFINE, "t", WRONG).id == 3
    assert tree.evaluated_count == 3 and tree.pending() == []
    with pytest.raises(ValueError):
        tree.complete(slot, WRONG, source="again")
    with pytest.raises(ValueError):
        tree.add(tree.root, REFINE, "?", WRONG)  # nothing to refine at the dummy root
    with pytest.raises(ValueError):
        tree.add(original, ROOT, "?", WRONG)
    assert tree.root.id == ROOT_ID and original.parent == ROOT_ID


# -- a scripted search -------------------------------------------------------------------------


def scripted_search(seed: int, steps: int = 50) -> Counter[str]:
    """50 steps against a scripted evaluator. The second regeneration starts family "good"
    (correct, about 6x); other regenerations are wrong; the original is correct at about 1x.
    Refinements inherit their parent's family. Returns evaluated nodes per family."""
    rng = random.Random(seed)
    tree, _ = started(1.0)
    family = {0: "original"}
    regenerations = 0
    for _ in range(steps):
        parent, kind = tree.select(rng)
        if kind is REGENERATE:
            regenerations += 1
            name = "good" if regenerations == 2 else f"bad{regenerations}"
        else:
            name = family[parent.id]
        if name == "good":
            evaluation = correct(6.0 + rng.random())
        elif name == "original":
            evaluation = correct(0.9 + 0.2 * rng.random())
        else:
            evaluation = WRONG
        node = tree.add(parent, kind, f"{name}:{tree.next_id}", evaluation)
        family[node.id] = name
    assert tree.evaluated_count == steps + 1
    return Counter(family.values())


def test_a_scripted_search_concentrates_on_the_much_better_branch():
    results = [scripted_search(seed) for seed in range(10)]
    leads = sum(1 for counts in results if counts.most_common(1)[0][0] == "good")
    assert leads >= 8, results
    assert sorted(counts["good"] for counts in results)[5] >= 15  # median: 30% of 50 steps
    # ... while still exploring: every run tries many other branches.
    assert all(len(counts) >= 10 for counts in results)
