"""Problem sizes: the sizes a spec's trials run at, and the odd sizes of the extra trial.

Real problems can be far beyond Triton's interpreter (KernelBench's level-1 ReLU is 4096 ×
393216 floats). A spec's sizes are module-level constants that its input functions
(`get_inputs`, `get_init_inputs`, a harness's `F_inputs`) read, directly or through other
constants and module-level functions, in every form problems write them: `N = 4096`,
`M = 1024 * 2`, `N: int = 4096`, `height = width = 256`, `D, H, W = 16, 32, 32`,
`input_shape = (4096,)`, and derived ones (`dim = 2 * hidden`, `groups = in_channels`). Only the
numbers written as literals are rewritten, in the reference's and the candidate's source alike
(`rewrite_constants`), so both see the same problem; derived constants follow by themselves.

The policy (docs/harness.md, "Sizes without a GPU"):

- **Budget.** The sizes as written are kept when the largest input tensor has at most
  `ELEMENT_BUDGET` (64k) elements and the work (a GEMM's M·N·K, a convolution's
  B·C_in·H·W·C_out·k) is at most `WORK_BUDGET` (2^24), both lowered for files with small blocks
  (the interpreter's time goes by program instances: `PROGRAM_BUDGET`). Otherwise constants
  shrink, about a quarter at a time, the largest first (batch sizes before the others), until
  both hold: the total is bounded, not each dimension.
- **Soundness.** A size never gains a power-of-two factor: 4000 = 32·125 scales to 32·odd, never
  to 256, so a kernel that needs whole blocks meets a tail wherever it would at the real size; a
  size that is not a power of two never becomes one (`next_power_of_2` blocks still see a tail).
- **Fidelity.** A size keeps its power-of-two factor up to the largest block in play (2^10, or
  the largest power-of-two block the file writes), so a shape without a tail keeps having none;
  only when the budget cannot be met that way is the factor given up, one power at a time.
- **Structure.** When a structural constant divides a size that builds the model
  (num_groups | channels, num_heads | embed_dim, patch_size | image_size) it still does, with a
  quotient of at least 2 (no one-channel groups); equal sizes of one role stay equal (in and out
  features, height and width); a scaled size stays at least twice any kernel size, stride, pool,
  group or head count it was at least twice, so the reference still runs. Coincidences (a batch
  of 128 dividing 512 features) bind nothing.

The extra trial moves each scalable constant to the least even size near three quarters of the
one used that the relations allow: odd where possible, a multiple of the groups for channels.

Nothing here imports torch (the server imports it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

from tree_sitter import Node

from ..analysis import Document
from ..analysis.syntax import dotted_name, text, unparen, walk
from ..analysis.values import compile_expression, compile_sequence
from .specs import top_level

__all__ = [
    "size_branches",
    "uniform_plan",
    "ELEMENT_BUDGET",
    "GPU_ELEMENT_BUDGET",
    "GPU_WORK_BUDGET",
    "KERNELBENCH_INPUTS",
    "SCALE_THRESHOLD",
    "WORK_BUDGET",
    "SizePlan",
    "block_exponent",
    "interpreter_budget",
    "plan_sizes",
    "rewrite_constants",
    "scaled_constants",
    "size_constants",
]

ELEMENT_BUDGET = 1 << 16
"""Elements of the largest input tensor the interpreter runs as written (a 64k-element ReLU is
0.06 s a call with 1024-wide blocks)."""
WORK_BUDGET = 1 << 24
"""The work (`_Problem.cost`: a GEMM's M·N·K, a convolution's B·C_in·H·W·C_out·k) the
interpreter runs as written."""
PROGRAM_BUDGET = 256
"""The interpreter's time goes by block steps (a program instance, or one turn of a loop over
blocks: about 0.2-1 ms each on these machines, whatever the block): the element budget is at
most this many of the smallest block the user's file writes, the work budget this many of its
cube. A 16-wide ReLU over 64k elements would be 4096 programs, 3.5 s a call, and a verification
makes about ten calls."""
DEFAULT_BLOCK = 256  # the smallest block assumed when the file writes none (next_power_of_2 blocks)
MIN_TILE = 16  # `n // 2` is no block: smaller "blocks" are not counted
GPU_ELEMENT_BUDGET = 1 << 21
GPU_WORK_BUDGET = 1 << 40
"""On a GPU, correctness runs within these (about 128 × 12288 floats for the 4096 × 393216 ReLU):
the trials' inputs and outputs cross between processes through files, and the reference
compares in float64. Timing always runs at the sizes as written."""
SCALE_THRESHOLD = 16
"""Constants below this are never changed: kernel sizes, strides, groups, heads, dim indices."""
BATCH_LIMIT = 16  # batch-like constants above this shrink before any other
MIN_SIZE = 8  # no constant is scaled below this ...
MIN_BATCH = 2  # ... but a batch size, down to this (two items still show batch indexing)
MIN_BLOCK_EXPONENT = 10  # blocks up to 2^10 are assumed in play whatever the file writes
MAX_BLOCK_EXPONENT = 16
FREE_EXPONENT = 3
"""A derived size or a tensor's element count may gain factors of two up to 2^3 (a block of 16
or more still meets its tail); constants themselves never gain one."""
STEP = 0.75  # each shrinking step takes a constant to at most this share of its value
TAIL_SHARE = 0.75
KERNELBENCH_INPUTS = ("get_inputs", "get_init_inputs")

_BATCH_NAME = re.compile(r"(^|_)(batch|bs|b)(_|$)|batch", re.IGNORECASE)
_BLOCK_NAME = re.compile(r"block|tile|chunk", re.IGNORECASE)
_STRUCTURAL_NAME = re.compile(r"group|head|patch|window|split|chunk|block|tile|shuffle|upscale",
                              re.IGNORECASE)
"""A constant so named that divides a size is a structure to keep (num_groups | channels,
num_heads | embed_dim, patch_size | image_size). Other divisions, say a batch of 128 dividing 512
features or a kernel size of 3 dividing 48 channels, are coincidences the extra trial breaks."""
_EXTENT_NAME = re.compile(r"kernel|stride|dilation|pad|pool|patch|window|group|head", re.IGNORECASE)
"""A size stays at least twice a fixed constant so named that it was at least twice (a height
against the kernel size, channels against the groups), so that the reference still runs."""
_CREATORS = {"randn", "rand", "randint", "empty", "zeros", "ones", "full", "normal"}
_SHAPE_FIRST = {"randint", "full", "normal"}  # their scalars are not sizes: only a tuple is
_CALLABLES: dict[str, Callable[..., object]] = {"int": int, "min": min, "max": max, "abs": abs,
                                                 "round": round, "len": len}

SizeValue = Union[int, float, tuple]  # noqa: UP007 - a runtime alias, evaluated on Python 3.10
Env = dict[str, "SizeValue | None"]
SizeExpression = Callable[[Env], "SizeValue | None"]


def _valuation(n: int) -> int:
    """The exponent of 2 in n (n >= 1)."""
    return (n & -n).bit_length() - 1


def _power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


# -- expressions ------------------------------------------------------------------------------


def _known(value: Any) -> SizeValue | None:
    """A size, or a tuple of sizes, that is known throughout; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, tuple) and all(_known(item) is not None for item in value):
        return value
    return None


