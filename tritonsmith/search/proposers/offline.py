"""The offline proposer: no model, always available.

Refine steps move through the launch and config space of every kernel the file launches (a
launcher's kernels, not only the one asked for), one knob at a time, as exact text edits: a
block size wherever it is set (a literal at the launch, the module constant or the launcher's
local variable it names, a `triton.next_power_of_2(...)` expression, scaled by two either
way), `num_warps` and `num_stages` at the launch or in an autotune `Config`, a `Config` added or
removed, a cache/eviction hint on a load. A move never turns a `Config` into a copy of another
(that shrinks the real tuning space), and under the interpreter, which runs only an autotuner's
first `Config` (evaluator/cuda_shim.py), the other Configs are left alone: an edit there could
not be measured. Regenerate steps start from the best kernel in the
diverse pool (or the original) and apply a structural transformation from a small library
where the kernel meets its preconditions, together with a jump in block size; they transform
whichever kernels the file launches:

- `fuse-elementwise`: two consecutively launched elementwise kernels that hand a temporary from
  one to the other become one kernel (`fusion.py`, with its preconditions); tried first;
- `single-pass`: a row reduction that walks its row in blocks once per pass gets one block
  covering the row and its loops unrolled into one pass (`single_pass.py`);
- `group-m`, `dot-tf32`, `autotune`, `persistent` (on a GPU only): GROUP_M swizzling of a
  `tl.dot` kernel's tiles and TF32 instead of IEEE fp32 inputs (`matmul.py`), a pruned
  `triton.autotune` space in place of the launch's fixed blocks (`autotune.py`), a few programs
  per SM looping over an elementwise kernel's tiles (`persistent.py`), which the interpreter can
  neither time (it runs programs one by one, and an autotuner's first config only) nor verify;
- `vector-hints`: `offsets = pid * BLOCK + tl.arange(0, BLOCK)` gains
  `tl.max_contiguous(tl.multiple_of(...))`, so loads and stores can use wide vector accesses;
- `streaming-loads`: loads in a kernel without reuse get `eviction_policy="evict_first"` (not
  those indexed with `%` or `//`, which other programs read again);
- `block-jump`: every block size at the launch moved four times up or down from the pool
  kernel's own (twice where four is out of range), not to a random size, with a launch's
  `num_warps` scaled by the same factor (1 to 16).

Both step kinds read the rewards so far: where the kernel a step starts from measured faster
than the original and a block size of it has moved, the step moves that block further the same
way (three times in four, `FOLLOW_TREND`): a refinement tries those moves first and the ones
that take the block back last, and a block jump goes that way. The rest of the time moves are
drawn uniformly, so a search still wanders off a trend that has stopped paying.

Which knob matters depends on the device: without a GPU the interpreter's time grows with the
number of program instances, so block sizes dominate; on a GPU warps, stages and hints count
too. The search (not this module) keeps what measures faster.

Everything here is tree-sitter and text; nothing imports torch or triton.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tree_sitter import Node

from ...analysis import Document, index_module
from ...analysis.index import AutotuneConfig, Kernel, LaunchSite, ModuleIndex
from ...analysis.syntax import text, walk
from ..model import Edit, ProposalError, StepContext, apply_edits
from .autotune import insert_autotune
from .fusion import fuse_elementwise
from .matmul import dot_tf32, group_m
from .persistent import persistent_programs
from .single_pass import single_pass

__all__ = ["OfflineProposer", "block_sizes", "block_trend", "config_moves", "launch_blocks", "launched_kernels",
           "transformations"]

BLOCK_NAME = re.compile(r"BLOCK|TILE|GROUP|SIZE|_M$|_N$|_K$", re.IGNORECASE)
MIN_BLOCK, MAX_BLOCK = 16, 8192
WARPS = (1, 2, 4, 8, 16)
STAGES = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Move:
    """One proposed change: what it does, and the edit that does it; for a block size moved at a
    launch, which one (kernel, keyword) and whether it grows."""

    description: str
    edit: Edit
    block: tuple[str, str] | None = None
    grows: bool = False


def _is_pow2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _int(node: Node | None) -> int | None:
    if node is None or node.type != "integer":
        return None
    try:
        return int(text(node).replace("_", ""), 0)
    except ValueError:
        return None


def _edit(source: str, data: bytes, start: int, end: int, replacement: str) -> Edit | None:
    """An exact, unique old/new edit replacing bytes [start, end): the old text is the whole
    lines around the change, widened by a line at a time until it occurs only once."""
    line_start = data.rfind(b"\n", 0, start) + 1
    line_end = data.find(b"\n", end)
    line_end = len(data) if line_end < 0 else line_end
    for _ in range(6):
        old = data[line_start:line_end].decode("utf-8")
        new = (data[line_start:start] + replacement.encode() + data[end:line_end]).decode("utf-8")
        if old and source.count(old) == 1:
            return Edit(old, new)
        line_start = data.rfind(b"\n", 0, max(line_start - 1, 0)) + 1
        next_end = data.find(b"\n", line_end + 1)
        line_end = len(data) if next_end < 0 else next_end
    return None


class _Site:
    """The parsed candidate: its document, index and the kernel being optimised."""

    def __init__(self, source: str, kernel_name: str) -> None:
        self.source = source
        self.document = Document(source)
        self.data = self.document.source
        self.index: ModuleIndex = index_module(self.document.root)
        kernel = self.index.kernel(kernel_name)
        if kernel is None:
            raise ProposalError(f"no kernel named {kernel_name} in the candidate")
        self.kernel: Kernel = kernel

    def edit(self, node: Node, replacement: str) -> Edit | None:
        return _edit(self.source, self.data, node.start_byte, node.end_byte, replacement)

    def module_int(self, name: str) -> Node | None:
        """The integer literal of a module-level `NAME = <int>`."""
        for statement in self.document.root.named_children:
            if statement.type != "expression_statement" or statement.named_child_count != 1:
                continue
            assign = statement.named_children[0]
            left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
            if assign.type == "assignment" and left is not None and text(left) == name and _int(right) is not None:
                return right
        return None


    def local_int(self, name: str, at: Node) -> Node | None:
        """The integer literal of the one `name = <int>` in the function holding `at` (a
        launcher's `BLOCK = 256`), assigned before it; None when there is none or several."""
        found = _assigned_before(name, at)
        return found if found is not None and _int(found) is not None else None

    def block_target(self, value: Node, at: Node) -> tuple[Node, int | None]:
        """Where a launch keyword's block size is written, and its number: the literal itself,
        or what the name it passes is assigned (a module constant, else the launcher's local:
        an integer, or a `next_power_of_2` expression with no number)."""
        if value.type == "identifier":
            literal = self.module_int(text(value)) or self.local_int(text(value), at)
            if literal is not None:
                return literal, _int(literal)
            local = _assigned_before(text(value), at)
            if _pow2_expression(local) and local is not None:
                return local, None
        return value, _int(value)


def _assigned_before(name: str, at: Node) -> Node | None:
    """The right side of the one assignment to `name` before `at` in the function holding it."""
    function = at.parent
    while function is not None and function.type != "function_definition":
        function = function.parent
    body = function.child_by_field_name("body") if function is not None else None
    if body is None:
        return None
    found = [n.child_by_field_name("right") for n in walk(body) if n.type == "assignment"
             and text(n.child_by_field_name("left") or n) == name and n.start_byte < at.start_byte]
    return found[0] if len(found) == 1 else None


def _pow2_expression(node: Node | None) -> bool:
    """`triton.next_power_of_2(n)` (or `next_power_of_2(n)`), a block size computed from a size."""
    if node is None or node.type != "call":
        return False
    function = node.child_by_field_name("function")
    return function is not None and text(function).rsplit(".", 1)[-1] == "next_power_of_2"


def _block_values(value: int) -> list[int]:
    return [v for v in (value * 2, value * 4, value // 2) if MIN_BLOCK <= v <= MAX_BLOCK and _is_pow2(v)]


def _launch_moves(site: _Site) -> Iterator[Move]:
    constexprs = site.kernel.constexpr_names
    for launch in site.kernel.launches:
        for name, (_, value) in launch.keywords.items():
            target, number = site.block_target(value, launch.node)  # BLOCK_SIZE=BLOCK: where BLOCK is set
            if number is None and _pow2_expression(target) and name in constexprs and BLOCK_NAME.search(name):
                expression = text(target)
                for scaled, how in ((f"{expression} * 2", "doubled"), (f"max({expression} // 2, {MIN_BLOCK})", "halved")):
                    edit = site.edit(target, scaled)
                    if edit is not None:
                        yield Move(f"{name} {how} at the launch (was {expression})", edit, (site.kernel.name, name),
                                   how == "doubled")
                continue
            if number is None:
                continue
            block = None
            if name == "num_warps":
                choices = [w for w in WARPS if w != number]
            elif name == "num_stages":
                choices = [s for s in STAGES if s != number]
            elif name in constexprs and BLOCK_NAME.search(name) and _is_pow2(number):
                choices, block = _block_values(number), (site.kernel.name, name)
            else:
                continue
            for choice in choices:
                edit = site.edit(target, str(choice))
                if edit is not None:
                    yield Move(f"{name}={choice} at the launch (was {number})", edit, block, choice > number)
        arguments = launch.node.child_by_field_name("arguments")
        if arguments is not None and "num_warps" not in launch.keywords and launch.keywords:
            last = arguments.named_children[-1]
            for warps in (2, 8):
                edit = _edit(site.source, site.data, last.end_byte, last.end_byte, f", num_warps={warps}")
                if edit is not None:
                    yield Move(f"num_warps={warps} at the launch (was the default, 4)", edit)


def _config_key(config: AutotuneConfig, name: str | None = None, value: str | None = None,
                ) -> tuple[tuple[str, str], ...]:
    """A Config's values and options as text, with one of them replaced: two Configs with the
    same key are the same point of the tuning space."""
    items = {k: text(v) for k, v in {**config.values, **config.options}.items()}
    if name is not None and value is not None:
        items[name] = value
    return tuple(sorted(items.items()))


def _config_moves(site: _Site, device: str = "gpu") -> Iterator[Move]:
    autotune = site.kernel.autotune
    if autotune is None:
        return
    # Under the interpreter only the first Config runs: moving another could not be measured.
    movable = autotune.configs[:1] if device != "gpu" else autotune.configs
    keys = [_config_key(c) for c in autotune.configs]

    def duplicate(i: int, name: str, value: str) -> bool:
        changed = _config_key(autotune.configs[i - 1], name, value)
        return any(key == changed for j, key in enumerate(keys, 1) if j != i)

    for i, config in enumerate(movable, 1):
        for name, value in config.values.items():
            number = _int(value)
            if number is not None and _is_pow2(number) and BLOCK_NAME.search(name):
                for choice in _block_values(number):
                    if not duplicate(i, name, str(choice)) and (edit := site.edit(value, str(choice))) is not None:
                        yield Move(f"Config #{i}: {name}={choice} (was {number})", edit)
        for option, options in (("num_warps", WARPS), ("num_stages", STAGES)):
            number = _int(config.options.get(option))
            if number is None or number not in options:
                continue
            at = options.index(number)
            for choice in options[max(at - 1, 0):at] + options[at + 1:at + 2]:  # the neighbours
                if not duplicate(i, option, str(choice)) and \
                        (edit := site.edit(config.options[option], str(choice))) is not None:
                    yield Move(f"Config #{i}: {option}={choice} (was {number})", edit)
    if autotune.configs and device == "gpu":  # adding or dropping a later Config: only a GPU times it
        first = autotune.configs[0].node
        if len(autotune.configs) > 1:  # drop the last Config (fewer to tune, or a bad one gone)
            last = autotune.configs[-1].node
            previous = autotune.configs[-2].node
            edit = _edit(site.source, site.data, previous.end_byte, last.end_byte, "")
            if edit is not None:
                yield Move(f"drop Config #{len(autotune.configs)}", edit)
        for warps in (2, 8):
            copy = re.sub(r"num_warps\s*=\s*\d+", f"num_warps={warps}", text(first))
            if copy != text(first) and not any(text(c.node) == copy for c in autotune.configs):
                edit = _edit(site.source, site.data, first.end_byte, first.end_byte, ",\n        " + copy)
                if edit is not None:
                    yield Move(f"add a Config like #1 with num_warps={warps}", edit)


def _loads(site: _Site) -> Iterator[Node]:
    body = site.kernel.body
    for node in walk(body) if body is not None else ():
        if node.type == "call":
            name = site.index.imports.qualify(node.child_by_field_name("function"))
            if name == "triton.language.load":
                yield node


def _hint_moves(site: _Site) -> Iterator[Move]:
    for load in _loads(site):
        if b"eviction_policy" in (load.text or b"") or b"cache_modifier" in (load.text or b""):
            continue
        arguments = load.child_by_field_name("arguments")
        if arguments is None or not arguments.named_children:
            continue
        last = arguments.named_children[-1]
        for policy in ("evict_first", "evict_last"):
            edit = _edit(site.source, site.data, last.end_byte, last.end_byte, f', eviction_policy="{policy}"')
            if edit is not None:
                yield Move(f"eviction_policy={policy} on the load at line {load.start_point[0] + 1}", edit)


_HINT_MOVE = re.compile(r"num_warps|num_stages|eviction_policy")


def config_moves(source: str, kernel: str, device: str = "gpu") -> list[Move]:
    """Every one-knob move the launches, configs and loads of `kernel` and of every other
    kernel the file launches allow (moves of another kernel name it). `device`: what times the
    candidates; under the "interpreter", which ignores warps, stages and cache hints and runs an
    autotuner's first Config only, no move changes only those."""
    site = _Site(source, kernel)
    moves = _kernel_moves(site, device)
    for other in site.index.kernels:
        if other.name != kernel and (other.launches or other.autotune):
            moves += [Move(f"{other.name}: {m.description}", m.edit, m.block, m.grows)
                      for m in _kernel_moves(_Site(source, other.name), device)]
    return moves


def _kernel_moves(site: _Site, device: str) -> list[Move]:
    moves = [*_launch_moves(site), *_config_moves(site, device), *_hint_moves(site)]
    if device == "predicted":  # warps and stages reach the predicted time (the compile); cache hints do not
        moves = [m for m in moves if "eviction_policy" not in m.description]
    elif device != "gpu":  # warps, stages and hints never reach the interpreter (search/equivalence.py)
        moves = [m for m in moves if not _HINT_MOVE.search(m.description)]
    return moves


def launch_blocks(source: str) -> Iterator[tuple[Kernel, LaunchSite, list[tuple[str, Node, int]]]]:
    """For each launch of each kernel: its block-size keywords that are numbers, as (keyword,
    the node where the number is written: the literal, or the constant or launcher local it
    names, the number)."""
    index = index_module(Document(source).root)
    for kernel in index.kernels:
        if not kernel.launches:
            continue
        site = _Site(source, kernel.name)
        for launch in kernel.launches:
            targets = [(name, *site.block_target(value, launch.node)) for name, (_, value) in launch.keywords.items()
                       if name in kernel.constexpr_names and BLOCK_NAME.search(name)]
            yield kernel, launch, [(name, target, number) for name, target, number in targets if number is not None]


def block_sizes(source: str) -> dict[tuple[str, str], int]:
    """The block size each launched kernel's launch passes, by (kernel, keyword), where it is
    a number; the first launch wins."""
    sizes: dict[tuple[str, str], int] = {}
    try:
        for kernel, _, blocks in launch_blocks(source):
            for name, _, number in blocks:
                sizes.setdefault((kernel.name, name), number)
    except Exception:  # a candidate tree-sitter reads oddly: no sizes, no trend
        return {}
    return sizes


def block_trend(original: str, base: str, speedup: float | None) -> dict[tuple[str, str], bool]:
    """Which way each block size moved from `original` to `base` (True: it grew), when `base`
    measured faster than the original: the direction that paid so far. Empty otherwise."""
    if speedup is None or not speedup > 1.0:
        return {}
    before, after = block_sizes(original), block_sizes(base)
    return {knob: after[knob] > size for knob, size in before.items() if knob in after and after[knob] != size}


FOLLOW_TREND = 0.75
"""How often a step follows the trend (moves a block size further the way that paid) when one
exists; otherwise, and the rest of the time, moves are drawn uniformly."""


def _by_trend(moves: list[Move], trend: dict[tuple[str, str], bool], rng: random.Random) -> list[Move]:
    """`moves` (already shuffled) with those that push a block further the way the trend went
    first, and those that take it back last: most of the time, so the search still wanders."""
    if not trend or rng.random() >= FOLLOW_TREND:
        return moves

    def rank(move: Move) -> int:
        if move.block is None or move.block not in trend:
            return 1
        return 0 if move.grows == trend[move.block] else 2
    return sorted(moves, key=rank)


# -- regenerate: the transformation library -------------------------------------------------

_OFFSETS = re.compile(
    r"^(?P<indent>[ \t]*)(?P<name>\w+)\s*=\s*(?P<pid>\w+)\s*\*\s*(?P<block>\w+)\s*\+\s*tl\.arange\(\s*0\s*,\s*(?P=block)\s*\)\s*$",
    re.MULTILINE,
)


def _vector_hints(source: str, kernel: str, rng: random.Random) -> str | None:
    site = _Site(source, kernel)
    body = text(site.kernel.node)
    match = _OFFSETS.search(body)
    if match is None or "max_contiguous" in body:
        return None
    hint = (f"\n{match['indent']}{match['name']} = tl.max_contiguous(tl.multiple_of({match['name']}, "
            f"{match['block']}), {match['block']})")
    new_body = body[:match.end()] + hint + body[match.end():]
    return source.replace(body, new_body, 1) if source.count(body) == 1 else None


def _reread(load: Node) -> bool:
    arguments = load.child_by_field_name("arguments")
    pointer = arguments.named_children[0] if arguments is not None and arguments.named_children else None
    return pointer is not None and (b"%" in (pointer.text or b"") or b"//" in (pointer.text or b""))


def _streaming_loads(source: str, kernel: str, rng: random.Random) -> str | None:
    site = _Site(source, kernel)
    # A load indexed with `%` or `//` (a bias per feature, a row's scale) reads the same data in
    # many programs: evicting it first would make each of them fetch it again.
    loads = [n for n in _loads(site) if b"eviction_policy" not in (n.text or b"") and not _reread(n)]
    if not loads:
        return None
    data = site.data
    for load in sorted(loads, key=lambda n: n.end_byte, reverse=True):
        arguments = load.child_by_field_name("arguments")
        if arguments is None or not arguments.named_children:
            continue
        end = arguments.named_children[-1].end_byte
        data = data[:end] + b', eviction_policy="evict_first"' + data[end:]
    return data.decode("utf-8")


def _block_jump(source: str, kernel: str, rng: random.Random,
                trend: dict[tuple[str, str], bool] | None = None) -> str | None:
    site = _Site(source, kernel)
    edits: dict[int, tuple[Node, str]] = {}  # by start byte: a constant two launches share moves once
    constexprs = site.kernel.constexpr_names
    for launch in site.kernel.launches:
        ratio = None
        for name, (_, value) in launch.keywords.items():
            target, number = site.block_target(value, launch.node)
            if number is None or name not in constexprs or not BLOCK_NAME.search(name) or not _is_pow2(number):
                continue
            # A jump from the pool kernel's own size, not a random one: what made it good stays near.
            choices = [v for v in (number * 4, number // 4) if MIN_BLOCK <= v <= MAX_BLOCK] or \
                [v for v in (number * 2, number // 2) if MIN_BLOCK <= v <= MAX_BLOCK]
            if not choices or target.start_byte in edits:
                continue
            # The way that paid so far, most of the time (`FOLLOW_TREND`); either way otherwise.
            grows = (trend or {}).get((kernel, name))
            followed = [v for v in choices if (v > number) == grows]
            block = rng.choice(followed if grows is not None and followed and rng.random() < FOLLOW_TREND else choices)
            ratio = ratio or block / number
            edits[target.start_byte] = (target, str(block))
        warps = launch.keywords.get("num_warps")
        number = _int(warps[1]) if warps is not None else None
        if ratio is not None and warps is not None and number is not None:
            scaled = min(max(int(number * ratio), 1), 16)
            if scaled != number and _is_pow2(scaled):
                edits[warps[1].start_byte] = (warps[1], str(scaled))
    if not edits:
        return None
    data = site.data
    for node, replacement in sorted(edits.values(), key=lambda e: e[0].start_byte, reverse=True):
        data = data[:node.start_byte] + replacement.encode() + data[node.end_byte:]
    return data.decode("utf-8")


Transformation = Callable[[str, str, random.Random], "str | None"]


def _fuse(source: str, kernel: str, rng: random.Random) -> str | None:
    return fuse_elementwise(source, kernel)


def _single_pass(source: str, kernel: str, rng: random.Random) -> str | None:
    return single_pass(source, kernel)


def _group_m(source: str, kernel: str, rng: random.Random) -> str | None:
    return group_m(source, kernel)


def _dot_tf32(source: str, kernel: str, rng: random.Random) -> str | None:
    return dot_tf32(source, kernel)


def _autotune(source: str, kernel: str, rng: random.Random) -> str | None:
    return insert_autotune(source, kernel)


def _persistent(source: str, kernel: str, rng: random.Random) -> str | None:
    return persistent_programs(source, kernel)


# What only a GPU can value or judge: the interpreter has no L2 and computes `tl.dot` in fp32,
# so it would time these as no gain and verify TF32 without its error (matmul.py).
GPU_ONLY = frozenset({"group-m", "dot-tf32", "autotune", "persistent"})


def transformations(device: str = "gpu") -> dict[str, Transformation]:
    """The regenerate library: name -> f(source, kernel, rng) -> new source, or None where the
    kernel does not meet the transformation's preconditions. `device`: what times and verifies
    the candidates; without a GPU the GPU-only rewrites are left out."""
    library: dict[str, Transformation] = {
        "fuse-elementwise": _fuse, "single-pass": _single_pass, "vector-hints": _vector_hints,
        "streaming-loads": _streaming_loads, "block-jump": _block_jump, "group-m": _group_m, "dot-tf32": _dot_tf32,
        "autotune": _autotune, "persistent": _persistent,
    }
    return {name: f for name, f in library.items() if device == "gpu" or name not in GPU_ONLY}


def launched_kernels(source: str, first: str) -> list[str]:
    """The kernels `source` launches, `first` first when it is one of them: what a regeneration
    transforms (after a fusion the kernel asked for may no longer be launched)."""
    index = index_module(Document(source).root)
    names = [k.name for k in index.kernels if k.launches]
    return sorted(names, key=lambda name: name != first)


def _digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


class OfflineProposer:
    """Config-space refinements and library transformations, chosen at random (seeded) among
    those not proposed before in this search."""

    name = "offline"

    def __init__(self, rng: random.Random | None = None) -> None:
        self.rng = rng or random.Random(0)
        self._proposed: set[str] = set()

    @property
    def cost_usd(self) -> float:
        return 0.0

    def _fresh(self, source: str) -> bool:
        digest = _digest(source)
        if digest in self._proposed:
            return False
        self._proposed.add(digest)
        return True

    def refine(self, context: StepContext) -> tuple[str, list[Edit]]:
        if not context.chain:
            raise ProposalError("nothing to refine")
        base, evaluation = context.chain[-1]
        measure = "predicted" if context.task.objective == "predicted" else context.task.device
        moves = config_moves(base, context.task.kernel, measure)
        self.rng.shuffle(moves)
        moves = _by_trend(moves, block_trend(context.task.source, base, evaluation.speedup), self.rng)
        for move in moves:
            edits = [Edit(move.edit.old, move.edit.new, move.description)]
            candidate = apply_edits(base, edits)
            if self._fresh(candidate):
                return candidate, edits
        raise ProposalError("no untried launch or config move left for this kernel")

    def regenerate(self, context: StepContext) -> str:
        correct = [entry for entry in context.pool if entry.evaluation.speedup is not None]
        best = max(correct, key=lambda e: e.evaluation.speedup or 0.0) if correct else None
        base = best.source if best is not None else context.task.source
        trend = block_trend(context.task.source, base, best.evaluation.speedup if best is not None else None)
        library = transformations(context.task.device)
        library["block-jump"] = functools.partial(_block_jump, trend=trend)
        fuse = library.pop("fuse-elementwise")
        rest = list(library.items())
        for _ in range(3):  # a few tries: a jump can land on a variant proposed before
            # Fusion first, always where it applies: it needs the two launches' block sizes
            # equal, which a jump of one of them would break; the others in a random order.
            candidate = fuse(base, context.task.kernel, self.rng) or base
            applied = ["fuse-elementwise"] if candidate != base else []
            self.rng.shuffle(rest)
            for name, transform in rest:
                if name != "block-jump" and self.rng.random() < 0.5:
                    continue
                for kernel in launched_kernels(candidate, context.task.kernel):
                    changed = transform(candidate, kernel, self.rng)
                    if changed is not None and changed != candidate:
                        candidate, applied = changed, [*applied, name]
                        break
            if applied and self._fresh(candidate):
                return candidate
        raise ProposalError("no transformation in the library applies to this kernel")
