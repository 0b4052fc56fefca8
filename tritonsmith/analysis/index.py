"""The kernel index: every Triton kernel in a module and what surrounds it.

`index_module(root)` reads the module's imports (so that `tl`, `triton.language`, a bare `jit`
or a libdevice `pow` mean what they mean in that file), finds each function whose decorator
stack holds Triton's `jit` (directly, through an alias, or through a project wrapper around it),
and collects for each one its parameters, its autotune configs, its heuristics and the places
in the same file that launch it (`kernel[grid](...)`) or call it directly.

Other DSLs' `jit` decorators (CuTe, TileLang, Gluon) are not Triton's and are not indexed.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from tree_sitter import Node, Query, QueryCursor

from .document import PY_LANGUAGE, Window
from .launch_memo import LaunchTypeMemo
from .syntax import call_args, dotted_name, string_value, text, unparen

__all__ = [
    "AutotuneConfig",
    "Autotune",
    "Imports",
    "Kernel",
    "LaunchCache",
    "LaunchSite",
    "ModuleIndex",
    "Param",
    "index_module",
]

TRITON_JIT = "triton.jit"
_CALLED = re.compile(rb"(?<![\w.])([A-Za-z_]\w*)\s*\(")
# Gluon lives under triton.experimental; its jit has other rules and is not checked here.
_NOT_TRITON_PREFIXES = ("triton.experimental", "cutlass", "cute", "tilelang")


_QUALIFIED_KEPT = 8192  # texts whose qualified name an `Imports` keeps (a file has a few hundred)


class Imports:
    """Maps names bound by imports to the fully qualified names they stand for."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.text = b""  # the module's import statements, for the matcher's pre-filter
        # Answers by the node's text, which decides them: a file spells the same few names
        # (`tl.load`, `tl.arange`) thousands of times, and rebuilding each from its parts was 3%
        # of a cold check.
        self._by_text: dict[bytes, str | None] = {}

    def bind(self, local: str, qualified: str) -> None:
        self.names[local] = qualified
        self._by_text.clear()

    def qualify(self, node: Node | None) -> str | None:
        """The qualified name of an identifier or attribute chain (`tl.arange` ->
        `triton.language.arange`), resolving the head through the imports. Unimported heads stay
        as written, so builtins come back as themselves (`abs`)."""
        if node is None:
            return None
        kind = node.type
        if kind != "identifier" and kind != "attribute":
            return self._qualify(node) if kind == "parenthesized_expression" else None
        raw = node.text or b""
        try:
            return self._by_text[raw]
        except KeyError:
            if len(self._by_text) >= _QUALIFIED_KEPT:  # an index carried across a session's edits
                self._by_text.clear()
            found = self._by_text[raw] = self._qualify(node)
            return found

    def _qualify(self, node: Node) -> str | None:
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.names.get(head)
        if base is None:
            return dotted
        return f"{base}.{rest}" if rest else base

    def is_triton(self, qualified: str | None, *names: str) -> bool:
        """Whether `qualified` is `triton.language.<name>` (or a known re-export) for a name."""
        if qualified is None:
            return False
        for name in names:
            if qualified in (
                f"triton.language.{name}",
                f"triton.language.core.{name}",
                f"triton.language.math.{name}",
                f"triton.language.standard.{name}",
            ):
                return True
        return False


@dataclass
class Param:
    name: str
    node: Node
    index: int
    annotation: str | None = None
    default: Node | None = None
    is_constexpr: bool = False


@dataclass
class AutotuneConfig:
    """One `triton.Config(...)` with its meta-parameter values."""

    node: Node
    values: dict[str, Node] = field(default_factory=dict)
    key_nodes: dict[str, Node] = field(default_factory=dict)
    options: dict[str, Node] = field(default_factory=dict)  # num_warps, num_stages, ...