def _compile(node: Node | None) -> SizeExpression:
    """`node` as a function of the module's constants (analysis/values.py's expressions, calling
    `_CALLABLES` only); None where it cannot tell. Compiled once, evaluated for every size
    assignment the planner tries."""
    compiled = compile_expression(node, dotted_name, calls=_CALLABLES)
    return lambda env: _known(compiled(env))


def _sequence(items: list[Node]) -> SizeExpression:
    """A tuple of the items' values (`*name` splices a tuple in), known throughout or None."""
    compiled = compile_sequence(items, dotted_name, calls=_CALLABLES)
    return lambda env: _known(compiled(env))


def _constant_int(node: Node) -> int | None:
    """The value of an expression of literals only (`4096`, `1024 * 2`), else None."""
    if any(n.type == "identifier" for n in walk(node)):
        return None
    value = _compile(node)({})
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- the module's constants -------------------------------------------------------------------


@dataclass
class _Literal:
    """A number written at module level that scaling may rewrite (`4096`, `1024 * 2`)."""

    key: str  # "dim", "height" for `height = width = 256`, "input_shape[0]"
    names: tuple[str, ...]  # every name it sizes: ("height", "width")
    value: int
    start: int  # byte range of the expression in the source
    end: int


@dataclass
class _Binding:
    """One module-level name, in source order: a literal, a tuple of parts, or an expression."""

    name: str
    literal: _Literal | None = None
    parts: tuple[_Literal | SizeExpression, ...] | None = None
    expr: SizeExpression | None = None
    reads: frozenset[str] = frozenset()  # the names its expression reads


def _identifiers(node: Node | None) -> frozenset[str]:
    return frozenset(text(n) for n in walk(node) if n.type == "identifier")


def _targets(statement: Node) -> tuple[list[Node], Node | None]:
    """The targets of `a = b = value` (or one target) and the value, for plain assignments."""
    if statement.type != "expression_statement" or statement.named_child_count != 1:
        return [], None
    node, lefts = statement.named_children[0], []
    while node.type == "assignment":
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None:
            return [], None
        lefts.append(left)
        node = right
    return lefts, (node if lefts else None)


def _bind_value(names: list[str], value: Node) -> list[_Binding]:
    """Bindings of `names` (a chain) to one value expression."""
    inner = unparen(value) or value
    number = _constant_int(inner)
    if number is not None:
        literal = _Literal(names[0], tuple(names), number, value.start_byte, value.end_byte)
        return [_Binding(name, literal=literal) for name in names]
    if inner.type in ("tuple", "list") and all(c.type != "list_splat" for c in inner.named_children):
        items = [c for c in inner.named_children if c.type != "comment"]
        parts: list[_Literal | SizeExpression] = []
        for i, item in enumerate(items):
            element = _constant_int(item)
            key = f"{names[0]}[{i}]"
            parts.append(_Literal(key, (key,), element, item.start_byte, item.end_byte)
                         if element is not None else _compile(item))
        return [_Binding(name, parts=tuple(parts), reads=_identifiers(inner)) for name in names]
    compiled = _compile(inner)
    return [_Binding(name, expr=compiled, reads=_identifiers(inner)) for name in names]


