"""Scaffolding an in-file verification harness from a launcher's signature (docs/harness.md).

A *launcher* is a module-level function that is not a Triton kernel and launches one
(`kernel[grid](...)` in its body). `find_launchers` lists them, each with whether it already has
a harness; `scaffold_harness` writes one for a launcher that has none:

    SOFTMAX_ROWS = 1024                    # a size constant per dimension it can name
    SOFTMAX_COLS = 1024


    def softmax_inputs():                  # a torch.randn per tensor parameter
        return [torch.randn(SOFTMAX_ROWS, SOFTMAX_COLS, device="cuda")]


    def softmax_reference(x):              # to fill in
        raise NotImplementedError(...)

A tensor's rank and the names of its dimensions come from the launcher's body
(`rows, cols = x.shape`, `n = x.shape[0]`, `x.stride(1)`, `assert x.ndim == 2`); a tensor the
body says nothing about is 1-D, and all such tensors share one length (`ADD_N`), as an
elementwise launcher needs. Integer parameters get the matching constant, parameters with
defaults are left out. `import torch` is added to the file's imports when it is missing.

Source text in, insertions (byte offset, tree-sitter point, text) out: tree-sitter only, no
torch or triton, no LSP types (the server converts).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

from tree_sitter import Node

from ..analysis import Document, ModuleIndex, index_module
from ..analysis.syntax import text, unparen, walk
from .specs import HARNESS_SUFFIXES

__all__ = [
    "Insertion",
    "Launcher",
    "Scaffold",
    "apply_scaffold",
    "find_launchers",
    "launcher_at",
    "scaffold_harness",
]

DIM_SIZE = 1024
BATCH_SIZE = 16
BLOCK_SIZE = 128
HARNESS_DOC = "docs/harness.md"

_BATCH = re.compile(r"(^|_)(batch|bs|b)(_|$)|batch", re.IGNORECASE)
# Parameters named like these are integers (sizes) when not annotated.
_SIZE_NAMES = frozenset({"n", "numel", "size", "length", "n_elements", "n_elem", "num_elements"})
_INT_PREFIXES = ("n_", "num_")
_FLOAT_NAMES = {"eps": "1e-5", "epsilon": "1e-5", "alpha": "0.5", "beta": "0.5", "scale": "0.5",
                "temperature": "0.5", "momentum": "0.1", "negative_slope": "0.01", "dropout_p": "0.0",
                "sm_scale": "0.5", "softmax_scale": "0.5"}
_AXIS_NAMES = frozenset({"dim", "axis"})
_IDENTIFIER = re.compile(r"[^0-9A-Za-z_]+")


@dataclass(frozen=True)
class Launcher:
    """A module-level function that launches a Triton kernel."""

    name: str
    start: tuple[int, int]  # the definition's first point (decorators included), (row, byte column)
    end: tuple[int, int]  # its last point
    has_harness: bool  # `<name>_inputs` or `<name>_reference` is defined in the module


@dataclass(frozen=True)
class Insertion:
    """Text to insert at a position of the original source."""

    offset: int  # byte offset
    point: tuple[int, int]  # (row, byte column) of `offset`
    text: str


@dataclass(frozen=True)
class Scaffold:
    """The edits that add a harness for `launcher`, in document order."""

    launcher: str
    insertions: tuple[Insertion, ...]
    constants: dict[str, int] = field(default_factory=dict)  # the size constants it defines


def _document(source: str | bytes | Document) -> Document:
    return source if isinstance(source, Document) else Document(source)


def _definition(node: Node) -> Node | None:
    definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
    return definition if definition is not None and definition.type == "function_definition" else None


def _module_level(node: Node) -> Node | None:
    """The statement directly under the module that holds `node`."""
    while node.parent is not None and node.parent.type != "module":
        node = node.parent
    return node if node.parent is not None else None


def find_launchers(source: str | bytes | Document, *, index: ModuleIndex | None = None) -> list[Launcher]:
    """The module-level functions of `source` that launch a kernel (`kernel[grid](...)`), in
    document order. Pass the `index` of the same tree to save re-indexing."""
    document = _document(source)
    root = document.root
    index = index if index is not None else index_module(root)
    kernels = index.jit_names
    defined = set(index.functions) | set(index.globals)
    found: dict[int, Launcher] = {}
    for kernel in index.kernels:
        for launch in kernel.launches:
            statement = _module_level(launch.node)
            definition = _definition(statement) if statement is not None else None
            if statement is None or definition is None or statement.start_byte in found:
                continue
            name = text(definition.child_by_field_name("name"))
            if not name or name in kernels or name.endswith(HARNESS_SUFFIXES):
                continue
            found[statement.start_byte] = Launcher(
                name=name,
                start=(statement.start_point[0], statement.start_point[1]),
                end=(statement.end_point[0], statement.end_point[1]),
                has_harness=f"{name}_inputs" in defined or f"{name}_reference" in defined,
            )
    return [found[k] for k in sorted(found)]


def launcher_at(launchers: list[Launcher], start: tuple[int, int], end: tuple[int, int] | None = None) -> Launcher | None:
    """The launcher whose rows the range `start`..`end` (points) touches, if any."""
    end = end or start
    for launcher in launchers:
        if start[0] <= launcher.end[0] and end[0] >= launcher.start[0]:
            return launcher
    return None


# -- reading the launcher -------------------------------------------------------------------


@dataclass
class _Param:
    name: str
    annotation: str | None


@dataclass
class _Shape:
    """What the launcher's body says about one tensor parameter."""

    rank: int | None = None  # exact, from `a, b = x.shape` or `x.ndim == 2`
    at_least: int = 1
    names: dict[int, str] = field(default_factory=dict)  # dimension index (negative: from the end)
    numel: str | None = None  # `n = x.numel()`

    def dims(self) -> list[str | None]:
        front = max([0] + [i + 1 for i in self.names if i >= 0])
        back = max([0] + [-i for i in self.names if i < 0])
        rank = self.rank or max(self.at_least, front, back)
        if self.rank is None and front and back and rank < front + back:
            rank = front + back  # `m = x.shape[0]` and `n = x.shape[-1]`: two dimensions
        out: list[str | None] = [None] * rank
        for i, name in self.names.items():
            position = i if i >= 0 else rank + i
            if 0 <= position < rank and out[position] is None:
                out[position] = name
        if rank == 1 and out[0] is None:
            out[0] = self.numel
        return out