@dataclass
class Autotune:
    node: Node
    configs: list[AutotuneConfig] = field(default_factory=list)
    configs_known: bool = False
    key: list[tuple[str, Node]] = field(default_factory=list)
    reset_to_zero: list[str] = field(default_factory=list)
    restore_value: list[str] = field(default_factory=list)


class LaunchSite:
    """`kernel[grid](args...)`, or a direct call `kernel(args...)` when `grid` is None. The
    arguments are read on first use: every keystroke re-indexes the file's launch sites, and
    only the edited kernel's checks read them."""

    __slots__ = ("_args", "grid", "node", "span")

    def __init__(self, node: Node, grid: Node | None) -> None:
        self.node = node
        self.grid = grid
        # Its bytes as read now: the index carried across an edit in the function around it
        # (`rebase.py`) must not read the node again, which the edit may have freed.
        self.span = (node.start_byte, node.end_byte)
        self._args: tuple[list[Node], dict[str, tuple[Node, Node]]] | None = None

    @property
    def positional(self) -> list[Node]:
        if self._args is None:
            self._args = call_args(self.node)
        return self._args[0]

    @property
    def keywords(self) -> dict[str, tuple[Node, Node]]:
        if self._args is None:
            self._args = call_args(self.node)
        return self._args[1]


class Kernel:
    """One Triton kernel (or jit helper). Parameters, autotune configs and heuristics are read
    on first use: an edit that leaves a kernel's text alone never pays for re-reading them."""

    def __init__(
        self,
        *,
        name: str,
        node: Node,
        outer: Node,
        decorators: list[Node],
        jit_decorator: Node,
        imports: Imports,
        globals_: Mapping[str, Node],
    ) -> None:
        self.name = name
        self.node = node  # the function_definition
        self.outer = outer  # the decorated_definition
        self.decorators = decorators
        self.jit_decorator = jit_decorator
        # `f = triton.heuristics(...)(f)` applied after the definition: decorators in all but name.
        self.wrapper_calls: list[Node] = []
        self.launches: list[LaunchSite] = []
        self.direct_calls: list[LaunchSite] = []
        self._imports = imports
        self._globals = globals_

    @cached_property
    def params(self) -> list[Param]:
        return _params(self.node, self._imports)

    @cached_property
    def _decorator_info(self) -> tuple[Autotune | None, dict[str, Node], Node | None]:
        autotune: Autotune | None = None
        heuristics: dict[str, Node] = {}
        heuristics_node: Node | None = None
        exprs = [next((c for c in d.named_children if c.type != "comment"), None) for d in self.decorators]
        for expr in exprs + self.wrapper_calls:
            if expr is None or expr.type != "call":
                continue
            qualified = self._imports.qualify(expr.child_by_field_name("function"))
            if qualified in ("triton.autotune", "triton.runtime.autotune", "triton.runtime.autotuner.autotune"):
                autotune = _autotune(expr, self._imports, self._globals)
            elif qualified in ("triton.heuristics", "triton.runtime.heuristics", "triton.runtime.autotuner.heuristics"):
                heuristics.update(_heuristics(expr, self._globals))
                heuristics_node = expr
        return autotune, heuristics, heuristics_node

    @property
    def autotune(self) -> Autotune | None:
        return self._decorator_info[0]

    @property
    def heuristics(self) -> dict[str, Node]:
        return self._decorator_info[1]

    @property
    def heuristics_node(self) -> Node | None:
        return self._decorator_info[2]

    @property
    def body(self) -> Node | None:
        return self.node.child_by_field_name("body")

    @cached_property
    def signature(self) -> bytes:
        """The parameter list's text, `(x_ptr, n, BLOCK: tl.constexpr)`."""
        parameters = self.node.child_by_field_name("parameters")
        return (parameters.text or b"") if parameters is not None else b""

    def param(self, name: str) -> Param | None:
        return self._params_by_name.get(name)

    @cached_property
    def _params_by_name(self) -> dict[str, Param]:
        # Checks ask for parameters by name thousands of times per file. The first parameter
        # of a name wins, as a scan in order would find it.
        out: dict[str, Param] = {}
        for param in self.params:
            out.setdefault(param.name, param)
        return out

    @property
    def constexpr_names(self) -> set[str]:
        return {p.name for p in self.params if p.is_constexpr}

    def __repr__(self) -> str:
        return f"Kernel({self.name!r} at line {self.node.start_point[0] + 1})"


