"""Cut one kernel out of a user's file into a module that is safe to import.

Compiling a kernel needs its `JITFunction`, and `@triton.jit` needs the function's source in a
real file, so the kernel has to be imported. Importing the user's file is not an option: real
kernel files (Triton's own tutorials among them) allocate CUDA tensors, run benchmarks or query
the driver at import time, which fails or takes minutes on a machine without a GPU. So this
module builds a standalone module from the syntax tree alone (no torch, no triton import: the
server calls it too) holding only what the kernel needs:

- the Triton and `math` imports (always), and other imports only when kept code names them;
- module-level constants (`tl.constexpr(...)`, literals, expressions over those) the kept code
  references, transitively;
- every `@triton.jit` helper the kernel calls, transitively, with its decorators
  (`@triton.jit(do_not_specialize=...)`), and module-level Python functions it names
  (`@tl.constexpr` / `@triton.constexpr_function` helpers, evaluated at compile time);
- the kernel with its decorators. An `autotune`/`heuristics` decorator that references host code
  (`configs=get_autotune_config()`, which queries the driver in the tutorials) is dropped and
  said so: compiling takes its configs from the static index, not from the decorator.

Every kept statement is a segment with its line offset, so positions reported by the compiler
in the extracted file map back to the user's file (`Extracted.to_original`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from ..analysis import Document, index_module
from ..analysis.index import Imports, Kernel, ModuleIndex
from ..analysis.syntax import text

__all__ = ["Extracted", "ExtractionError", "Segment", "extract_kernel_module"]

# Builtins a kept constant or decorator may call or name: pure, no I/O.
_SAFE_BUILTINS = frozenset(
    {"range", "int", "float", "bool", "str", "min", "max", "len", "list", "tuple", "dict", "set",
     "abs", "round", "sum", "sorted", "reversed", "zip", "enumerate", "True", "False", "None",
     "isinstance", "pow", "divmod", "any", "all", "map", "filter", "frozenset"}
)
_ALWAYS_KEPT_ROOTS = ("triton", "math", "__future__")


class ExtractionError(ValueError):
    """The kernel cannot be found or cut out of the source."""


@dataclass(frozen=True)
class Segment:
    """A run of lines copied from the original file.

    `out_line` and `orig_line` are 1-based first lines; `indent` is the number of leading
    characters removed from each line (kernels nested in `if` blocks or classes are dedented)."""

    kind: str  # "import", "constant", "helper", "function", "kernel", "decorator"
    name: str
    out_line: int
    orig_line: int
    lines: int
    indent: int = 0


@dataclass
class Extracted:
    """The standalone module and how its lines map back to the user's file."""

    text: str
    kernel: str
    segments: list[Segment]
    helpers: list[str] = field(default_factory=list)
    # Module-level Python functions the kept code names (`@tl.constexpr` helpers and the like).
    functions: list[str] = field(default_factory=list)
    constants: list[str] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    # What was left out on purpose, in words (a dropped decorator, an unresolved name).
    notes: list[str] = field(default_factory=list)
    # Names the kept code uses that no kept statement defines (the compiler will say so).
    unresolved: list[str] = field(default_factory=list)
    # 0-based (row, column) of each kept function's `def` in the original file.
    def_points: dict[str, tuple[int, int]] = field(default_factory=dict)

    def to_original(self, line: int, col: int = 0) -> tuple[int, int] | None:
        """Map a 1-based line and 0-based column of the extracted module to the original file
        (same conventions), or None for a line this module added."""
        for seg in self.segments:
            if seg.out_line <= line < seg.out_line + seg.lines:
                return seg.orig_line + (line - seg.out_line), col + seg.indent
        return None


def _statement_of(node: Node) -> Node:
    """The top-level-ish statement holding `node` (an assignment's expression_statement)."""
    current = node
    while current.parent is not None and current.type not in (
        "expression_statement", "decorated_definition", "function_definition",
        "import_statement", "import_from_statement",
    ):
        current = current.parent
    return current


def _bound_locally(node: Node) -> set[str]:
    """Names bound inside an expression (lambda parameters, comprehension targets)."""
    bound: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "lambda":
            params = current.child_by_field_name("parameters")
            if params is not None:
                bound |= {text(n) for n in _identifiers(params)}
        elif current.type == "for_in_clause":
            left = current.child_by_field_name("left")
            if left is not None:
                bound |= {text(n) for n in _identifiers(left)}
        stack.extend(current.named_children)
    return bound


