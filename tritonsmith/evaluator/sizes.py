"""Problem sizes: scaling a spec's size constants down for the interpreter, and the odd
"tail" sizes of the extra-shape trial.

Real problems are far beyond Triton's interpreter (KernelBench's level-1 ReLU is 4096 × 393216
floats). A spec's sizes are module-level integer constants (`batch_size = 4096`) read by its
input functions; without a GPU they are rewritten in the source the workers import, for the
reference and the candidate alike, so both see the same problem and the verdict names the sizes
it used. Nothing here imports torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping

from tree_sitter import Node

from ..analysis import Document
from ..analysis.syntax import text, walk
from .specs import top_level

__all__ = [
    "BATCH_LIMIT",
    "DIM_LIMIT",
    "GPU_BATCH_LIMIT",
    "GPU_DIM_LIMIT",
    "SCALE_THRESHOLD",
    "rewrite_constants",
    "scale_value",
    "scaled_constants",
    "size_constants",
    "tail_sizes",
    "tail_value",
]

BATCH_LIMIT = 16
DIM_LIMIT = 256
GPU_BATCH_LIMIT = 128
GPU_DIM_LIMIT = 16384
"""On a GPU, correctness runs at sizes scaled to these (a 4096 × 393216 problem checks at
128 × 12288): the trials' inputs and outputs cross between processes through files, and the
reference compares in float64. Timing always runs at the sizes as written."""
SCALE_THRESHOLD = 64
TAIL_MINIMUM = 8
_BATCH_NAME = re.compile(r"(^|_)(batch|bs|b)(_|$)|batch", re.IGNORECASE)
KERNELBENCH_INPUTS = ("get_inputs", "get_init_inputs")


def scale_value(name: str, value: int, *, gpu: bool = False) -> int:
    """The size a problem constant gets under the interpreter (documented policy).

    Integers below `SCALE_THRESHOLD` (64) stay. Others are halved until they are at most
    `BATCH_LIMIT` (16) for batch-like names (`batch_size`, `batch`, `bs`, `B`) or `DIM_LIMIT`
    (256) otherwise. Halving keeps a power of two a power of two and keeps the odd factor
    (393216 = 3·2^17 becomes 192); a value divisible by 16 stops halving before it would lose
    that (a tail-free shape must stay tail-free) and is then rounded down to a multiple of 16
    within the limit. An odd value is floor-divided like the rest. With `gpu`, the limits are
    `GPU_BATCH_LIMIT` and `GPU_DIM_LIMIT`.
    """
    batch = bool(_BATCH_NAME.search(name)) or name == "B"
    if gpu:
        limit = GPU_BATCH_LIMIT if batch else GPU_DIM_LIMIT
    else:
        limit = BATCH_LIMIT if batch else DIM_LIMIT
    if value < SCALE_THRESHOLD or value <= limit:
        return value
    by16 = value % 16 == 0
    scaled = value
    while scaled > limit:
        half = scaled // 2
        if by16 and half % 16 != 0:
            return max(16, (limit // 16) * 16)
        scaled = half
    return max(1, scaled)


def tail_value(value: int) -> int:
    """An odd size near three quarters of `value` that is not a power of two (256 -> 193,
    16 -> 13), so a kernel that assumed whole blocks meets a tail. Sizes under 8 stay."""
    if value < TAIL_MINIMUM:
        return value
    tail = value - value // 4
    tail += 1 - tail % 2  # odd
    return tail if tail != value else tail - 2


def _int_assignments(root: Node) -> Iterator[tuple[str, Node]]:
    """(name, integer node) for each module-level `NAME = <int literal>`."""
    for node in root.named_children:
        if node.type != "expression_statement" or node.named_child_count != 1:
            continue
        assign = node.named_children[0]
        if assign.type != "assignment":
            continue
        left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        if left is None or right is None or left.type != "identifier" or right.type != "integer":
            continue
        try:
            int(text(right).replace("_", ""), 0)
        except ValueError:
            continue
        yield text(left), right


def size_constants(source: str, readers: Iterable[str] = KERNELBENCH_INPUTS) -> dict[str, int]:
    """Module-level integer constants of `source` that the functions named `readers` read."""
    root = Document(source).root
    readers = set(readers)
    used: set[str] = set()
    for name, node in top_level(root):
        if name in readers:
            used |= {text(n) for n in walk(node) if n.type == "identifier"}
    return {name: int(text(literal).replace("_", ""), 0)
            for name, literal in _int_assignments(root) if name in used}


def scaled_constants(source: str, readers: Iterable[str] = KERNELBENCH_INPUTS, *,
                     gpu: bool = False) -> dict[str, tuple[int, int]]:
    """The size constants that scaling changes, mapped to (original, scaled)."""
    sizes: dict[str, tuple[int, int]] = {}
    for name, value in size_constants(source, readers).items():
        scaled = scale_value(name, value, gpu=gpu)
        if scaled != value:
            sizes[name] = (value, scaled)
    return sizes


def tail_sizes(source: str, readers: Iterable[str], used: Mapping[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """(original, tail) for each size constant, starting from the sizes the main trials used."""
    sizes = {}
    for name, value in size_constants(source, readers).items():
        current = used[name][1] if name in used else value
        tail = tail_value(current)
        if tail != current:
            sizes[name] = (value, tail)
    return sizes


def rewrite_constants(source: str, sizes: Mapping[str, tuple[int, int]]) -> str:
    """`source` with each module-level `NAME = <original>` of `sizes` set to its new value.

    Applied to reference and candidate alike, so both see the same problem."""
    document = Document(source)
    data = document.source
    edits = [
        (node.start_byte, node.end_byte, str(sizes[name][1]).encode())
        for name, node in _int_assignments(document.root)
        if name in sizes and int(text(node).replace("_", ""), 0) == sizes[name][0]
    ]
    for start, end, new in sorted(edits, reverse=True):
        data = data[:start] + new + data[end:]
    return data.decode("utf-8")