@dataclass
class ModuleIndex:
    imports: Imports
    kernels: list[Kernel]
    # Module-level names: function definitions and assignments, by name.
    functions: Mapping[str, Node]
    globals: Mapping[str, Node]
    # The document's caches kept across edits (the language server's), or None (one-off checks).
    launch_cache: LaunchCache | None = None
    # What `rebase.py` needs to carry the index across an edit in a kernel's body: the names
    # that stand for `triton.jit`, whether a kernel is made by assignment, how many statements
    # the module has, and each kernel's (start, end, body start) bytes, read while its nodes
    # were current (None where the index was not built for that).
    jit_aliases: frozenset[str] | None = None
    assigned_kernels: bool = False
    top_statements: int = 0
    spans: list[tuple[int, int, int]] | None = None
    # The same for each function of host code (a launcher, a method): an edit in one body is
    # carried too. And the edits carried since the index was built in full, one per rebase.
    host_spans: list[tuple[int, int, int]] | None = None
    windows: tuple[Window, ...] = ()
    source: bytes | None = None  # the text it was built from (where `spans` are read)
    # Globals assigned more than once at module level, and how many times (the last one counts).
    redefined: dict[str, int] = field(default_factory=dict)

    @property
    def rebases(self) -> int:
        """How many times in a row it was carried across an edit (rebase.py)."""
        return len(self.windows)

    def kernel(self, name: str) -> Kernel | None:
        for kernel in self.kernels:
            if kernel.name == name:
                return kernel
        return None

    @cached_property
    def jit_names(self) -> frozenset[str]:
        return frozenset(k.name for k in self.kernels)

    @cached_property
    def kernels_by_name(self) -> dict[str, list[Kernel]]:
        """Every jit function of a name, in file order (a name may be defined twice)."""
        out: dict[str, list[Kernel]] = {}
        for kernel in self.kernels:
            out.setdefault(kernel.name, []).append(kernel)
        return out

    @cached_property
    def _callees(self) -> tuple[dict[int, frozenset[str]], dict[str, int]]:
        """The names each jit function's body calls (`name(...)`; not its own `def name(`), by
        `id` of the kernel, and how many of them call each name: read once per index, so asking
        for every kernel costs linear time, not quadratic."""
        per_kernel = {id(k): callee_names(_body_text(k)) for k in self.kernels}
        callers: dict[str, int] = {}
        for called in per_kernel.values():
            for name in called:
                callers[name] = callers.get(name, 0) + 1
        return per_kernel, callers

    def jit_callees(self, *, excluding: Kernel | None = None) -> set[str]:
        """Names called (`name(...)`) inside the module's jit functions, other than `excluding`."""
        per_kernel, _ = self._callees
        return {n for k in self.kernels if k is not excluding for n in per_kernel[id(k)]}

    def callers_of(self, name: str) -> list[int]:
        """The positions (in `kernels`) of the jit functions whose body calls `name(...)`. An
        index carried across an edit (rebase.py) searches its text for the name, a millisecond
        on 55,000 lines, rather than reading every body (30 ms, and every relocated kernel's
        nodes); a fresh one reads them once, which a whole file's check repays."""
        spans, source = self.spans, self.source
        if not self.windows or spans is None or source is None or "_callees" in self.__dict__:
            per_kernel, _ = self._callees
            return [i for i, k in enumerate(self.kernels) if name in per_kernel[id(k)]]
        if not _CALLED.fullmatch(name.encode() + b"("):
            return []  # not a name `callee_names` reads
        out: list[int] = []
        for match in re.finditer(re.escape(name.encode()) + rb"\s*\(", source):
            at = match.start()
            if at and (source[at - 1:at].isalnum() or source[at - 1] in b"_."):
                continue  # the end of a longer name, or an attribute
            position = bisect_left(spans, (at + 1,)) - 1  # the last function starting at or before it
            if position >= 0 and 0 <= spans[position][2] <= at < spans[position][1] and \
                    (not out or out[-1] != position):
                out.append(position)
        return out

    def called_by_another(self, kernel: Kernel) -> bool:
        """Whether a jit function other than `kernel` calls `kernel`'s name."""
        if self.windows:
            position = next(i for i, k in enumerate(self.kernels) if k is kernel)
            return any(i != position for i in self.callers_of(kernel.name))
        per_kernel, callers = self._callees
        count = callers.get(kernel.name, 0)
        if kernel.name in per_kernel.get(id(kernel), ()):
            count -= 1
        return count > 0