def _params(definition: Node) -> list[_Param]:
    """Positional parameters without defaults (what `F_inputs()` must supply)."""
    params = definition.child_by_field_name("parameters")
    out: list[_Param] = []
    if params is None:
        return out
    for child in params.named_children:
        if child.type in ("list_splat_pattern", "dictionary_splat_pattern", "keyword_separator"):
            break  # *args, **kwargs, and everything after a bare `*` is keyword-only
        if child.type == "identifier":
            out.append(_Param(text(child), None))
        elif child.type == "typed_parameter":
            name = next((c for c in child.named_children if c.type == "identifier"), None)
            if name is None:
                break  # `*args: int`
            annotation = child.child_by_field_name("type")
            out.append(_Param(text(name), text(annotation) if annotation is not None else None))
        # default_parameter / typed_default_parameter: left to their defaults
    return out


def _int_literal(node: Node | None) -> int | None:
    node = unparen(node)
    if node is None:
        return None
    if node.type == "integer":
        try:
            return int(text(node), 0)
        except ValueError:
            return None
    if node.type == "unary_operator" and text(node).startswith("-"):
        value = _int_literal(node.child_by_field_name("argument"))
        return -value if value is not None else None
    return None


def _shape_of(node: Node | None, params: set[str]) -> tuple[str, str, Node | None] | None:
    """(param, "shape" | "size" | "stride" | "numel" | "ndim", index node) for `p.shape`,
    `p.shape[i]`, `p.size()`, `p.size(i)`, `p.stride(i)`, `p.numel()`, `p.ndim`, `p.dim()`."""
    node = unparen(node)
    if node is None:
        return None
    index: Node | None = None
    if node.type == "subscript":
        index = node.child_by_field_name("subscript")
        node = node.child_by_field_name("value")
        if node is None or node.type != "attribute" or text(node.child_by_field_name("attribute")) != "shape":
            return None
    elif node.type == "call":
        args = node.child_by_field_name("arguments")
        items = [c for c in args.named_children if c.type != "comment"] if args is not None else []
        index = items[0] if len(items) == 1 else None
        node = node.child_by_field_name("function")
    if node is None or node.type != "attribute":
        return None
    obj = node.child_by_field_name("object")
    attribute = text(node.child_by_field_name("attribute"))
    if obj is None or obj.type != "identifier" or text(obj) not in params:
        return None
    if attribute in ("shape", "size", "stride", "numel", "ndim", "dim"):
        return text(obj), {"dim": "ndim"}.get(attribute, attribute), index
    return None