def _statement_bindings(statement: Node) -> list[_Binding]:
    lefts, value = _targets(statement)
    if value is None:
        if statement.type == "expression_statement" and statement.named_child_count == 1:
            node = statement.named_children[0]
            if node.type == "augmented_assignment":  # `N *= 2`: its value is not followed
                left = node.child_by_field_name("left")
                if left is not None and left.type == "identifier":
                    return [_Binding(text(left))]
        return []
    if all(left.type == "identifier" for left in lefts):
        return _bind_value([text(left) for left in lefts], value)
    if len(lefts) == 1 and lefts[0].type in ("pattern_list", "tuple_pattern", "list_pattern"):
        names = [c for c in lefts[0].named_children]
        values = unparen(value)
        items = [c for c in values.named_children if c.type != "comment"] if values is not None and \
            values.type in ("expression_list", "tuple", "list") else []
        if all(n.type == "identifier" for n in names) and len(items) == len(names) and \
                all(item.type != "list_splat" for item in items):
            return [b for n, item in zip(names, items) for b in _bind_value([text(n)], item)]
        return [_Binding(text(n)) for n in names if n.type == "identifier"]  # values unknown
    return []


def _bindings(root: Node) -> list[_Binding]:
    return [b for statement in root.named_children for b in _statement_bindings(statement)]


# -- what the inputs read ---------------------------------------------------------------------


def _functions(root: Node) -> dict[str, Node]:
    found = {}
    for name, node in top_level(root):
        definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
        if definition is not None and definition.type == "function_definition":
            found[name] = node
    return found


def _reached(root: Node, readers: Iterable[str]) -> list[Node]:
    """The reader functions and the module-level functions they call, transitively."""
    functions = _functions(root)
    stack, seen, bodies = [r for r in readers if r in functions], set(), []
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        bodies.append(functions[name])
        stack += [n for n in _identifiers(functions[name]) if n in functions and n not in seen]
    return bodies


def _used(bodies: list[Node], bindings: list[_Binding]) -> set[str]:
    """Module-level names the bodies read, and the names those are computed from."""
    by_name: dict[str, list[_Binding]] = {}
    for binding in bindings:
        by_name.setdefault(binding.name, []).append(binding)
    stack = [n for body in bodies for n in _identifiers(body) if n in by_name]
    used: set[str] = set()
    while stack:
        name = stack.pop()
        if name in used:
            continue
        used.add(name)
        stack += [n for b in by_name[name] for n in b.reads if n in by_name and n not in used]
    return used


def _creations(bodies: list[Node]) -> list[tuple[SizeExpression, frozenset[str]]]:
    """The shape of every tensor the bodies create (`torch.randn(B, *shape)`, `torch.randint(0,
    10, (B, N))`, `torch.zeros(size=(M, N))`), each as a function of the constants, with the
    names its arguments read."""
    shapes = []
    for body in bodies:
        for _, shape in _created_shapes(body):
            if shape:
                reads = frozenset(n for a in shape for n in _identifiers(a))
                shapes.append((_flat_shape(_sequence(shape)), reads))
    return shapes


def _created_shapes(body: Node) -> Iterator[tuple[Node, list[Node]]]:
    """(call, its shape arguments) for each tensor creation in `body` (`torch.randn(B, N)`)."""
    for node in walk(body):
        if node.type != "call":
            continue
        function = (dotted_name(node.child_by_field_name("function")) or "").rsplit(".", 1)[-1]
        args = node.child_by_field_name("arguments")
        if function in _CREATORS and args is not None:
            yield node, _shape_arguments(function, args)


def _shape_arguments(function: str, args: Node) -> list[Node]:
    positional = [a for a in args.named_children if a.type not in ("keyword_argument", "comment")]
    for a in args.named_children:
        if a.type == "keyword_argument" and text(a.child_by_field_name("name")) == "size":
            value = a.child_by_field_name("value")
            return [value] if value is not None else []
    tuples = [a for a in positional if (unparen(a) or a).type in ("tuple", "list")]
    if function in _SHAPE_FIRST:
        return tuples[:1]
    return positional


def _flat_shape(arguments: SizeExpression) -> SizeExpression:
    """Integer dimensions, with tuple-valued arguments (`torch.rand(shape)`) spliced in."""
    def shape(env: Env) -> SizeValue | None:
        values = arguments(env)
        if not isinstance(values, tuple):
            return None
        dims: list[SizeValue] = []
        for value in values:
            dims.extend(value if isinstance(value, tuple) else [value])
        if not dims or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            return None
        return tuple(dims)
    return shape


# -- host code that branches on sizes ----------------------------------------------------------


def size_branches(source: str) -> list[tuple[int, str]]:
    """(line, text) of each place in the host code (not in a jit function, not in the task's
    input functions or reference `Model`) that orders a value against an integer of at least 16
    (`<`, `<=`, `>`, `>=`; never `==`) or clamps it with `min`/`max` against one: `if n_elements < 4096:`, `min(16, pooled)`. Scaled
    sizes may land on the other side of such a threshold than the task's own."""
    document = Document(source)
    found: list[tuple[int, str]] = []

    def excluded(node: Node) -> bool:
        current: Node | None = node
        while current is not None:
            if current.type == "decorated_definition" and b"jit" in b"".join(
                    d.text or b"" for d in current.children if d.type == "decorator"):
                return True
            if current.type in ("function_definition", "class_definition"):
                name = text(current.child_by_field_name("name"))
                if name in KERNELBENCH_INPUTS or name == "Model" or name.endswith("_inputs") or \
                        name.endswith("_reference"):
                    return True
            current = current.parent
        return False

    for node in walk(document.root):
        if node.type == "comparison_operator":
            # Thresholds only: `n == 393216` is a test shape hard-coded (exploit 14), not a path choice.
            operands = [c for c in node.named_children if c.type != "comment"]
            tokens = [c.type for c in node.children if not c.is_named]
            if len(operands) == 2 and tokens and tokens[0] in ("<", "<=", ">", ">=") and \
                    sum(_threshold(o) for o in operands) == 1 and not excluded(node):
                found.append((node.start_point[0] + 1, text(node)))
        elif node.type == "call" and text(node.child_by_field_name("function")) in ("min", "max"):
            args = node.child_by_field_name("arguments")
            values = [c for c in (args.named_children if args else []) if c.type != "comment"]
            if len(values) >= 2 and any(_threshold(v) for v in values) and \
                    not all(_threshold(v) for v in values) and not excluded(node):
                found.append((node.start_point[0] + 1, text(node)))
    return found