def callee_names(body: bytes) -> frozenset[str]:
    """The names a body calls (`name(...)`)."""
    return frozenset(n.decode() for n in _CALLED.findall(body))


def _body_text(kernel: Kernel) -> bytes:
    body = kernel.body
    return (body.text or b"") if body is not None else b""


def _module_statements(root: Node) -> list[Node]:
    """Top-level statements, looking through module-level `if`/`try`/`with` blocks and classes
    (kernels are often defined under `if HAS_TRITON:` or as static methods)."""
    out: list[Node] = []
    stack = list(reversed(root.named_children))
    while stack:
        node = stack.pop()
        if node.type in ("if_statement", "try_statement", "with_statement", "else_clause",
                         "elif_clause", "except_clause", "finally_clause", "block",
                         "class_definition"):
            inner = node.child_by_field_name("body") if node.type == "class_definition" else node
            children = list(inner.named_children) if inner is not None else []
            if node.type == "if_statement":
                children = [c for c in children if c.type in ("block", "else_clause", "elif_clause")]
            stack.extend(reversed(children))
            continue
        out.append(node)
    return out


def _read_imports(statements: list[Node]) -> Imports:
    imports = Imports()
    texts: list[bytes] = []
    for node in statements:
        if node.type in ("import_statement", "import_from_statement"):
            texts.append(node.text or b"")
        if node.type == "import_statement":
            for child in node.named_children:
                if child.type == "dotted_name":
                    name = text(child)
                    imports.bind(name.split(".")[0], name.split(".")[0])
                elif child.type == "aliased_import":
                    name = text(child.child_by_field_name("name"))
                    alias = text(child.child_by_field_name("alias"))
                    imports.bind(alias, name)
        elif node.type == "import_from_statement":
            module_node = node.child_by_field_name("module_name")
            module = text(module_node)
            if module.startswith("."):
                continue
            for child in node.children_by_field_name("name"):
                if child.type == "dotted_name":
                    imports.bind(text(child), f"{module}.{text(child)}")
                elif child.type == "aliased_import":
                    name = text(child.child_by_field_name("name"))
                    alias = text(child.child_by_field_name("alias"))
                    imports.bind(alias, f"{module}.{name}")
    imports.text = b"\n".join(texts)
    # Libdevice lives under extra.cuda / extra.hip in some releases; all mean the same functions.
    for local, qualified in list(imports.names.items()):
        for home in ("triton.language.extra.cuda.libdevice", "triton.language.extra.hip.libdevice"):
            if qualified.startswith(home):
                imports.bind(local, "triton.language.extra.libdevice" + qualified[len(home):])
    return imports


def _decorator_target(decorator: Node) -> Node | None:
    expr = next((c for c in decorator.named_children if c.type != "comment"), None)
    if expr is not None and expr.type == "call":
        return expr.child_by_field_name("function")
    return expr