def _function_locals(definition: Node) -> set[str]:
    """Parameters and names assigned anywhere in a function: Python makes them local."""
    bound: set[str] = set()
    params = definition.child_by_field_name("parameters")
    if params is not None:
        for child in params.named_children:
            name = child if child.type == "identifier" else child.child_by_field_name("name")
            if name is None:
                name = next((c for c in child.named_children if c.type == "identifier"), None)
            if name is not None:
                bound.add(text(name))
    stack = list(definition.named_children)
    while stack:
        current = stack.pop()
        target: Node | None = None
        if current.type in ("assignment", "augmented_assignment") or current.type in ("for_statement", "for_in_clause"):
            target = current.child_by_field_name("left")
        elif current.type == "as_pattern_target":
            target = current
        if target is not None:
            bound |= {text(n) for n in _identifiers(target)}
        stack.extend(current.named_children)
    return bound


def _identifiers(node: Node) -> list[Node]:
    """Identifiers that name something: not attribute fields nor keyword-argument names."""
    out: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            parent = current.parent
            if parent is not None and parent.type == "attribute" and \
                    parent.child_by_field_name("attribute") == current:
                continue
            if parent is not None and parent.type == "keyword_argument" and \
                    parent.child_by_field_name("name") == current:
                continue
            out.append(current)
            continue
        stack.extend(current.named_children)
    return out


def _import_bindings(statement: Node) -> tuple[list[str], list[str]]:
    """(names bound, modules imported) by one import statement."""
    names: list[str] = []
    modules: list[str] = []
    if statement.type == "import_statement":
        for child in statement.named_children:
            if child.type == "dotted_name":
                names.append(text(child).split(".")[0])
                modules.append(text(child))
            elif child.type == "aliased_import":
                names.append(text(child.child_by_field_name("alias")))
                modules.append(text(child.child_by_field_name("name")))
    elif statement.type == "import_from_statement":
        module = text(statement.child_by_field_name("module_name"))
        modules.append(module)
        for child in statement.children_by_field_name("name"):
            if child.type == "dotted_name":
                names.append(text(child))
            elif child.type == "aliased_import":
                names.append(text(child.child_by_field_name("alias")))
        if any(c.type == "wildcard_import" for c in statement.named_children):
            names.append("*")
    return names, modules


def _always_kept(modules: list[str]) -> bool:
    return bool(modules) and all(m.split(".")[0] in _ALWAYS_KEPT_ROOTS for m in modules)