def _threshold(node: Node) -> bool:
    value = _constant_int(node) if node.type == "integer" else None
    return value is not None and value >= SCALE_THRESHOLD


# -- sizes written inside the input functions ---------------------------------------------------


def _inline_literals(root: Node) -> list[tuple[str, Node]]:
    """Integer sizes written in place in the shape of a tensor an input function creates
    (`torch.rand(batch_size, in_channels, 224, 224)` in `get_inputs`), each with the module-level
    name it stands for in planning: `<function>_line<row>_dim<i>` (`get_inputs_line57_dim2`)."""
    found = []
    for name, node in _functions(root).items():
        if not name.endswith("inputs"):
            continue
        for call, shape in _created_shapes(node):
            dims: list[Node] = []
            for argument in shape:
                inner = unparen(argument) or argument
                dims.extend(inner.named_children if inner.type in ("tuple", "list") else [inner])
            for i, dim in enumerate(dims):
                if dim.type == "integer" and (value := _constant_int(dim)) is not None and value >= SCALE_THRESHOLD:
                    found.append((f"{name}_line{call.start_point[0] + 1}_dim{i}", dim))
    return found


def _hoisted(source: str) -> str:
    """`source` with each in-place size (`_inline_literals`) replaced by its name, bound at the
    end of the module, so that the planner sees it as one more size constant."""
    document = Document(source)
    found = _inline_literals(document.root)
    if not found:
        return source
    data = document.source
    for name, node in sorted(found, key=lambda pair: pair[1].start_byte, reverse=True):
        data = data[:node.start_byte] + name.encode() + data[node.end_byte:]
    tail = "".join(f"\n{name} = {text(node)}" for name, node in found)
    return data.decode("utf-8") + "\n" + tail + "\n"


# -- the planner ------------------------------------------------------------------------------


@dataclass
class _Knob:
    """Literals with one value that move together (equal sizes stay equal)."""

    keys: tuple[str, ...]
    names: tuple[str, ...]
    value: int
    floor: int  # the least value scaling may give it
    tail_floor: int  # the least value the extra trial may give it
    batch: bool


@dataclass(frozen=True)
class _Relation:
    small: str
    large: str
    ratio: int  # large // small as written, at least 2