def _is_jit(qualified: str | None, jit_aliases: set[str] | frozenset[str]) -> bool:
    if qualified is None or qualified.startswith(_NOT_TRITON_PREFIXES):
        return False
    return qualified == TRITON_JIT or qualified in ("triton.runtime.jit", "triton.runtime.jit.jit") or qualified in jit_aliases


def _jit_wrappers(statements: list[Node], imports: Imports, source: bytes, base: int) -> set[str]:
    """Module-level names that stand for `triton.jit`: `my_jit = triton.jit`, or a function whose
    body returns or calls `triton.jit` (a project wrapper). `source`: the module's text, which
    starts at byte `base` of the file."""
    aliases: set[str] = set()
    for node in statements:
        if node.type == "expression_statement" and node.named_child_count == 1:
            assign = node.named_children[0]
            if assign.type == "assignment":
                left = assign.child_by_field_name("left")
                right = assign.child_by_field_name("right")
                if left is not None and left.type == "identifier" and imports.qualify(right) == TRITON_JIT:
                    aliases.add(text(left))
        elif node.type in ("function_definition", "decorated_definition"):
            definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
            if definition is None or definition.type != "function_definition":
                continue
            body = definition.child_by_field_name("body")
            if body is None or source.find(b"jit", body.start_byte - base, body.end_byte - base) < 0:
                continue  # (searched in place: copying every function's body cost 10 ms a keystroke)
            captures = QueryCursor(_JIT_REFERENCE).captures(body)
            if any(imports.qualify(n) == TRITON_JIT for n in captures.get("ref", [])):
                aliases.add(text(definition.child_by_field_name("name")))
    return aliases


_JIT_REFERENCE = Query(PY_LANGUAGE, "[(attribute) (identifier)] @ref")


def _params(definition: Node, imports: Imports) -> list[Param]:
    params_node = definition.child_by_field_name("parameters")
    out: list[Param] = []
    if params_node is None:
        return out
    for child in params_node.named_children:
        name_node = child
        annotation: Node | None = None
        default: Node | None = None
        if child.type in ("typed_parameter", "typed_default_parameter", "default_parameter"):
            name_node = child.child_by_field_name("name") or next(
                (c for c in child.named_children if c.type == "identifier"), child
            )
            annotation = child.child_by_field_name("type")
            default = child.child_by_field_name("value")
        elif child.type != "identifier":
            continue
        annotation_text = text(annotation) if annotation is not None else None
        ann_expr = annotation.named_children[0] if annotation is not None and annotation.named_child_count else annotation
        qualified = imports.qualify(ann_expr) if ann_expr is not None else None
        is_constexpr = bool(
            qualified in ("triton.language.constexpr", "triton.language.core.constexpr")
            # Triton tests the annotation as a string, so `BLOCK: "tl.constexpr"` counts too.
            or (annotation_text is not None and annotation_text.strip("\"' ").endswith("constexpr"))
        )
        out.append(
            Param(
                name=text(name_node),
                node=name_node,
                index=len(out),
                annotation=annotation_text,
                default=default,
                is_constexpr=is_constexpr,
            )
        )
    return out


def _string_list(node: Node | None, globals_: Mapping[str, Node]) -> list[tuple[str, Node]]:
    node = _resolve_global(node, globals_)
    if node is None or node.type not in ("list", "tuple"):
        return []
    return [(v, c) for c in node.named_children if (v := string_value(c)) is not None]


def _resolve_global(node: Node | None, globals_: Mapping[str, Node]) -> Node | None:
    node = unparen(node)
    seen = 0
    while node is not None and node.type == "identifier" and text(node) in globals_ and seen < 5:
        node = unparen(globals_[text(node)])
        seen += 1
    return node


