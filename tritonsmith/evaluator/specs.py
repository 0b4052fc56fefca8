"""What "correct" means for a file: finding its kernel specs (DESIGN.md, "Kernel specs").

Two formats, looked for in this order:

1. **KernelBench**: a candidate `class ModelNew` and a reference (`class Model`,
   `get_inputs()`, `get_init_inputs()`), in the same file or a sibling file.
2. **In-file harness** (docs/harness.md): next to a launcher `def softmax(x)`, two plain
   functions `softmax_inputs()` (one trial's arguments) and `softmax_reference(x)` (what the
   launcher must return, in PyTorch), and optionally `softmax_tolerances = {"float32": 1e-5}`.
   User code imports nothing from tritonsmith.

Both become the same protocol (verify.py): the workers build a `Problem` from the `problem`
descriptor a spec gives them (`{"format": "kernelbench"}` or `{"format": "harness", ...}`).

Nothing here imports torch or triton: the server imports this module.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tree_sitter import Node

from ..analysis import Document, index_module
from ..analysis.syntax import text, walk

__all__ = [
    "HARNESS_SUFFIXES",
    "HarnessSpec",
    "KernelBenchSpec",
    "Spec",
    "blank_out",
    "detect_harnesses",
    "detect_kernelbench",
    "detect_specs",
    "only_definitions",
    "top_level",
]

REFERENCE_NAMES = ("Model", "get_inputs", "get_init_inputs")
HARNESS_SUFFIXES = ("_inputs", "_reference", "_tolerances", "_torch_ops")
_REFERENCE_COMMENT = re.compile(r"#\s*tritonsmith:\s*reference\s*=\s*(\S+)")
_ANY_SHAPE_COMMENT = re.compile(r"#\s*tritonsmith:\s*any-shape\b")
TORCH_OPS_COMMENT = re.compile(r"#\s*tritonsmith:\s*torch-ops\s*=\s*([^\n#]*)")
_LEVEL_1 = re.compile(r"level[_-]?1\b", re.IGNORECASE)


@dataclass(frozen=True)
class KernelBenchSpec:
    """Where a problem's candidate and reference live (the same file when `same_file`)."""

    candidate: Path
    reference: Path
    same_file: bool
    any_shape: bool = False  # `# tritonsmith: any-shape`: the candidate must handle other sizes too
    torch_ops: str | None = None  # `# tritonsmith: torch-ops = none | any | op, op` (policy.py)
    # The candidate's own torch-ops directive where the reference lives in another file: the
    # reference's file sets the policy (a solution cannot widen its own), and the verdict says so.
    ignored_torch_ops: str | None = None

    @property
    def name(self) -> str:
        return "ModelNew"

    @property
    def single_operator(self) -> bool | None:
        """True for a KernelBench level-1 problem (by its folder or file name): one operator,
        which the Triton kernels must compute themselves; else None (the reference decides)."""
        return True if any(_LEVEL_1.search(part) for part in self.reference.parts[-3:]) else None

    @property
    def row(self) -> int:
        """The 0-based row of `class ModelNew`, where the editor shows the verdict."""
        return _definition_row(self.candidate, "ModelNew")

    def problem(self) -> dict[str, Any]:
        return {"format": "kernelbench"}


@dataclass(frozen=True)
class HarnessSpec:
    """A launcher with its in-file harness: `<launcher>_inputs` and `<launcher>_reference`."""

    path: Path
    launcher: str
    row: int  # 0-based row of `def <launcher>`
    tolerances: dict[str, float] = field(default_factory=dict)
    any_shape: bool = True  # a launcher takes any tensor of its kind: extra sizes are fair
    torch_ops: str | None = None  # `F_torch_ops = "none"` / `["matmul"]`: the PyTorch compute allowed
    single_operator: bool | None = False  # a fusion task unless `F_torch_ops` says otherwise

    @property
    def candidate(self) -> Path:
        return self.path

    @property
    def reference(self) -> Path:
        return self.path

    @property
    def same_file(self) -> bool:
        return True

    @property
    def name(self) -> str:
        return self.launcher

    def harness_names(self) -> set[str]:
        return {self.launcher + suffix for suffix in HARNESS_SUFFIXES}

    def problem(self) -> dict[str, Any]:
        return {"format": "harness", "launcher": self.launcher}


Spec = KernelBenchSpec | HarnessSpec


def top_level(root: Node) -> Iterator[tuple[str, Node]]:
    """(name, node) for each module-level class and function definition (decorated or not)."""
    for node in root.named_children:
        definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
        if definition is not None and definition.type in ("class_definition", "function_definition"):
            yield text(definition.child_by_field_name("name")), node


def _defines(source: str) -> set[str]:
    return {name for name, _ in top_level(Document(source).root)}