class _Problem:
    """A source's size constants, their dependencies and the shapes of the tensors its inputs
    create, evaluated for any assignment of the literals."""

    def __init__(self, source: str, readers: Iterable[str]) -> None:
        root = Document(_hoisted(source)).root
        self.bindings = _bindings(root)
        readers = tuple(readers)
        bodies = _reached(root, readers)
        self.used = _used(bodies, self.bindings)
        # What builds the model (KernelBench's init inputs): its sizes are the ones structure
        # ties together (groups and channels); sizes only the inputs read (batch, height) are
        # tied to nothing. A harness has none: its names alone tell.
        init = _reached(root, [r for r in readers if r == "get_init_inputs"])
        self.structure: set[str] | None = _used(init, self.bindings) if init else None
        counts: dict[str, int] = {}
        for binding in self.bindings:
            counts[binding.name] = counts.get(binding.name, 0) + 1
        self.literals: dict[str, _Literal] = {}
        for binding in self.bindings:
            if binding.name not in self.used or counts[binding.name] > 1:
                continue  # bound twice: which value the inputs see is not ours to tell
            found = [binding.literal] if binding.literal else [p for p in binding.parts or () if isinstance(p, _Literal)]
            for literal in found:
                if all(counts.get(n, 0) <= 1 for n in literal.names):
                    self.literals[literal.key] = literal
        created = _creations(bodies)
        self.shapes = [shape for shape, _ in created]
        self.shape_keys = [self.literal_keys(reads) for _, reads in created]
        self.input_keys = frozenset().union(*self.shape_keys)
        self.init_keys = self.literal_keys(self.structure or ())
        self.original = {key: literal.value for key, literal in self.literals.items()}
        self.scalars0 = self.scalars(self.environment(self.original))
        self.tensors0 = [(i, shape) for i, shape in enumerate(self.tensors(self.environment(self.original)))
                         if shape is not None]
        self.relations = _relations(self.scalars0, self.structure)

    def role(self, name: str) -> bool:
        """Whether `name` (or `name[i]`) builds the model, for grouping equal sizes."""
        return self.structure is None or name.split("[")[0] in self.structure

    def environment(self, values: Mapping[str, int]) -> Env:
        """Every module-level name's value with the literals set to `values`."""
        env: Env = {}
        for binding in self.bindings:
            if binding.literal is not None:
                env[binding.name] = values.get(binding.literal.key, binding.literal.value)
            elif binding.parts is not None:
                parts = [values.get(p.key, p.value) if isinstance(p, _Literal) else p(env) for p in binding.parts]
                env[binding.name] = None if any(p is None for p in parts) else tuple(parts)  # type: ignore[arg-type]
            elif binding.expr is not None:
                env[binding.name] = binding.expr(env)
            else:
                env[binding.name] = None
        return env

    def scalars(self, env: Env) -> dict[str, int]:
        """The integer sizes the inputs read, tuple elements as `name[i]`."""
        found: dict[str, int] = {}
        for name in self.used:
            value = env.get(name)
            items = enumerate(value) if isinstance(value, tuple) else [(None, value)]
            for i, item in items:
                if isinstance(item, int) and not isinstance(item, bool):
                    found[name if i is None else f"{name}[{i}]"] = item
        return found

    def literal_keys(self, names: Iterable[str]) -> frozenset[str]:
        """The literals `names` are computed from."""
        by_name: dict[str, list[_Binding]] = {}
        for binding in self.bindings:
            by_name.setdefault(binding.name, []).append(binding)
        keys: set[str] = set()
        stack, seen = list(names), set()
        while stack:
            name = stack.pop()
            if name in seen or name not in by_name:
                continue
            seen.add(name)
            for binding in by_name[name]:
                parts = [binding.literal] if binding.literal else list(binding.parts or ())
                keys |= {p.key for p in parts if isinstance(p, _Literal) and p.key in self.literals}
                stack += binding.reads
        return frozenset(keys)

    def tensors(self, env: Env) -> list[tuple[int, ...] | None]:
        return [shape(env) for shape in self.shapes]  # type: ignore[misc]

    def cost(self, values: Mapping[str, int]) -> tuple[int, int]:
        """(elements of the largest input or output tensor, work): the work of a tensor is its
        elements times the size constants it does not read (A's M·K times N for a matmul, an
        input's B·C_in·H·W times C_out and the kernel size for a convolution), the most of any
        tensor. Without a shape to read, the product of all the size constants stands for both."""
        sizes = {key: max(1, values.get(key, literal.value)) for key, literal in self.literals.items()}
        # A batch scaled below a tile still costs a whole tile when a GEMM tiles it (a batch of 2
        # in a 16-row block): its work counts as MIN_TILE, so the other sizes shrink instead.
        padding = math.prod(MIN_TILE / v for k, v in sizes.items()
                            if v < MIN_TILE and v < self.literals[k].value and all(_is_batch(n) for n in self.literals[k].names))
        elements, work = 0, 0
        for shape, keys in zip(self.tensors(self.environment(values)), self.shape_keys):
            if shape:
                others = math.prod(v for k, v in sizes.items() if k not in keys)
                elements = max(elements, math.prod(shape), self._output(shape, keys, sizes))
                work = max(work, int(math.prod(shape) * others * padding))
        if not elements:
            elements = work = math.prod(sizes.values())
        return elements, work

    def _output(self, shape: tuple[int, ...], keys: frozenset[str], sizes: Mapping[str, int]) -> int:
        """An estimate of the output a model builds from an input of `shape`: the input with its
        largest model-built dimension (in_features, C_in) replaced by the largest size only the
        model reads (out_features, C_out): what an epilogue kernel runs over."""
        built = [sizes[k] for k in keys & self.init_keys if sizes[k] in shape]
        only = [sizes[k] for k in self.init_keys - self.input_keys]
        if not built or not only:
            return 0
        return math.prod(shape) // max(built) * max(only)

    def admits(self, values: Mapping[str, int], fidelity: int | None, block: int) -> bool:
        """Whether `values` keep what must hold (module docstring): each size's power-of-two
        factor (`fidelity`: kept up to 2^fidelity; None for the tail, which sheds it on purpose),
        the relations between sizes, and positive sizes everywhere."""
        env = self.environment(values)
        scalars = self.scalars(env)
        # A batch is not tiled by the blocks: it keeps its parity, not its power of two (4096
        # rows may become 16 while the 393216 columns keep their 2^10 against a 1024 block).
        batches = {v for n, v in self.scalars0.items() if _is_batch(n)}
        loose = None if fidelity is None else min(fidelity, 1)
        for name, before in self.scalars0.items():
            exact = name in self.literals or any(name in lit.names for lit in self.literals.values())
            if not _keeps(before, scalars.get(name), loose if _is_batch(name) else fidelity, block, exact):
                return False
        shapes = self.tensors(env)
        for i, before_shape in self.tensors0:
            after_shape = shapes[i]
            if after_shape is None or len(after_shape) != len(before_shape):
                return False
            pairs = [(b, a, loose if b in batches else fidelity) for b, a in zip(before_shape, after_shape)]
            pairs.append((math.prod(before_shape), math.prod(after_shape), fidelity))
            if not all(_keeps(b, a, f, block, False) for b, a, f in pairs):
                return False
        return all(_related(r, scalars) for r in self.relations)