def _config(call: Node, imports: Imports) -> AutotuneConfig | None:
    function = call.child_by_field_name("function")
    if imports.qualify(function) not in ("triton.Config", "triton.runtime.Config", "triton.runtime.autotuner.Config"):
        return None
    positional, keywords = call_args(call)
    config = AutotuneConfig(node=call)
    mapping = positional[0] if positional else (keywords.get("kwargs", (None, None))[1])
    mapping = unparen(mapping)
    if mapping is not None and mapping.type == "dictionary":
        for pair in mapping.named_children:
            if pair.type != "pair":
                continue
            key = string_value(pair.child_by_field_name("key"))
            value = pair.child_by_field_name("value")
            if key is not None and value is not None:
                config.values[key] = value
                config.key_nodes[key] = pair.child_by_field_name("key") or pair
    for name, (_, value) in keywords.items():
        if name != "kwargs":
            config.options[name] = value
    return config


def _autotune(call: Node, imports: Imports, globals_: Mapping[str, Node]) -> Autotune:
    positional, keywords = call_args(call)
    autotune = Autotune(node=call)
    configs_node = keywords["configs"][1] if "configs" in keywords else (positional[0] if positional else None)
    configs_node = _resolve_global(configs_node, globals_)
    if configs_node is not None and configs_node.type in ("list", "tuple"):
        autotune.configs_known = True
        for child in configs_node.named_children:
            item = unparen(child)
            if item is None or item.type == "comment":
                continue
            config = _config(item, imports) if item.type == "call" else None
            if config is None:
                autotune.configs_known = False
                continue
            autotune.configs.append(config)
    key_node = keywords["key"][1] if "key" in keywords else (positional[1] if len(positional) > 1 else None)
    autotune.key = _string_list(key_node, globals_)
    autotune.reset_to_zero = [v for v, _ in _string_list(keywords.get("reset_to_zero", (None, None))[1], globals_)]
    autotune.restore_value = [v for v, _ in _string_list(keywords.get("restore_value", (None, None))[1], globals_)]
    return autotune


def _heuristics(call: Node, globals_: Mapping[str, Node]) -> dict[str, Node]:
    positional, keywords = call_args(call)
    mapping = keywords["values"][1] if "values" in keywords else (positional[0] if positional else None)
    mapping = _resolve_global(mapping, globals_)
    out: dict[str, Node] = {}
    if mapping is not None and mapping.type == "dictionary":
        for pair in mapping.named_children:
            if pair.type == "pair":
                key = string_value(pair.child_by_field_name("key"))
                value = pair.child_by_field_name("value")
                if key is not None and value is not None:
                    out[key] = value
    return out


def kernel_of(node: Node, imports: Imports, jit_aliases: set[str] | frozenset[str], globals_: Mapping[str, Node],
            jit_memo: dict[bytes, bool] | None = None) -> Kernel | None:
    if node.type != "decorated_definition":
        return None
    definition = node.child_by_field_name("definition")
    if definition is None or definition.type != "function_definition":
        return None
    decorators = [c for c in node.named_children if c.type == "decorator"]
    jit_decorator = None
    for decorator in decorators:
        # Whether a decorator is jit depends on its text, the imports and the jit aliases (the
        # memo's owner keys it by those): a keystroke re-indexes every kernel of the file.
        key = decorator.text or b""
        is_jit = jit_memo.get(key) if jit_memo is not None else None
        if is_jit is None:
            is_jit = _is_jit(imports.qualify(_decorator_target(decorator)), jit_aliases)
            if jit_memo is not None:
                jit_memo[key] = is_jit
        if is_jit:
            jit_decorator = decorator
            break
    if jit_decorator is None:
        return None
    return Kernel(
        name=text(definition.child_by_field_name("name")),
        node=definition,
        outer=node,
        decorators=decorators,
        jit_decorator=jit_decorator,
        imports=imports,
        globals_=globals_,
    )


