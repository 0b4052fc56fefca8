"""AdaExplore's diversity-preserving search tree: rewards, values, UCB selection with the
expand arm, the refine-or-regenerate choice, refinement chains and the diverse pool.

Pure Python: no I/O, no clock other than a node's creation stamp, randomness only through the
`random.Random` a caller passes (so a seeded search is reproducible).

Shape (as AdaExplore's `agent/mcts.py`):

    root (dummy: id -1, no kernel, never journaled)
    ├── 0  ROOT        the user's kernel, evaluated first; heads its own component
    │   ├── 1  REFINE
    │   │   └── 4  REFINE
    │   └── 3  REGENERATE    a new component under node 0
    └── 2  REGENERATE        a new component under the root

The dummy root has only large-step children: the user's kernel (kind `ROOT`) and regenerations.
The user's kernel counts as a regenerate-type *component head*, so its refinements form its
component, its own branch of the pool, and its chain stops at it. A *component* is a head (a
`ROOT` or `REGENERATE` node) plus everything reachable from it through `REFINE` edges.

Concurrency: the engine evaluates several candidates at once. `reserve` creates a placeholder
child (no source, no evaluation) that counts as one visit with reward 0 on every ancestor (a
"virtual loss"), so the next `select` sees that branch as already tried and spreads out instead
of piling onto it. `complete` fills the placeholder in and adds its real reward without counting
the visit twice; `discard` removes a placeholder that never produced anything (cancellation).
Placeholders are never descended into or selected as parents (they have no kernel yet), but
they do count as children: toward `k` in the expand arm and toward a node's refinements.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .model import Evaluation, Outcome, PoolEntry, StepKind

__all__ = ["ROOT_ID", "Node", "Tree", "TreeSettings", "fallback", "rank", "reward"]

ROOT_ID = -1  # the dummy root's id; the user's kernel is node 0

_SPEEDUP_MIN = 0.1
_SPEEDUP_MAX = 10.0


@dataclass(frozen=True)
class TreeSettings:
    """The tree's constants; defaults are AdaExplore's released Level-2 configuration."""

    alpha: float = 0.0
    """Node value = alpha * max reward + (1 - alpha) * average reward (0: the average)."""
    exploration: float = 0.3
    """c in a child's UCB1 bonus c * sqrt(ln N_parent / N_child)."""
    expand: float = 0.3
    """c_exp in the expand arm's bonus c_exp * sqrt(ln N_node / k^2)."""
    regenerate_probability: float = 0.2
    """Chance of a large step at a node that may still be refined."""
    max_refinements: int = 2
    """A node with this many refine children gets only regenerate steps."""
    pool_size: int = 5
    """At most this many kernels in a regenerate step's pool (sampled when more)."""
    chain_length: int = 5
    """At most this many kernels in a refine step's chain (the most recent)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], not {self.alpha}")
        if not 0.0 <= self.regenerate_probability <= 1.0:
            raise ValueError(f"regenerate_probability must lie in [0, 1], not {self.regenerate_probability}")
        if self.exploration < 0 or self.expand < 0:
            raise ValueError("exploration and expand weights must not be negative")
        if self.max_refinements < 0 or self.pool_size < 1 or self.chain_length < 1:
            raise ValueError("max_refinements must be >= 0, pool_size and chain_length >= 1")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TreeSettings:
        """The settings named in `data`; other keys (a search's budget, proposer, ...) are
        ignored, so a journal's whole settings dict can be passed."""
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def reward(outcome: Outcome, speedup: float | None) -> float:
    """AdaExplore's reward: 0 not compiled, 0.05 compiled but wrong, and for a correct kernel
    0.4 + 1.2 * (clip(s, 0.1, 10) - 0.1) / 9.9, in [0.4, 1.6], saturating at 10x.

    A correct kernel without a usable speedup (not timed, NaN) gets the lowest correct reward:
    it is verified, but nothing says it is fast.
    """
    if outcome is Outcome.NOT_COMPILED:
        return 0.0
    if outcome is Outcome.WRONG:
        return 0.05
    s = _SPEEDUP_MIN if speedup is None or math.isnan(speedup) else speedup
    s = min(max(s, _SPEEDUP_MIN), _SPEEDUP_MAX)
    return 0.4 + 1.2 * (s - _SPEEDUP_MIN) / (_SPEEDUP_MAX - _SPEEDUP_MIN)


def rank(evaluation: Evaluation) -> tuple[bool, bool, float]:
    """The key `Tree.best` maximises: (compiled, correct, speedup), as AdaExplore's utils."""
    compiled = evaluation.outcome is not Outcome.NOT_COMPILED
    correct = evaluation.outcome is Outcome.CORRECT
    speedup = evaluation.speedup
    if not correct or speedup is None or math.isnan(speedup):
        speedup = -math.inf
    return compiled, correct, speedup


def fallback(kind: StepKind) -> StepKind:
    """The other step type, tried when the chosen one produced no kernel."""
    return StepKind.REGENERATE if kind is StepKind.REFINE else StepKind.REFINE


@dataclass(eq=False)
class Node:
    """One kernel in the tree (or the dummy root, or a reserved placeholder).

    Statistics cover the node and everything below it; a placeholder contributes one visit
    and reward 0 until it is completed.
    """

    id: int
    parent: int | None  # None only for the dummy root; ROOT_ID for its children
    kind: StepKind
    source: str  # the whole candidate file ("" for the dummy root and placeholders)
    evaluation: Evaluation | None = None
    children: list[Node] = field(default_factory=list, repr=False)
    visits: int = 0
    total: float = 0.0  # sum of rewards backpropagated through this node
    best: float = 0.0  # max reward backpropagated through this node
    proposer: str = ""  # which proposer produced it ("" for the user's kernel)
    cost_usd: float = 0.0  # what the proposer had spent, in all, when it produced this
    propose_seconds: float = 0.0  # how long the proposer took for this candidate
    created: float = 0.0  # time.time() when it was evaluated (or reserved, while pending)

    @property
    def is_root(self) -> bool:
        return self.parent is None

    @property
    def pending(self) -> bool:
        """Reserved but not yet evaluated."""
        return self.evaluation is None and not self.is_root

    @property
    def is_head(self) -> bool:
        """Heads a component: the user's kernel or a regenerated one."""
        return not self.is_root and self.kind is not StepKind.REFINE

    @property
    def reward(self) -> float | None:
        if self.evaluation is None:
            return None
        return reward(self.evaluation.outcome, self.evaluation.speedup)


class Tree:
    """The search tree. Node ids are dense, in order of creation; the dummy root is `ROOT_ID`."""

    def __init__(self, settings: TreeSettings | None = None) -> None:
        self.settings = settings or TreeSettings()
        self.root = Node(id=ROOT_ID, parent=None, kind=StepKind.ROOT, source="")
        self.nodes: dict[int, Node] = {ROOT_ID: self.root}
        self._next_id = 0

    # -- building ---------------------------------------------------------------------------

    def add(
        self,
        parent: Node,
        kind: StepKind,
        source: str,
        evaluation: Evaluation,
        *,
        node_id: int | None = None,
        proposer: str = "",
        cost_usd: float = 0.0,
        propose_seconds: float = 0.0,
        created: float | None = None,
    ) -> Node:
        """An evaluated child of `parent`, backpropagated. `node_id` is for rebuilding a tree
        from its journal; new nodes take the next id."""
        node = self.reserve(parent, kind, node_id=node_id)
        return self.complete(node, evaluation, source=source, proposer=proposer, cost_usd=cost_usd,
                             propose_seconds=propose_seconds, created=created)

    def reserve(self, parent: Node, kind: StepKind, *, node_id: int | None = None) -> Node:
        """A placeholder child of `parent` for a step in flight, with a virtual loss (one
        visit, reward 0, on it and every ancestor) until `complete` or `discard`."""
        if self.nodes.get(parent.id) is not parent:
            raise ValueError(f"node {parent.id} is not in this tree")
        if parent.pending:
            raise ValueError(f"node {parent.id} is still being evaluated; it has no kernel to extend")
        if kind is StepKind.ROOT and not parent.is_root:
            raise ValueError("the user's kernel (ROOT) can only be a child of the dummy root")
        if kind is StepKind.REFINE and parent.is_root:
            raise ValueError("the dummy root has no kernel to refine")
        if node_id is None:
            node_id = self._next_id
        elif node_id in self.nodes:
            raise ValueError(f"node {node_id} already exists")
        self._next_id = max(self._next_id, node_id + 1)
        node = Node(id=node_id, parent=parent.id, kind=kind, source="", created=time.time())
        parent.children.append(node)
        self.nodes[node_id] = node
        for ancestor in self.path(node):
            ancestor.visits += 1
        return node

    def complete(
        self,
        node: Node,
        evaluation: Evaluation,
        *,
        source: str,
        proposer: str = "",
        cost_usd: float = 0.0,
        propose_seconds: float = 0.0,
        created: float | None = None,
    ) -> Node:
        """Fill a placeholder in: its kernel, its evaluation, and its reward added along the
        path (the visit was counted by `reserve`)."""
        if not node.pending or self.nodes.get(node.id) is not node:
            raise ValueError(f"node {node.id} is not a pending node of this tree")
        node.source = source
        node.evaluation = evaluation
        node.proposer = proposer
        node.cost_usd = cost_usd
        node.propose_seconds = propose_seconds
        node.created = time.time() if created is None else created
        r = reward(evaluation.outcome, evaluation.speedup)
        for ancestor in self.path(node):
            ancestor.total += r
            ancestor.best = max(ancestor.best, r)
        return node

    def discard(self, node: Node) -> None:
        """Drop a placeholder that will never be evaluated, taking back its virtual loss. Its
        id is not reused (ids stay in creation order)."""
        if not node.pending or self.nodes.get(node.id) is not node or node.children:
            raise ValueError(f"node {node.id} is not a pending leaf of this tree")
        for ancestor in self.path(node):
            ancestor.visits -= 1
        parent = self.nodes[node.parent] if node.parent is not None else self.root
        parent.children.remove(node)
        del self.nodes[node.id]

    # -- reading ----------------------------------------------------------------------------

    @property
    def next_id(self) -> int:
        return self._next_id

    @property
    def evaluated_count(self) -> int:
        return sum(1 for node in self.nodes.values() if node.evaluation is not None)

    def evaluated(self) -> Iterator[Node]:
        """Evaluated nodes in id order."""
        for node_id in sorted(self.nodes):
            node = self.nodes[node_id]
            if node.evaluation is not None:
                yield node

    def pending(self) -> list[Node]:
        return [node for node in self.nodes.values() if node.pending]

    def path(self, node: Node) -> list[Node]:
        """The root→node path, root first, the node last."""
        path = [node]
        while path[-1].parent is not None:
            path.append(self.nodes[path[-1].parent])
        path.reverse()
        return path

    def value(self, node: Node) -> float:
        """alpha * max + (1 - alpha) * average of the rewards through `node` (0 unvisited)."""
        if node.visits == 0:
            return 0.0
        alpha = self.settings.alpha
        return alpha * node.best + (1 - alpha) * node.total / node.visits

    def ucb(self, child: Node, parent_visits: int) -> float:
        """UCB1 of a child: value + c * sqrt(ln N_parent / N_child); unvisited scores inf."""
        if child.visits == 0:
            return math.inf
        bonus = math.sqrt(math.log(max(parent_visits, 1)) / child.visits)
        return self.value(child) + self.settings.exploration * bonus

    def expand_score(self, node: Node) -> float:
        """The expand arm: best child value + c_exp * sqrt(ln N_node / k^2). The k^2 makes a
        node's width grow slowly with its visits (progressive widening)."""
        open_children = [child for child in node.children if not child.pending]
        best = max((self.value(child) for child in open_children), default=0.0)
        k = len(node.children)
        bonus = math.sqrt(math.log(max(node.visits, 1)) / k**2) if k else math.inf
        return best + self.settings.expand * bonus

    def refinements(self, node: Node) -> int:
        """REFINE children, pending ones included (a reserved refinement takes its slot)."""
        return sum(1 for child in node.children if child.kind is StepKind.REFINE)

    def can_refine(self, node: Node) -> bool:
        """Whether a small step can start from `node`: it has a kernel to edit."""
        return not node.is_root and not node.pending and bool(node.source.strip())

    # -- choosing the next step -------------------------------------------------------------

    def select(self, rng: random.Random) -> tuple[Node, StepKind]:
        """The node to expand and the step to take there.

        Descend from the root: at each node, the best child by UCB1 (ties go to the earlier
        child) competes with the expand arm; if the expand arm scores strictly more, expand
        here, else descend. A node without an evaluated child is expanded. Placeholders are
        never descended into.
        """
        node = self.root
        while (child := self.descend(node)) is not None:
            node = child
        return node, self.step_kind(node, rng)

    def descend(self, node: Node) -> Node | None:
        """One step of `select`: the child to descend into, or None to expand `node`."""
        open_children = [child for child in node.children if not child.pending]
        if not open_children:
            return None
        best_child = max(open_children, key=lambda child: self.ucb(child, node.visits))
        if self.expand_score(node) > self.ucb(best_child, node.visits):
            return None
        return best_child

    def step_kind(self, node: Node, rng: random.Random) -> StepKind:
        """Regenerate at the root, at a node with `max_refinements` refinements already, at a
        node without a kernel, and otherwise with `regenerate_probability`; else refine."""
        if not self.can_refine(node) or self.refinements(node) >= self.settings.max_refinements:
            return StepKind.REGENERATE
        if rng.random() < self.settings.regenerate_probability:
            return StepKind.REGENERATE
        return StepKind.REFINE

    def fallback(self, node: Node, kind: StepKind) -> StepKind | None:
        """The step to try at `node` when `kind` produced no kernel, or None when there is
        none (nothing to refine at the root or at a node without a kernel)."""
        other = fallback(kind)
        if other is StepKind.REFINE and not self.can_refine(node):
            return None
        return other

    # -- what a proposer sees ---------------------------------------------------------------

    def chain(self, node: Node) -> list[Node]:
        """The refinement chain: `node` and its ancestors up to the nearest component head,
        inclusive, oldest first, the last `chain_length` of them."""
        chain: list[Node] = []
        current: Node | None = node
        while current is not None and not current.is_root:
            chain.append(current)
            if current.is_head:
                break
            current = self.nodes[current.parent] if current.parent is not None else None
        chain.reverse()
        return chain[-self.settings.chain_length:]

    def chain_context(self, node: Node) -> tuple[tuple[str, Evaluation], ...]:
        """`chain` as `StepContext.chain` wants it (placeholders left out)."""
        return tuple((n.source, n.evaluation) for n in self.chain(node) if n.evaluation is not None)

    def component(self, head: Node) -> list[Node]:
        """`head` and everything reachable from it through REFINE edges, in tree order."""
        members = [head]
        for member in members:  # grows while iterating: a breadth-first walk
            members.extend(child for child in member.children if child.kind is StepKind.REFINE)
        return members

    def pool(self, node: Node, rng: random.Random) -> list[PoolEntry]:
        """For each component head on the root→node path, the best correct kernel of its
        component (components without one give nothing); `pool_size` of them sampled at random
        when there are more, kept in path order."""
        entries: list[PoolEntry] = []
        for head in self.path(node):
            if not head.is_head:
                continue
            correct = [
                member for member in self.component(head)
                if member.evaluation is not None and member.evaluation.outcome is Outcome.CORRECT
            ]
            if correct:
                best = _best_of(correct)
                assert best.evaluation is not None
                entries.append(PoolEntry(source=best.source, evaluation=best.evaluation))
        if len(entries) > self.settings.pool_size:
            keep = sorted(rng.sample(range(len(entries)), self.settings.pool_size))
            entries = [entries[i] for i in keep]
        return entries

    def best(self) -> Node | None:
        """The best evaluated kernel: max of (compiled, correct, speedup); the earliest wins a
        tie, so the user's kernel stands unless something beats it."""
        evaluated = list(self.evaluated())
        return _best_of(evaluated) if evaluated else None


def _best_of(nodes: list[Node]) -> Node:
    # max() keeps the first of equal keys: the earliest node wins a tie.
    return max(nodes, key=lambda node: rank(node.evaluation) if node.evaluation else (False, False, -math.inf))
