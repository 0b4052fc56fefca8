"""The offline proposer: no model, always available.

Refine steps move through the kernel's launch and config space, one knob at a time, as exact
text edits: a block-size keyword at a launch (or the module constant it names) doubled or
halved, `num_warps` and `num_stages` at the launch or in an autotune `Config`, a `Config` added
or removed, a cache/eviction hint on a load. Regenerate steps start from the best kernel in the
diverse pool (or the original) and apply a structural transformation from a small library
where the kernel meets its preconditions, together with a jump in block size:

- `vector-hints`: `offsets = pid * BLOCK + tl.arange(0, BLOCK)` gains
  `tl.max_contiguous(tl.multiple_of(...))`, so loads and stores can use wide vector accesses;
- `streaming-loads`: loads in a kernel without reuse get `eviction_policy="evict_first"`;
- `block-jump`: every block size at the launch set to another power of two, with `num_warps`
  scaled to match.

Which knob matters depends on the device: without a GPU the interpreter's time grows with the
number of program instances, so block sizes dominate; on a GPU warps, stages and hints count
too. The search (not this module) keeps what measures faster.

Everything here is tree-sitter and text; nothing imports torch or triton.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tree_sitter import Node

from ...analysis import Document, index_module
from ...analysis.index import Kernel, ModuleIndex
from ...analysis.syntax import text, walk
from ..model import Edit, ProposalError, StepContext, apply_edits

__all__ = ["OfflineProposer", "config_moves", "transformations"]

BLOCK_NAME = re.compile(r"BLOCK|TILE|GROUP|SIZE|_M$|_N$|_K$", re.IGNORECASE)
MIN_BLOCK, MAX_BLOCK = 16, 8192
WARPS = (1, 2, 4, 8, 16)
STAGES = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Move:
    """One proposed change: what it does, and the edit that does it."""

    description: str
    edit: Edit


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


def _block_values(value: int) -> list[int]:
    return [v for v in (value * 2, value * 4, value // 2) if MIN_BLOCK <= v <= MAX_BLOCK and _is_pow2(v)]


def _launch_moves(site: _Site) -> Iterator[Move]:
    constexprs = site.kernel.constexpr_names
    for launch in site.kernel.launches:
        for name, (_, value) in launch.keywords.items():
            number = _int(value)
            target = value
            if number is None and value.type == "identifier":  # BLOCK_SIZE=BLOCK, a module constant
                literal = site.module_int(text(value))
                target, number = (literal, _int(literal)) if literal is not None else (value, None)
            if number is None:
                continue
            if name == "num_warps":
                choices = [w for w in WARPS if w != number]
            elif name == "num_stages":
                choices = [s for s in STAGES if s != number]
            elif name in constexprs and BLOCK_NAME.search(name) and _is_pow2(number):
                choices = _block_values(number)
            else:
                continue
            for choice in choices:
                edit = site.edit(target, str(choice))
                if edit is not None:
                    yield Move(f"{name}={choice} at the launch (was {number})", edit)
        arguments = launch.node.child_by_field_name("arguments")
        if arguments is not None and "num_warps" not in launch.keywords and launch.keywords:
            last = arguments.named_children[-1]
            for warps in (2, 8):
                edit = _edit(site.source, site.data, last.end_byte, last.end_byte, f", num_warps={warps}")
                if edit is not None:
                    yield Move(f"num_warps={warps} at the launch (was the default, 4)", edit)


def _config_moves(site: _Site) -> Iterator[Move]:
    autotune = site.kernel.autotune
    if autotune is None:
        return
    for i, config in enumerate(autotune.configs, 1):
        for name, value in config.values.items():
            number = _int(value)
            if number is not None and _is_pow2(number) and BLOCK_NAME.search(name):
                for choice in _block_values(number):
                    if (edit := site.edit(value, str(choice))) is not None:
                        yield Move(f"Config #{i}: {name}={choice} (was {number})", edit)
        for option, options in (("num_warps", WARPS), ("num_stages", STAGES)):
            number = _int(config.options.get(option))
            if number is None or number not in options:
                continue
            at = options.index(number)
            for choice in options[max(at - 1, 0):at] + options[at + 1:at + 2]:  # the neighbours
                if (edit := site.edit(config.options[option], str(choice))) is not None:
                    yield Move(f"Config #{i}: {option}={choice} (was {number})", edit)
    if autotune.configs:
        first = autotune.configs[0].node
        if len(autotune.configs) > 1:  # drop the last Config (fewer to tune, or a bad one gone)
            last = autotune.configs[-1].node
            previous = autotune.configs[-2].node
            edit = _edit(site.source, site.data, previous.end_byte, last.end_byte, "")
            if edit is not None:
                yield Move(f"drop Config #{len(autotune.configs)}", edit)
        for warps in (2, 8):
            copy = re.sub(r"num_warps\s*=\s*\d+", f"num_warps={warps}", text(first))
            if copy != text(first):
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


def config_moves(source: str, kernel: str) -> list[Move]:
    """Every one-knob move the kernel's launch, configs and loads allow."""
    site = _Site(source, kernel)
    return [*_launch_moves(site), *_config_moves(site), *_hint_moves(site)]


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