class LaunchCache:
    """Where the module's kernels are called or subscripted in each host statement (keyed by the
    statement's text, while the kernels' names stay the same), and the argument types at each
    launch (`launch_memo.py`).

    Kept per document by the server, so a keystroke re-scans only the statement it changed."""

    def __init__(self) -> None:
        self._entries: dict[bytes, list[tuple[int, int, bytes]]] = {}
        self._names: frozenset[bytes] = frozenset()
        self._jit: tuple[tuple[bytes, frozenset[str]], dict[bytes, bool]] | None = None
        self.launch_types = LaunchTypeMemo()  # the type checks' argument types at each launch

    def jit_memo(self, imports: Imports, jit_aliases: set[str]) -> dict[bytes, bool]:
        """Which decorator texts are `triton.jit`, while the imports and jit aliases stay."""
        context = (imports.text, frozenset(jit_aliases))
        if self._jit is None or self._jit[0] != context or len(self._jit[1]) > 4096:
            self._jit = (context, {})
        return self._jit[1]

    def kernels_named(self, names: frozenset[bytes]) -> None:
        """The module's kernels are these: if they changed (a kernel added, renamed or gone),
        every statement is scanned again."""
        if names != self._names:
            self._entries.clear()
            self._names = names

    def lookup(self, key: bytes) -> list[tuple[int, int, bytes]] | None:
        return self._entries.get(key)

    def store(self, key: bytes, value: list[tuple[int, int, bytes]], live: int) -> None:
        if len(self._entries) > 4 * live + 256:
            self._entries.clear()
        self._entries[key] = value


_CALLED_NAME = re.compile(rb"(?<![\w.\x80-\xff])([A-Za-z_\x80-\xff][\w\x80-\xff]*)\s*[\[(]")  # UTF-8 names too


def called_names(source: bytes) -> set[bytes]:
    """Every name followed by `(` or `[` in some text: the kernels among them are all it may
    launch or call."""
    return {m.group(1) for m in _CALLED_NAME.finditer(source)}


def find_launches(root: Node, kernels: list[Kernel], hosts: list[Node], cache: LaunchCache | None) -> None:
    """Attach `kernel[grid](...)` launches and direct calls `kernel(...)` made outside kernels.

    A regular expression over each host statement finds every name followed by `[` or `(` (far
    cheaper than a tree query; one pattern for any name, so the cost is linear in the file, not
    in its kernels times its text); the kernels' names are picked out and the tree confirms each.
    """
    by_name = {k.name.encode(): k for k in kernels}
    if not by_name:
        return
    if cache is not None:
        cache.kernels_named(frozenset(by_name))
    for host in hosts:
        source = host.text or b""
        found = cache.lookup(source) if cache is not None else None
        if found is None:
            found = [(m.start(1), m.end(1), m.group(1)) for m in _CALLED_NAME.finditer(source)
                     if m.group(1) in by_name]
            if cache is not None:
                cache.store(source, found, len(hosts))
        for start, end, name in found:
            kernel = by_name[name]
            ident = root.descendant_for_byte_range(host.start_byte + start, host.start_byte + end)
            if ident is not None and ident.type == "identifier":
                _attach(kernel, ident)


def _attach(kernel: Kernel, ident: Node) -> None:
    parent = ident.parent
    if parent is not None and parent.type == "subscript" and parent.child_by_field_name("value") == ident:
        call = parent.parent
        if call is not None and call.type == "call" and call.child_by_field_name("function") == parent:
            kernel.launches.append(LaunchSite(call, parent.child_by_field_name("subscript")))
    elif parent is not None and parent.type == "call" and parent.child_by_field_name("function") == ident:
        kernel.direct_calls.append(LaunchSite(parent, None))