def _read_shapes(body: Node | None, tensors: list[str]) -> dict[str, _Shape]:
    shapes = {name: _Shape() for name in tensors}
    if body is None or not tensors:
        return shapes
    names = set(tensors)
    for node in walk(body):
        if node.type == "assignment":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            found = _shape_of(right, names)
            if found is None or left is None:
                continue
            param, kind, index = found
            shape = shapes[param]
            if left.type in ("pattern_list", "tuple_pattern", "list_pattern") and kind in ("shape", "size") \
                    and index is None:
                targets = list(left.named_children)
                if any(t.type != "identifier" for t in targets):
                    continue  # `*batch, n = x.shape`: the rank is open
                shape.rank = len(targets)
                for position, target in enumerate(targets):
                    if text(target) != "_":
                        shape.names.setdefault(position, text(target))
            elif left.type == "identifier" and kind in ("shape", "size"):
                at = _int_literal(index)
                if at is not None:
                    shape.names.setdefault(at, text(left))
            elif left.type == "identifier" and kind == "numel":
                shape.numel = shape.numel or text(left)
        elif node.type in ("subscript", "call", "attribute"):
            found = _shape_of(node, names)
            if found is None:
                continue
            param, kind, index = found
            at = _int_literal(index)
            if kind in ("shape", "size", "stride") and at is not None:
                shapes[param].at_least = max(shapes[param].at_least, at + 1 if at >= 0 else -at)
            elif kind == "ndim" and node.parent is not None and node.parent.type == "comparison_operator":
                operands = [c for c in node.parent.named_children if c.start_byte != node.start_byte]
                ops = [c.type for c in node.parent.children if not c.is_named]
                value = _int_literal(operands[0]) if len(operands) == 1 else None
                if value is not None and ops == ["=="]:
                    shapes[param].rank = value
    return shapes


def _equal_names(body: Node | None) -> dict[str, str]:
    """`assert K == K2` in the body: K2 is K (the later name maps to the earlier one)."""
    same: dict[str, str] = {}
    for node in walk(body):
        if node.type != "comparison_operator" or node.named_child_count != 2:
            continue
        left, right = node.named_children
        ops = [c.type for c in node.children if not c.is_named]
        if ops == ["=="] and left.type == "identifier" and right.type == "identifier":
            same.setdefault(text(right), same.get(text(left), text(left)))
    return same


# -- writing the harness --------------------------------------------------------------------


def _constant(prefix: str, name: str) -> str:
    return f"{prefix}_{_IDENTIFIER.sub('_', name).strip('_').upper() or 'N'}"