class _Builder:
    def __init__(self, source: str, kernel_name: str) -> None:
        self.document = Document(source)
        self.index: ModuleIndex = index_module(self.document.root)
        self.imports: Imports = self.index.imports
        kernel = self.index.kernel(kernel_name)
        if kernel is None:
            raise ExtractionError(f"no @triton.jit function named {kernel_name!r} in this file")
        self.kernel: Kernel = kernel
        self.jit = {k.name: k for k in self.index.kernels}
        self.import_statements: dict[str, Node] = {}  # bound name -> statement
        self.always_imports: list[Node] = []
        for statement in self._import_nodes():
            names, modules = _import_bindings(statement)
            if statement.type == "import_from_statement" and text(
                statement.child_by_field_name("module_name")
            ).startswith("."):
                for name in names:
                    self.import_statements.setdefault(name, statement)
                continue
            if _always_kept(modules):
                self.always_imports.append(statement)
            for name in names:
                self.import_statements[name] = statement
        self.kept: dict[int, tuple[Node, str, str]] = {}  # statement id -> (node, kind, name)
        self.helpers: list[str] = []
        self.functions: list[str] = []
        self.constants: list[str] = []
        self.notes: list[str] = []
        self.unresolved: set[str] = set()
        self._safe_cache: dict[str, bool] = {}

    def _import_nodes(self) -> list[Node]:
        out: list[Node] = []
        stack = list(reversed(self.document.root.named_children))
        while stack:
            node = stack.pop()
            if node.type in ("import_statement", "import_from_statement"):
                out.append(node)
            elif node.type in ("if_statement", "try_statement", "block", "else_clause",
                               "elif_clause", "except_clause", "finally_clause"):
                # `try: import triton` guards are common; a nested import is kept on its own.
                stack.extend(reversed(node.named_children))
        return out

    # -- safety of globals and decorators ---------------------------------------------------

    def _safe_name(self, name: str, depth: int) -> bool:
        if name in self.import_statements:
            statement = self.import_statements[name]
            _, modules = _import_bindings(statement)
            return _always_kept(modules)
        if name in self.jit:
            return True
        if name in self.index.globals:
            return self._safe_global(name, depth + 1)
        return name in _SAFE_BUILTINS

    def _safe_expr(self, node: Node, depth: int = 0) -> bool:
        """Whether evaluating `node` at import time can only build values: every name it uses
        is a Triton/math import, a pure builtin, a jit function or another safe constant."""
        if depth > 20:
            return False
        local = _bound_locally(node)
        for ident in _identifiers(node):
            name = text(ident)
            if name in local:
                continue
            if not self._safe_name(name, depth):
                return False
        return True

    def _safe_global(self, name: str, depth: int = 0) -> bool:
        if name in self._safe_cache:
            return self._safe_cache[name]
        self._safe_cache[name] = False  # a cycle is not safe
        value = self.index.globals.get(name)
        safe = value is not None and value.type != "assignment" and self._safe_expr(value, depth)
        self._safe_cache[name] = safe
        return safe

    # -- collection -------------------------------------------------------------------------

    def _keep(self, node: Node, kind: str, name: str) -> bool:
        if node.id in self.kept:
            return False
        self.kept[node.id] = (node, kind, name)
        return True

    def _use_names(self, node: Node) -> None:
        """Keep what the names used in `node` refer to (names a function binds itself are
        its locals, whatever the module defines under the same name)."""
        local = _bound_locally(node)
        if node.type == "function_definition":
            local |= _function_locals(node)
        for ident in _identifiers(node):
            name = text(ident)
            if name in local:
                continue
            self._use(name)

    def _use(self, name: str) -> None:
        if name == self.kernel.name:
            return
        if name in self.jit and name != self.kernel.name:
            helper = self.jit[name]
            if self._keep(helper.outer, "helper", name):
                self.helpers.append(name)
                self._use_function(helper)
            return
        if name in self.import_statements:
            statement = self.import_statements[name]
            if statement.type == "import_from_statement" and text(
                statement.child_by_field_name("module_name")
            ).startswith("."):
                if name not in self.unresolved:
                    self.notes.append(f"`{name}` comes from a relative import, which a standalone "
                                      "module cannot resolve; it is left out")
                    self.unresolved.add(name)
                return
            self._keep(statement, "import", name)
            return
        value = self.index.globals.get(name)
        if value is not None:
            statement = _statement_of(value)
            if self._safe_global(name):
                if self._keep(statement, "constant", name):
                    self.constants.append(name)
                    self._use_names(value)
            elif name not in self.unresolved:
                self.unresolved.add(name)
                self.notes.append(f"module-level `{name}` is computed by host code; it is left out")
            return
        if name in self.index.functions and name not in self.unresolved:
            if self._keep_function(name, self.index.functions[name]):
                return
            self.unresolved.add(name)
            self.notes.append(f"`{name}` is a Python function whose decorators or defaults run host "
                              "code; it is left out")

    def _keep_function(self, name: str, outer: Node) -> bool:
        """Keep a module-level function the kernel names, with its decorators: a
        `@tl.constexpr` or `@triton.constexpr_function` helper runs at compile time, and a plain
        function gets Triton's own verdict rather than a NameError. Defining a function runs only
        its decorators and defaults, so those must be safe; its body's names are kept too."""
        definition = outer.child_by_field_name("definition") if outer.type == "decorated_definition" else outer
        if definition is None or definition.type != "function_definition":
            return False
        parent = outer.parent
        while parent is not None:
            if parent.type in ("class_definition", "function_definition"):
                return False  # a method or a closure: not a module-level name
            parent = parent.parent
        decorators = [c for c in outer.named_children if c.type == "decorator"] \
            if outer.type == "decorated_definition" else []
        params = definition.child_by_field_name("parameters")
        defaults = [c.child_by_field_name("value") for c in (params.named_children if params is not None else [])
                    if c.type in ("default_parameter", "typed_default_parameter")]
        if not all(self._safe_expr(d) for d in decorators) or \
                not all(v is None or self._safe_expr(v) for v in defaults):
            return False
        if self._keep(outer, "function", name):
            self.functions.append(name)
            for decorator in decorators:
                self._use_names(decorator)
            self._use_names(definition)
        return True

    def _use_function(self, kernel: Kernel) -> None:
        self._use_names(kernel.node)
        for decorator in kernel.decorators:
            if decorator is kernel.jit_decorator or self._safe_expr(decorator):
                self._use_names(decorator)

    def build(self) -> Extracted:
        for statement in self.always_imports:
            self._keep(statement, "import", "")
        self._keep(self.kernel.outer, "kernel", self.kernel.name)
        self._use_function(self.kernel)

        pieces: list[tuple[int, str, str, list[tuple[int, int, str]]]] = []
        # Each kept statement becomes one or more (original first row, indent, lines) runs.
        for node, kind, name in self.kept.values():
            runs = self._runs(node, kind, name)
            pieces.append((node.start_byte, kind, name, runs))
        pieces.sort(key=lambda p: p[0])

        out_lines: list[str] = []
        segments: list[Segment] = []
        synthesised = False
        for _, kind, name, runs in pieces:
            if kind in ("helper", "function", "kernel") and out_lines:
                out_lines.extend(["", ""])  # PEP 8 spacing; these lines map nowhere
            for orig_row, indent, chunk in runs:
                lines = chunk.split("\n")
                if orig_row < 0:  # a line this module wrote, not the user: maps nowhere
                    synthesised = True
                else:
                    segments.append(Segment(kind=kind, name=name, out_line=len(out_lines) + 1,
                                            orig_line=orig_row + 1, lines=len(lines),
                                            indent=indent))
                out_lines.extend(lines)
        def_points = {
            name: (self.jit[name].node.start_point[0], self.jit[name].node.start_point[1])
            for name in [self.kernel.name, *self.helpers]
        }
        binds_triton = any(
            "triton" in _import_bindings(node)[0]
            for node, _, _ in self.kept.values() if node.type == "import_statement"
        )
        if synthesised and not binds_triton:
            out_lines.insert(0, "import triton")
            segments = [Segment(s.kind, s.name, s.out_line + 1, s.orig_line, s.lines, s.indent)
                        for s in segments]
        imports = sorted({text(n) for n, kind, _ in self.kept.values() if kind == "import"})
        return Extracted(
            text="\n".join(out_lines) + "\n",
            kernel=self.kernel.name,
            segments=segments,
            helpers=list(self.helpers),
            functions=list(self.functions),
            constants=list(self.constants),
            imports=imports,
            notes=list(self.notes),
            unresolved=sorted(self.unresolved),
            def_points=def_points,
        )

    def _runs(self, node: Node, kind: str, name: str) -> list[tuple[int, int, str]]:
        """Source runs of one kept statement: (0-based original row or -1 when synthesised,
        indent removed, text). Decorators that would run host code are left out."""
        if kind not in ("helper", "kernel"):
            return [self._lines(node)]
        kernel = self.jit[name]
        if kernel.outer.type != "decorated_definition":
            # `def f(...)` made a kernel later by `f = triton.jit(f)`: decorate it here.
            row, indent, body = self._lines(kernel.node)
            return [(-1, 0, "@triton.jit"), (row, indent, body)]
        runs: list[tuple[int, int, str]] = []
        for decorator in kernel.decorators:
            if decorator is kernel.jit_decorator:
                qualified = self.imports.qualify(_decorator_head(decorator)) or ""
                if qualified.split(".")[0] == "triton":
                    runs.append(self._lines(decorator))
                else:  # a project wrapper around triton.jit: compile with plain triton.jit
                    self.notes.append(f"`{text(decorator)}` on `{name}` is compiled as @triton.jit")
                    runs.append((-1, 0, "@triton.jit"))
            elif self._safe_expr(decorator):
                runs.append(self._lines(decorator))
            else:
                self.notes.append(
                    f"decorator `{_first_line(text(decorator))}` on `{name}` uses host code and "
                    "was left out; its configs come from the static index"
                )
        runs.append(self._lines(kernel.node))
        return runs

    def _lines(self, node: Node) -> tuple[int, int, str]:
        """The full lines of `node`, dedented by its first line's indentation."""
        source = self.document.source
        start = source.rfind(b"\n", 0, node.start_byte) + 1
        end = source.find(b"\n", node.end_byte)
        end = len(source) if end < 0 else end
        chunk = source[start:end].decode("utf-8", errors="replace")
        indent = node.start_point[1]
        if indent:
            prefix = chunk[:indent]
            if prefix.strip():
                indent = 0  # the statement shares its line with code before it; keep as is
            else:
                lines = chunk.split("\n")
                chunk = "\n".join(
                    line[indent:] if line[:indent].strip() == "" else line for line in lines
                )
        return node.start_point[0], indent, chunk


def _decorator_head(decorator: Node) -> Node | None:
    expr = next((c for c in decorator.named_children if c.type != "comment"), None)
    if expr is not None and expr.type == "call":
        return expr.child_by_field_name("function")
    return expr


def _first_line(value: str) -> str:
    first = value.split("\n", 1)[0]
    return first if len(first) < 80 else first[:77] + "..."


def extract_kernel_module(source: str, kernel_name: str) -> Extracted:
    """The standalone module for `kernel_name` (see the module docstring for what it keeps).

    Raises ExtractionError when the file has no @triton.jit function of that name."""
    return _Builder(source, kernel_name).build()