def _definition_row(path: Path, name: str) -> int:
    try:
        root = Document(path.read_text(encoding="utf-8")).root
    except OSError:
        return 0
    for found, node in top_level(root):
        if found == name:
            return int(node.start_point[0])
    return 0


def detect_kernelbench(path: Path, source: str | None = None) -> KernelBenchSpec | None:
    """The problem `path` belongs to, if it is a KernelBench candidate, else None.

    A candidate defines `class ModelNew`. Its reference is the file itself when that defines
    `Model`, `get_inputs` and `get_init_inputs`; else the first sibling that does among the file
    named by a `# tritonsmith: reference=FILE` comment, `<stem>_reference.py`, `reference.py`.
    """
    path = Path(path)
    if source is None:
        try:
            source = path.read_text(encoding="utf-8")
        except OSError:
            return None
    names = _defines(source)
    if "ModelNew" not in names:
        return None
    any_shape = bool(_ANY_SHAPE_COMMENT.search(source))
    directive = TORCH_OPS_COMMENT.search(source)
    torch_ops = directive.group(1).strip() if directive else None
    if all(name in names for name in REFERENCE_NAMES):
        return KernelBenchSpec(candidate=path, reference=path, same_file=True, any_shape=any_shape,
                               torch_ops=torch_ops)
    options: list[str] = []
    match = _REFERENCE_COMMENT.search(source)
    ignored, torch_ops = torch_ops, None
    if match:
        options.append(match.group(1))
    options += [f"{path.stem}_reference.py", "reference.py"]
    for option in options:
        sibling = path.parent / option
        if sibling.resolve() == path.resolve() or not sibling.is_file():
            continue
        try:
            sibling_source = sibling.read_text(encoding="utf-8")
        except OSError:
            continue
        if all(name in _defines(sibling_source) for name in REFERENCE_NAMES):
            own = TORCH_OPS_COMMENT.search(sibling_source)
            torch_ops = own.group(1).strip() if own else None
            return KernelBenchSpec(candidate=path, reference=sibling, same_file=False, any_shape=any_shape,
                                   torch_ops=torch_ops, ignored_torch_ops=ignored)
    return None


def _tolerances(root: Node, name: str) -> dict[str, float]:
    """`NAME = {"float32": 1e-5, ...}` at module level, read without running the file."""
    for node in root.named_children:
        if node.type != "expression_statement" or node.named_child_count != 1:
            continue
        assign = node.named_children[0]
        left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        if assign.type != "assignment" or left is None or right is None or text(left) != name:
            continue
        try:
            value = ast.literal_eval(text(right))
        except (ValueError, SyntaxError):
            return {}
        if isinstance(value, dict):
            return {str(k).removeprefix("torch."): float(v) for k, v in value.items()
                    if isinstance(v, (int, float))}
    return {}


def _torch_ops(root: Node, name: str) -> str | None:
    """`NAME = "none"` or `NAME = ["matmul", ...]` at module level: the harness's policy for
    PyTorch compute (policy.py), as a policy string; None when absent or not a literal."""
    value = _literal(root, name)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) if value else "none"
    return None


def _literal(root: Node, name: str) -> Any:
    for node in root.named_children:
        if node.type != "expression_statement" or node.named_child_count != 1:
            continue
        assign = node.named_children[0]
        left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        if assign.type == "assignment" and left is not None and right is not None and text(left) == name:
            try:
                return ast.literal_eval(text(right))
            except (ValueError, SyntaxError):
                return None
    return None


def detect_harnesses(path: Path, source: str | None = None) -> list[HarnessSpec]:
    """Every launcher in `source` with an in-file harness (docs/harness.md): a module-level
    function `F` that is not a Triton kernel, next to functions `F_inputs` and `F_reference`."""
    path = Path(path)
    if source is None:
        try:
            source = path.read_text(encoding="utf-8")
        except OSError:
            return []
    if "_reference" not in source or "_inputs" not in source:  # most files: no parse needed
        return []
    root = Document(source).root
    functions = {name: node for name, node in top_level(root) if _is_function(node)}
    kernels = index_module(root).jit_names
    specs = []
    for name, node in functions.items():
        if name in kernels or name.endswith(HARNESS_SUFFIXES):
            continue
        if f"{name}_inputs" in functions and f"{name}_reference" in functions:
            specs.append(HarnessSpec(path=path, launcher=name, row=int(node.start_point[0]),
                                     tolerances=_tolerances(root, f"{name}_tolerances"),
                                     torch_ops=_torch_ops(root, f"{name}_torch_ops")))
    return specs


def _is_function(node: Node) -> bool:
    definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
    return definition is not None and definition.type == "function_definition"


def detect_specs(path: Path, source: str | None = None) -> list[Spec]:
    """The specs `path` can be verified against: its KernelBench problem, else its harnesses."""
    path = Path(path)
    if source is None:
        try:
            source = path.read_text(encoding="utf-8")
        except OSError:
            return []
    problem = detect_kernelbench(path, source)
    if problem is not None:
        return [problem]
    return list(detect_harnesses(path, source))