def _kind(param: _Param) -> str:
    """"tensor", "int", "float", "bool", "axis", "block", "dtype" or "str"."""
    annotation = (param.annotation or "").strip("\"' ")
    name = param.name
    if "BLOCK" in name.upper() or annotation.endswith("constexpr"):
        return "block"
    if annotation:
        if "Tensor" in annotation:
            return "tensor"
        if annotation in ("int", "float", "bool", "str"):
            return "axis" if annotation == "int" and name in _AXIS_NAMES else annotation
        if annotation.endswith("dtype"):
            return "dtype"
        return "tensor"
    if name in _AXIS_NAMES:
        return "axis"
    if name in _FLOAT_NAMES:
        return "float"
    if name in _SIZE_NAMES or name.startswith(_INT_PREFIXES) or (len(name) == 1 and name.isupper()):
        return "int"
    return "tensor"


def _torch_alias(index: ModuleIndex) -> str | None:
    for local, qualified in index.imports.names.items():
        if qualified == "torch":
            return local
    return None


def _import_insertion(document: Document) -> Insertion:
    """`import torch` at the top of the module's imports (after `from __future__` ones)."""
    root = document.root
    anchor: Node | None = None
    after_docstring: Node | None = None
    for i, node in enumerate(root.named_children):
        if node.type == "import_from_statement" and text(node.child_by_field_name("module_name")) == "__future__":
            after_docstring = node
            continue
        if node.type in ("import_statement", "import_from_statement"):
            anchor = node
            break
        if i == 0 and node.type == "expression_statement" and node.named_child_count == 1 \
                and node.named_children[0].type == "string":
            after_docstring = node
    if anchor is not None:
        row = anchor.start_point[0]
        return Insertion(document.offset(row, 0), (row, 0), "import torch\n")
    if after_docstring is not None:
        row = after_docstring.end_point[0] + 1
        if row >= document.line_count:  # the file is just a docstring with no newline after it
            offset = len(document.source)
            return Insertion(offset, document.point(offset), "\n\nimport torch\n")
        return Insertion(document.offset(row, 0), (row, 0), "\nimport torch\n")
    return Insertion(0, (0, 0), "import torch\n\n")


def scaffold_harness(
    source: str | bytes | Document, launcher: str, *, index: ModuleIndex | None = None
) -> Scaffold | None:
    """The edits that add a harness after `launcher`'s definition, or None when `launcher` is
    not a launcher of `source` or already has a harness."""
    document = _document(source)
    index = index if index is not None else index_module(document.root)
    target = next((found for found in find_launchers(document, index=index) if found.name == launcher), None)
    if target is None or target.has_harness:
        return None
    statement = next((n for n in document.root.named_children
                      if (n.start_point[0], n.start_point[1]) == target.start), None)
    definition = _definition(statement) if statement is not None else None
    if statement is None or definition is None:
        return None

    prefix = _IDENTIFIER.sub("_", launcher).strip("_").upper() or "F"
    params = _params(definition)
    kinds = {p.name: _kind(p) for p in params}
    tensors = [p.name for p in params if kinds[p.name] == "tensor"]
    body = definition.child_by_field_name("body")
    shapes = _read_shapes(body, tensors)
    same = _equal_names(body)
    torch_name = _torch_alias(index) or "torch"

    constants: dict[str, int] = {}

    def constant(name: str) -> str:
        name = same.get(name, name)
        const = _constant(prefix, name)
        constants.setdefault(const, BATCH_SIZE if _BATCH.search(name) else DIM_SIZE)
        return const

    arguments: dict[str, str] = {}
    for name in tensors:  # first: an integer parameter may reuse a tensor's size
        dims = shapes[name].dims()
        sizes = [constant(dim) if dim else constant("n" if len(dims) == 1 else f"dim{i}")
                 for i, dim in enumerate(dims)]
        arguments[name] = f'{torch_name}.randn({", ".join(sizes)}, device="cuda")'
    for param in params:
        kind = kinds[param.name]
        if kind == "int":
            if param.name.lower() in _SIZE_NAMES and _constant(prefix, param.name) not in constants \
                    and _constant(prefix, "n") in constants:
                arguments[param.name] = _constant(prefix, "n")  # `n_elements` of a 1-D launcher
            else:
                arguments[param.name] = constant(param.name)
        elif kind != "tensor":
            arguments[param.name] = {
                "float": _FLOAT_NAMES.get(param.name, "0.5"), "bool": "False", "axis": "-1",
                "block": str(BLOCK_SIZE), "dtype": f"{torch_name}.float32", "str": '""',
            }[kind]

    names = [p.name for p in params]
    call = f"{launcher}({', '.join(names)})"
    values = [arguments[name] for name in names]
    returned = f"[{', '.join(values)}]"
    if len(f"    return {returned}") > 100:
        returned = "[\n" + "".join(f"        {value},\n" for value in values) + "    ]"
    lines = [f"# Verification harness for {launcher}() ({HARNESS_DOC}): fill in {launcher}_reference."]
    lines += [f"{name} = {value}" for name, value in constants.items()]
    lines += [
        "", "",
        f"def {launcher}_inputs():",
        f'    """One trial\'s arguments for {launcher}(), drawn fresh under each trial\'s seed."""',
        f"    return {returned}",
        "", "",
        f"def {launcher}_reference({', '.join(names)}):",
        *_docstring([f"What {call} must return, in plain PyTorch{_what_it_returns(body)}.",
                     f"Compared with what {launcher}() returns, output by output: {COMPARED}."]),
        f'    raise NotImplementedError("write what {call} must return, in PyTorch")',
    ]
    harness = "\n\n\n" + "\n".join(lines)

    row = statement.end_point[0]
    line = document.line(row)
    offset = document.offset(row, len(line))
    if offset >= len(document.source):
        harness += "\n"
    insertions = [Insertion(offset, (row, len(line)), harness)]
    if _torch_alias(index) is None:
        insertions.insert(0, _import_insertion(document))
    return Scaffold(launcher=launcher, insertions=tuple(insertions), constants=constants)