def _streaming_loads(source: str, kernel: str, rng: random.Random) -> str | None:
    site = _Site(source, kernel)
    loads = [n for n in _loads(site) if b"eviction_policy" not in (n.text or b"")]
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


def _block_jump(source: str, kernel: str, rng: random.Random) -> str | None:
    site = _Site(source, kernel)
    edits: list[tuple[Node, str]] = []
    block = None
    constexprs = site.kernel.constexpr_names
    for launch in site.kernel.launches:
        for name, (_, value) in launch.keywords.items():
            target, number = value, _int(value)
            if number is None and value.type == "identifier":
                literal = site.module_int(text(value))
                target, number = (literal, _int(literal)) if literal is not None else (value, None)
            if number is None or name not in constexprs or not BLOCK_NAME.search(name) or not _is_pow2(number):
                continue
            choices = [v for v in (64, 128, 256, 512, 1024, 2048, 4096) if v != number]
            block = rng.choice(choices)
            edits.append((target, str(block)))
    if not edits:
        return None
    data = site.data
    for node, replacement in sorted(edits, key=lambda e: e[0].start_byte, reverse=True):
        data = data[:node.start_byte] + replacement.encode() + data[node.end_byte:]
    return data.decode("utf-8")


Transformation = Callable[[str, str, random.Random], "str | None"]


def transformations() -> dict[str, Transformation]:
    """The regenerate library: name -> f(source, kernel, rng) -> new source, or None where the
    kernel does not meet the transformation's preconditions."""
    return {"vector-hints": _vector_hints, "streaming-loads": _streaming_loads, "block-jump": _block_jump}


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
        base = context.chain[-1][0]
        moves = config_moves(base, context.task.kernel)
        self.rng.shuffle(moves)
        for move in moves:
            edits = [Edit(move.edit.old, move.edit.new, move.description)]
            candidate = apply_edits(base, edits)
            if self._fresh(candidate):
                return candidate, edits
        raise ProposalError("no untried launch or config move left for this kernel")

    def regenerate(self, context: StepContext) -> str:
        correct = [entry for entry in context.pool if entry.evaluation.speedup is not None]
        base = max(correct, key=lambda e: e.evaluation.speedup or 0.0).source if correct else context.task.source
        library = list(transformations().items())
        self.rng.shuffle(library)
        for _ in range(3):  # a few tries: a jump can land on a variant proposed before
            candidate = base
            applied: list[str] = []
            for name, transform in library:
                if name != "block-jump" and self.rng.random() < 0.5:
                    continue
                changed = transform(candidate, context.task.kernel, self.rng)
                if changed is not None and changed != candidate:
                    candidate, applied = changed, [*applied, name]
            if applied and self._fresh(candidate):
                return candidate
        raise ProposalError("no transformation in the library applies to this kernel")