def _keeps(before: int, after: int | None, fidelity: int | None, block: int, exact: bool) -> bool:
    if before < 1:
        return after is not None
    if after is None or after < 1:
        return False
    if fidelity is None:
        return True
    v0, v1 = _valuation(before), _valuation(after)
    if v0 < block and v1 > (v0 if exact else max(v0, FREE_EXPONENT)):
        return False  # gained a factor of two: a tail the real size has would vanish
    if not _power_of_two(before) and _power_of_two(after):
        return False
    return v1 >= min(v0, fidelity)


def _relations(scalars: Mapping[str, int], structure: set[str] | None) -> list[_Relation]:
    """The divisions between sizes to keep: a structural constant (`_STRUCTURAL_NAME`, at
    least 2) dividing a larger size, both building the model when `structure` says what does.
    Equal sizes need no relation: `_knobs` moves equal literals together, and a derived alias
    (`groups = in_channels`) follows its literal."""
    items = sorted((v, n) for n, v in scalars.items() if v >= 2)
    return [_Relation(a, b, vb // va) for i, (va, a) in enumerate(items) for vb, b in items[i + 1:]
            if vb > va and vb % va == 0 and _structural(a, b, structure)]


def _structural(small: str, large: str, structure: set[str] | None) -> bool:
    if _is_batch(small) or _is_batch(large):  # a batch size is nobody's multiple or divisor
        return False
    builds = structure is None or {small.split("[")[0], large.split("[")[0]} <= structure
    return builds and bool(_STRUCTURAL_NAME.search(small))


def _related(relation: _Relation, scalars: Mapping[str, int]) -> bool:
    small, large = scalars.get(relation.small), scalars.get(relation.large)
    if small is None or large is None or small < 1:
        return False
    return large % small == 0 and large >= 2 * small


def _is_batch(name: str) -> bool:
    return bool(_BATCH_NAME.search(name)) or name == "B"


def _knobs(problem: _Problem) -> list[_Knob]:
    """The scalable literals (at least SCALE_THRESHOLD), equal values grouped, a batch size
    apart and sizes that build the model apart from those only the inputs read (an equal
    channel count and depth are a coincidence; equal in and out features may be a residual)."""
    fixed = [lit.value for lit in problem.literals.values()
             if 2 <= lit.value < SCALE_THRESHOLD and any(_EXTENT_NAME.search(n) for n in lit.names)]
    groups: dict[tuple[int, bool, bool], list[_Literal]] = {}
    for literal in problem.literals.values():
        if literal.value >= SCALE_THRESHOLD:
            batch = all(_is_batch(n) for n in literal.names)
            role = all(problem.role(n) for n in literal.names)
            groups.setdefault((literal.value, batch, role), []).append(literal)
    knobs = []
    for (value, batch, _), literals in sorted(groups.items()):
        names = tuple(n for lit in literals for n in lit.names)
        floor = MIN_BATCH if batch else max([MIN_SIZE] + [2 * f for f in fixed if 2 * f <= value])
        tail_floor = max([3] + [f + 1 for f in fixed if f < value])
        knobs.append(_Knob(tuple(lit.key for lit in literals), names, value, min(floor, value),
                           min(tail_floor, value), batch))
    return knobs


def _assign(knobs: list[_Knob], current: Mapping[str, int]) -> dict[str, int]:
    return {key: current[k.keys[0]] for k in knobs for key in k.keys}


def _steps(knob: _Knob, current: int, fidelity: int) -> Iterator[int]:
    """Smaller values for `knob`, largest first, at most STEP of `current`: its power-of-two
    factor never grows and stays at least 2^min(its own, fidelity); an odd part above 1 stays
    above 1 (and a power of two stays one)."""
    target = int(current * STEP)
    if knob.batch:
        fidelity = min(fidelity, 1)  # see _Problem.admits
    v0, odd0 = _valuation(knob.value), knob.value >> _valuation(knob.value)
    found = set()
    for a in range(v0, min(v0, fidelity) - 1, -1):
        power = 1 << a
        if odd0 == 1:
            if knob.floor <= power <= target:
                found.add(power)
            continue
        odd = target // power
        odd -= 1 - odd % 2
        for o in range(odd, max(odd - 12, 1), -2):
            if o >= 3 and power * o >= knob.floor:
                found.add(power * o)
    yield from sorted(found, reverse=True)


def _order(knobs: list[_Knob], current: Mapping[str, int]) -> list[_Knob]:
    """Batch sizes above BATCH_LIMIT first, then the largest."""
    return sorted(knobs, key=lambda k: (k.batch and current[k.keys[0]] > BATCH_LIMIT,
                                        current[k.keys[0]]), reverse=True)


def _excess(cost: tuple[int, int], budget: tuple[int, int]) -> tuple[int, int]:
    """How far each measure is over its budget (0 where it is within)."""
    return max(0, cost[0] - budget[0]), max(0, cost[1] - budget[1])


def _shrink(problem: _Problem, knobs: list[_Knob], budget: tuple[int, int], block: int) -> dict[str, int]:
    """Knob values within `budget`, giving up power-of-two fidelity only as far as needed:
    first shrinking what keeps every factor up to the largest block, then one power less..."""
    current = {k.keys[0]: k.value for k in knobs}
    for fidelity in [*range(block, 3, -1), 0]:
        while any(_excess(problem.cost(_assign(knobs, current)), budget)):
            if not _step(problem, knobs, current, fidelity, block, budget):
                break
        if not any(_excess(problem.cost(_assign(knobs, current)), budget)):
            break
    return current


def _step(problem: _Problem, knobs: list[_Knob], current: dict[str, int], fidelity: int, block: int,
          budget: tuple[int, int]) -> bool:
    """Shrink one knob a step, the first in `_order` that can, if that lowers a measure that is
    over budget (a class count is left alone when only the input tensor is too large)."""
    before = _excess(problem.cost(_assign(knobs, current)), budget)
    for knob in _order(knobs, current):
        for value in _steps(knob, current[knob.keys[0]], fidelity):
            trial = _assign(knobs, {**current, knob.keys[0]: value})
            after = _excess(problem.cost(trial), budget)
            if not any(a < b for a, b in zip(after, before)):
                break  # this knob does not weigh on what is over budget
            if problem.admits(trial, fidelity, block):
                current[knob.keys[0]] = value
                return True
    return False


def _tail(problem: _Problem, knobs: list[_Knob], used: Mapping[str, int]) -> dict[str, int]:
    """The extra trial's values: each knob, smallest first (divisors before their multiples),
    at the least even size near TAIL_SHARE of its used value that keeps the relations."""
    current = dict(used)
    for knob in sorted(knobs, key=lambda k: used[k.keys[0]]):
        size = used[knob.keys[0]]
        for value in _tail_values(size, knob.tail_floor):
            trial = {**current, knob.keys[0]: value}
            if problem.admits(_assign(knobs, trial), None, 0):
                current[knob.keys[0]] = value
                break
    return current


def _tail_values(size: int, floor: int) -> Iterator[int]:
    """Sizes below `size` that are not powers of two, by fewest factors of two, then nearest to
    TAIL_SHARE of `size`; then, for a size the relations pin at its least (channels at twice
    the groups), sizes above it up to twice."""
    low = max(floor, 3)
    target = TAIL_SHARE * size
    for a in range(_valuation(size) + 1):
        yield from _near(1 << a, target, low, size - 1)
    for a in range(_valuation(size) + 1):
        yield from _near(1 << a, target, size + 1, 2 * size)


def _near(power: int, target: float, low: int, high: int) -> Iterator[int]:
    """Multiples of `power` by an odd number of at least 3 within [low, high], nearest to
    `target` first."""
    lowest, highest = max(3, -(-low // power)), high // power
    middle = min(max(int(target / power), lowest), highest)
    odds = {o for o in range(middle - 24, middle + 25) if o % 2 and lowest <= o <= highest}
    yield from (power * o for o in sorted(odds, key=lambda o: (abs(power * o - target), o)))


# -- the public face --------------------------------------------------------------------------


@dataclass(frozen=True)
class SizePlan:
    """The sizes a spec's trials run at.

    Attributes:
        main: every size constant the inputs read (literals; tuple elements as `name[i]`) ->
            (as written, used in the trials).
        tail: the constants the extra trial changes -> (as written, value there); the others
            keep their `main` value.
        elements, work: the cost (`ELEMENT_BUDGET`, `WORK_BUDGET`) at the used sizes.
        within_budget: False when the relations left no way down to the budget.
    """

    main: dict[str, tuple[int, int]] = field(default_factory=dict)
    tail: dict[str, tuple[int, int]] = field(default_factory=dict)
    elements: int = 0
    work: int = 0
    within_budget: bool = True

    @property
    def scaled(self) -> dict[str, tuple[int, int]]:
        """The constants whose used value differs from the one written."""
        return {n: v for n, v in self.main.items() if v[0] != v[1]}

    @property
    def tail_run(self) -> dict[str, tuple[int, int]]:
        """The whole mapping for the extra trial (`rewrite_constants`)."""
        return {**self.main, **self.tail}


def _blocks(source: str) -> list[int]:
    """The power-of-two blocks `source` writes: a BLOCK/TILE/CHUNK keyword, assignment,
    parameter default or `triton.Config` key, a `cdiv`/`arange` argument, the right side of a
    `//` (up to 2^MAX_BLOCK_EXPONENT)."""
    found = []
    for node in walk(Document(source).root):
        if node.type != "integer":
            continue
        value = _compile(node)({})
        if isinstance(value, int) and _power_of_two(value) and value <= 1 << MAX_BLOCK_EXPONENT \
                and _block_position(node):
            found.append(value)
    return found


def block_exponent(source: str) -> int:
    """log2 of the largest block `source` writes, at least MIN_BLOCK_EXPONENT: the power of two
    up to which sizes keep their factors."""
    return max([MIN_BLOCK_EXPONENT] + [_valuation(b) for b in _blocks(source)])


def interpreter_budget(source: str) -> tuple[int, int]:
    """(elements, work) the interpreter runs as written for a file whose blocks are those of
    `source` (PROGRAM_BUDGET)."""
    block = min((b for b in _blocks(source) if b >= MIN_TILE), default=DEFAULT_BLOCK)
    return min(ELEMENT_BUDGET, PROGRAM_BUDGET * block), min(WORK_BUDGET, PROGRAM_BUDGET * block**3)


def _block_position(node: Node) -> bool:
    parent = node.parent
    if parent is None:
        return False
    name: Node | None = None
    if parent.type in ("keyword_argument", "default_parameter", "typed_default_parameter"):
        name = parent.child_by_field_name("name")
    elif parent.type == "pair":
        name = parent.child_by_field_name("key")
    elif parent.type == "assignment":
        name = parent.child_by_field_name("left")
    elif parent.type == "binary_operator":
        op = parent.child_by_field_name("operator")
        return op is not None and op.type == "//" and parent.child_by_field_name("right") == node
    elif parent.type == "argument_list" and parent.parent is not None:
        function = dotted_name(parent.parent.child_by_field_name("function")) or ""
        return function.endswith(("cdiv", "arange"))
    return name is not None and bool(_BLOCK_NAME.search(text(name)))


def plan_sizes(source: str, readers: Iterable[str] = KERNELBENCH_INPUTS, *, gpu: bool = False,
               blocks_from: str | None = None, budget: tuple[int, int] | None = None) -> SizePlan:
    """The sizes for the trials of the spec whose reference is `source` (module docstring).

    Args:
        readers: the functions that make the inputs (get_inputs, get_init_inputs; F_inputs).
        gpu: use the GPU budgets.
        blocks_from: the text whose block sizes are in play (default `source`). Give the user's
            file, not a search's variant, so that every variant is checked at the same sizes.
        budget: (elements, work) in place of the GPU's or the interpreter's.
    """
    problem = _Problem(source, readers)
    knobs = _knobs(problem)
    blocks = blocks_from if blocks_from is not None else source
    block = block_exponent(blocks)
    if budget is None:
        budget = (GPU_ELEMENT_BUDGET, GPU_WORK_BUDGET) if gpu else interpreter_budget(blocks)
    return _plan(problem, knobs, _shrink(problem, knobs, budget, block), budget)


def uniform_plan(source: str, readers: Iterable[str] = KERNELBENCH_INPUTS, *, gpu: bool = False,
                 blocks_from: str | None = None) -> SizePlan | None:
    """Every scalable size divided by one power of two (the least that meets the budget, or the
    most that divides them all): the fallback for a task whose sizes are tied by a relation the
    planner cannot see (a LayerNorm over the width that a stride-2 transposed convolution doubles
    to the channel count), which independent scaling breaks and which a common factor keeps.
    None when no factor of two divides every size."""
    problem = _Problem(source, readers)
    knobs = _knobs(problem)
    sized = [k for k in knobs if not k.batch]
    if not sized:
        return None
    blocks = blocks_from if blocks_from is not None else source
    budget = (GPU_ELEMENT_BUDGET, GPU_WORK_BUDGET) if gpu else interpreter_budget(blocks)
    top = min(_valuation(k.value) for k in sized)
    if top == 0:
        return None
    used: dict[str, int] = {}
    for a in range(top + 1):
        trial = {k.keys[0]: max(MIN_BATCH, k.value >> a) if k.batch else k.value >> a for k in knobs}
        if min(trial[k.keys[0]] for k in sized) < 2:
            break
        used = trial
        if not any(_excess(problem.cost(_assign(knobs, used)), budget)):
            break
    return _plan(problem, knobs, used, budget) if used else None


def _plan(problem: _Problem, knobs: list[_Knob], used: dict[str, int], budget: tuple[int, int]) -> SizePlan:
    tail = _tail(problem, knobs, used)
    values, tail_values = _assign(knobs, used), _assign(knobs, tail)
    elements, work = problem.cost(values)
    main, extra = {}, {}
    for key, literal in problem.literals.items():
        for name in literal.names:
            main[name] = (literal.value, values.get(key, literal.value))
            if tail_values.get(key, literal.value) != main[name][1]:
                extra[name] = (literal.value, tail_values[key])
    return SizePlan(main=main, tail=extra, elements=elements, work=work,
                    within_budget=elements <= budget[0] and work <= budget[1])


def size_constants(source: str, readers: Iterable[str] = KERNELBENCH_INPUTS) -> dict[str, int]:
    """The integer size constants the functions named `readers` read, directly or through
    other constants and functions (derived ones included; tuple elements as `name[i]`)."""
    problem = _Problem(source, readers)
    return dict(problem.scalars0)


def scaled_constants(source: str, readers: Iterable[str] = KERNELBENCH_INPUTS, *,
                     gpu: bool = False, blocks_from: str | None = None) -> dict[str, tuple[int, int]]:
    """The size constants that scaling changes, mapped to (original, scaled)."""
    return plan_sizes(source, readers, gpu=gpu, blocks_from=blocks_from).scaled


def rewrite_constants(source: str, sizes: Mapping[str, tuple[int, int]]) -> str:
    """`source` with each module-level literal named in `sizes` (by any name it sizes, or
    `name[i]` for a tuple's element) set to its new value where it still holds the original.

    Applied to reference and candidate alike, so both see the same problem."""
    document = Document(source)
    data = document.source
    edits: dict[tuple[int, int], bytes] = {}
    for binding in _bindings(document.root):
        literals = [binding.literal] if binding.literal else [p for p in binding.parts or () if isinstance(p, _Literal)]
        for literal in literals:
            for name in (literal.key, *literal.names):
                change = sizes.get(name)
                if change is not None and change[0] == literal.value and change[0] != change[1]:
                    edits.setdefault((literal.start, literal.end), str(change[1]).encode())
    for name, node in _inline_literals(document.root):
        change = sizes.get(name)
        if change is not None and change[0] == _constant_int(node) and change[0] != change[1]:
            edits.setdefault((node.start_byte, node.end_byte), str(change[1]).encode())
    for (start, end), new in sorted(edits.items(), reverse=True):
        data = data[:start] + new + data[end:]
    return data.decode("utf-8")