COMPARED = ("a tensor element by element within its dtype's tolerance (atol = rtol = 1e-4 for float32, "
            "1e-2 for float16 and bfloat16), with the same shape and dtype; an int, bool or str must be "
            "equal, a float within the float32 tolerance")
"""What verification compares (correctness.compare_outputs), as the scaffold tells the user."""


def _docstring(paragraphs: list[str], indent: str = "    ", width: int = 96) -> list[str]:
    lines = [indent + '"""']
    for i, paragraph in enumerate(paragraphs):
        lines += ([""] if i else []) + textwrap.wrap(paragraph, width, initial_indent=indent, subsequent_indent=indent,
                                                     break_on_hyphens=False, break_long_words=False)
    lines[0] += lines.pop(1).lstrip()
    return lines + [indent + '"""']


def _what_it_returns(body: Node | None) -> str:
    """", the same 4 values as `return y, BLOCK_SIZE, num_warps, False`" for a launcher that
    returns a tuple; "" otherwise."""
    if body is None:
        return ""
    for node in walk(body):
        if node.type != "return_statement" or any(a.type in ("function_definition", "lambda")
                                                  for a in _ancestors(node, body)):
            continue
        value = node.named_children[0] if node.named_children else None
        value = unparen(value) if value is not None and value.type == "parenthesized_expression" else value
        if value is not None and value.type in ("expression_list", "tuple") and value.named_child_count > 1:
            return f", the same {value.named_child_count} values as `return {text(value)}`"
    return ""


def _ancestors(node: Node, stop: Node) -> list[Node]:
    out = []
    current = node.parent
    while current is not None and current.id != stop.id:
        out.append(current)
        current = current.parent
    return out


def apply_scaffold(source: str, scaffold: Scaffold) -> str:
    """`source` with the scaffold's insertions made (offsets are bytes of the UTF-8 text)."""
    data = source.encode("utf-8")
    for insertion in sorted(scaffold.insertions, key=lambda i: i.offset, reverse=True):
        data = data[:insertion.offset] + insertion.text.encode("utf-8") + data[insertion.offset:]
    return data.decode("utf-8")