def blank_out(source: str, names: set[str]) -> str:
    """`source` with the named module-level definitions (functions, classes, and plain
    `NAME = ...` assignments) replaced by blank lines, so that line numbers in tracebacks
    still point at the user's file."""
    document = Document(source)
    data = document.source
    cuts = [(node.start_byte, node.end_byte) for name, node in top_level(document.root) if name in names]
    for node in document.root.named_children:
        if node.type == "expression_statement" and node.named_child_count == 1:
            assign = node.named_children[0]
            left = assign.child_by_field_name("left") if assign.type == "assignment" else None
            if left is not None and left.type == "identifier" and text(left) in names:
                cuts.append((node.start_byte, node.end_byte))
    for start, end in sorted(cuts, reverse=True):
        data = data[:start] + b"\n" * data[start:end].count(b"\n") + data[end:]
    return data.decode("utf-8")


_COMPOUND = ("if_statement", "try_statement", "with_statement", "for_statement", "while_statement")


def _bound_names(node: Node) -> set[str] | None:
    """The names a module-level statement binds; None for one whose bindings cannot be known
    (`from x import *`, a `__future__` import: always kept)."""
    kind = node.type
    if kind == "future_import_statement":
        return None
    if kind == "decorated_definition":
        node = node.child_by_field_name("definition") or node
        kind = node.type
    if kind in ("function_definition", "class_definition"):
        return {text(node.child_by_field_name("name"))}
    if kind == "import_statement":
        names = set()
        for child in node.named_children:
            if child.type == "aliased_import":
                names.add(text(child.child_by_field_name("alias")))
            else:
                names.add(text(child).split(".")[0])
        return names
    if kind == "import_from_statement":
        if any(child.type == "wildcard_import" for child in node.named_children):
            return None
        names = set()
        for child in node.children_by_field_name("name"):
            bound = child.child_by_field_name("alias") if child.type == "aliased_import" else child
            names.add(text(bound).split(".")[-1])
        return names
    if kind == "expression_statement":
        names = set()
        for child in node.named_children:
            assign: Node | None = child
            while assign is not None and assign.type in ("assignment", "augmented_assignment"):
                left = assign.child_by_field_name("left")
                if left is not None and left.type == "identifier":
                    names.add(text(left))
                elif left is not None and left.type in ("pattern_list", "tuple_pattern", "list_pattern"):
                    names.update(text(n) for n in left.named_children if n.type == "identifier")
                right = assign.child_by_field_name("right")
                assign = right if right is not None and right.type == "assignment" else None  # a = b = 1
        return names
    if kind in _COMPOUND:
        names = set()
        for child in _walk_statements(node):
            found = _bound_names(child) if child is not node else set()
            if found is None:
                return None
            names |= found
        return names
    return set()


def _walk_statements(node: Node) -> Iterator[Node]:
    """`node` and the statements nested in its blocks (not inside function or class bodies)."""
    yield node
    if node.type in ("function_definition", "class_definition", "decorated_definition"):
        return
    for child in node.named_children:
        if child.type in ("block", "else_clause", "elif_clause", "except_clause", "finally_clause",
                          "except_group_clause"):
            for statement in child.named_children:
                yield from _walk_statements(statement)
        elif child.type.endswith("_statement") or child.type in ("function_definition", "class_definition",
                                                                "decorated_definition"):
            yield from _walk_statements(child)


def only_definitions(source: str, roots: set[str]) -> str:
    """`source` with only what defining `roots` needs: the module-level statements that bind a
    name the roots use, transitively (definitions, assignments, imports, and an `if`/`try`
    around them), every other statement replaced by blank lines (line numbers stay the user's).

    This is the reference's file as its worker imports it: in a single file holding both the
    reference and the candidate, the candidate's module-level code (kernels, helpers, and a
    statement patching `torch` or rebinding `Model.forward`) never runs where the reference
    runs. Over-approximates (every identifier in a kept statement counts as used), so a
    reference keeps whatever it might read."""
    document = Document(source)
    data = document.source
    statements = [(node, _bound_names(node)) for node in document.root.named_children]
    needed = set(roots)
    kept: set[int] = set()
    changed = True
    while changed:
        changed = False
        for i, (node, names) in enumerate(statements):
            if i in kept or not (names is None or names & needed):
                continue
            kept.add(i)
            changed = True
            needed |= {text(n) for n in walk(node) if n.type == "identifier"}
    for i, (node, _) in sorted(enumerate(statements), key=lambda pair: -pair[1][0].start_byte):
        if i not in kept:
            start, end = node.start_byte, node.end_byte
            data = data[:start] + b"\n" * data[start:end].count(b"\n") + data[end:]
    return data.decode("utf-8")