def _assigned_kernels(
    statements: list[Node], functions: dict[str, Node], imports: Imports, jit_aliases: set[str],
    globals_: dict[str, Node],
) -> list[Kernel]:
    """Kernels made by assignment after a plain definition, as some projects write them:

        def _rope(...): ...
        _rope = triton.jit(_rope)
        _rope = triton.heuristics({...})(_rope)
    """
    kernels: dict[str, Kernel] = {}
    for node in statements:
        if node.type != "expression_statement" or node.named_child_count != 1:
            continue
        assign = node.named_children[0]
        left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        if assign.type != "assignment" or left is None or left.type != "identifier" or right is None:
            continue
        if right.type != "call":
            continue
        name = text(left)
        function = right.child_by_field_name("function")
        positional, _ = call_args(right)
        wrapped = positional[0] if positional else None
        if wrapped is None or wrapped.type != "identifier" or text(wrapped) != name:
            continue
        definition = functions.get(name)
        if _is_jit(imports.qualify(function), jit_aliases) and definition is not None \
                and definition.type == "function_definition" and name not in kernels:
            kernels[name] = Kernel(
                name=name, node=definition, outer=definition, decorators=[], jit_decorator=right,
                imports=imports, globals_=globals_,
            )
        elif name in kernels and function is not None and function.type == "call":
            kernels[name].wrapper_calls.append(function)
    return list(kernels.values())


def index_module(root: Node, *, launch_cache: LaunchCache | None = None) -> ModuleIndex:
    """Index every Triton kernel of a parsed module. Never raises on broken code."""
    statements = _module_statements(root)
    imports = _read_imports(statements)
    functions: dict[str, Node] = {}
    globals_: dict[str, Node] = {}
    redefined: dict[str, int] = {}  # globals assigned more than once: how many times
    for node in statements:
        if node.type == "function_definition":
            functions[text(node.child_by_field_name("name"))] = node
        elif node.type == "decorated_definition":
            definition = node.child_by_field_name("definition")
            if definition is not None and definition.type == "function_definition":
                functions[text(definition.child_by_field_name("name"))] = node
        elif node.type == "expression_statement" and node.named_child_count >= 1:
            assign = node.named_children[0]
            if assign.type == "assignment":
                left = assign.child_by_field_name("left")
                right = assign.child_by_field_name("right")
                if left is not None and left.type == "identifier":
                    name = text(left)
                    if name in globals_:
                        redefined[name] = redefined.get(name, 1) + 1
                    globals_[name] = right if right is not None else assign  # annotated without value
    source = root.text or b""
    jit_aliases = _jit_wrappers(statements, imports, source, root.start_byte)
    kernels: list[Kernel] = []
    host_nodes: list[Node] = []
    jit_memo = launch_cache.jit_memo(imports, jit_aliases) if launch_cache is not None else None
    for node in statements:
        kernel = kernel_of(node, imports, jit_aliases, globals_, jit_memo)
        if kernel is not None:
            kernels.append(kernel)
        else:
            host_nodes.append(node)
    assigned = _assigned_kernels(statements, functions, imports, jit_aliases, globals_) if b"jit(" in source else []
    if assigned:
        outers = {k.outer.id for k in assigned}
        host_nodes = [n for n in host_nodes if n.id not in outers]
        kernels = sorted(kernels + assigned, key=lambda k: k.outer.start_byte)
    find_launches(root, kernels, host_nodes, launch_cache)
    spans = host_spans = None
    if launch_cache is not None:  # an editor's document: ready to be carried across an edit
        spans = [(k.outer.start_byte, k.outer.end_byte, body.start_byte if (body := k.body) is not None else -1)
                 for k in kernels]
        host_spans = [(node.start_byte, node.end_byte, body.start_byte) for node in host_nodes
                      if (body := function_body(node)) is not None]
    return ModuleIndex(imports=imports, kernels=kernels, functions=functions, globals=globals_,
                       launch_cache=launch_cache, jit_aliases=frozenset(jit_aliases), assigned_kernels=bool(assigned),
                       top_statements=root.named_child_count, spans=spans, host_spans=host_spans,
                       source=source if spans is not None else None, redefined=redefined)


def function_body(node: Node) -> Node | None:
    """The body of a (decorated) function definition; None for any other statement."""
    if node.type == "decorated_definition":
        node = node.child_by_field_name("definition") or node
    return node.child_by_field_name("body") if node.type == "function_definition" else None
