"""What a static check sees of one kernel: its nodes, names, values and block-ness.

`KernelContext` is built once per kernel per check run and shared by every rule. It walks the
kernel once, grouping nodes by type, and answers the questions the checks ask:
- `qualify(node)`: what a name means through the module's imports (`tl.arange` ->
  `triton.language.arange`);
- `scenarios()`: the constexpr bindings the kernel is compiled with (its defaults, each autotune
  `Config`, each launch site), each with the node it came from, so a finding can point there;
- `is_block(node)`: whether an expression is a block tensor rather than a scalar (a simple
  forward taint from `tl.arange`, `tl.zeros`, ... through assignments). Unknown means "not a
  block": a check that raises an error must not guess;
- `types(scenario)`: every expression's inferred type and shape in that scenario, and what the
  compiler would reject (analysis/infer.py), with pointer element types read from the launch
  site (analysis/argtypes.py).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from tree_sitter import Node, Query, QueryCursor

from ..analysis.argtypes import LaunchTyper, TypingBudgetExceeded
from ..analysis.document import PY_LANGUAGE
from ..analysis.index import Kernel, LaunchSite, ModuleIndex
from ..analysis.infer import KernelTypes, Value, infer_kernel, parameter_values
from ..analysis.launch_memo import TypedLaunch
from ..analysis.statement_memo import StatementMemo
from ..analysis.syntax import call_args, text, unparen
from ..analysis.values import UNKNOWN, evaluate

__all__ = [
    "OPTION_KEYS", "CompileScenario", "KernelContext", "MAX_TYPED_SCENARIOS", "NeedsTypes", "Scenario", "launch_param_types",
]

OPTION_KEYS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
"""The launch options a `Config` or a launch site may set besides the constexprs."""

MAX_TYPED_SCENARIOS = 2
"""The type checks interpret at most this many of a kernel's configurations (a 16-Config
autotune space would cost 16 interpretations for issues that nearly always show in the first;
each costs about as much as all the syntactic checks together)."""

# Calls that create a block tensor out of nothing.
_BLOCK_SOURCES = frozenset(
    {"arange", "zeros", "full", "rand", "randn", "randint", "randint4x", "rand4x", "randn4x", "cat",
     "join", "interleave", "histogram"}
)
# Reductions may return a scalar (no axis, or the last axis of a 1-D block): never "block".
_REDUCTIONS = frozenset(
    {"sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum", "prod", "reduce_or", "reduce_and",
     "item"}
)


class NeedsTypes(BaseException):
    """Raised by a `KernelContext` made without types when a check asks for them. A
    BaseException, so that no check's own `except Exception` can swallow it and go on as if the
    answer were "nothing known": the check is left to the typed pass, whole."""


@dataclass(frozen=True)
class Scenario:
    """One set of constexpr values the kernel is specialised with, and where they come from."""

    env: dict[str, Any]
    origin: Node | None = None
    label: str = "defaults"
    # For each name, the node that gave its value (a Config entry or a launch keyword).
    sources: dict[str, Node] = field(default_factory=dict)


@dataclass
class CompileScenario:
    """A scenario as a compile takes it: plain constexpr values and launch options, labelled
    for the report ("Config #2", "launch at line 40")."""

    label: str
    index: int | None
    origin: Node | None
    constexprs: dict[str, Any]
    options: dict[str, int]
    missing: list[str]
    launch: LaunchSite | None  # the launch that types the runtime arguments, when there is one


def _int_option(node: Node | None) -> int | None:
    try:
        return int(text(node), 0) if node is not None else None
    except ValueError:
        return None


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


class _LocalEnv(dict):
    """A scenario's constexpr values plus the kernel's single-assignment locals, each folded
    the first time a check asks for it (most locals are never asked about)."""

    def __init__(self, base: dict[str, Any], ctx: KernelContext) -> None:
        super().__init__(base)
        self._ctx = ctx
        self._resolving: set[str] = set()

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        if name in self:
            return self[name]
        values = self._ctx.assignments.get(name)
        if not values or len(values) != 1 or name in self._resolving:
            return default
        self._resolving.add(name)
        value = evaluate(values[0], self, self._ctx.qualify)
        self[name] = value
        return value


class _BlockNames:
    """`name in ctx.block_names`: whether a local is ever assigned a block tensor. Each name is
    decided on first use (most never are), following its assignments recursively; a name met
    again while being decided (`acc = acc + x`) counts as not-a-block for that path. A "yes" is
    always remembered; a "no" only where it did not rest on such an assumption about a name
    decided further out (`_outermost`), since that name may yet turn out a block."""

    def __init__(self, ctx: KernelContext) -> None:
        self._ctx = ctx
        self._known: dict[str, bool] = {}
        self._deciding: list[str] = []
        # The outermost position in `_deciding` that the answer being worked out assumed "no"
        # for (a cycle back to it); len(_deciding) when none.
        self._outermost = 0

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        known = self._known.get(name)
        if known is not None:
            return known
        deciding = self._deciding
        if name in deciding:
            self._outermost = min(self._outermost, deciding.index(name))
            return False
        depth = len(deciding)
        outer, self._outermost = self._outermost, depth
        deciding.append(name)
        try:
            found = any(self._ctx._is_block(v, self) for v in self._ctx.assignments.get(name, []))
        finally:
            deciding.pop()
            assumed, self._outermost = self._outermost, min(outer, self._outermost)
        if found or assumed >= depth:  # a "no" that assumed nothing of a name decided further out
            self._known[name] = found
        return found


# The node types checks ask for in most kernels (`KernelContext.nodes`). Not identifiers: fewer
# than half the kernels need them, and they are a third of a kernel's nodes.
_COMMON_TYPES = (
    "assignment", "augmented_assignment", "binary_operator", "boolean_operator", "call", "class_definition",
    "conditional_expression", "dictionary", "dictionary_comprehension", "elif_clause", "for_statement",
    "function_definition", "generator_expression", "if_statement", "integer", "lambda", "list_comprehension",
    "return_statement", "set", "set_comprehension", "string", "subscript", "while_statement", "with_item",
)


@functools.cache
def _common_query() -> Query:
    return Query(PY_LANGUAGE, " ".join(f"({kind}) @{kind}" for kind in _COMMON_TYPES))


@functools.cache
def _type_query(kind: str) -> Query | None:
    try:
        return Query(PY_LANGUAGE, f"({kind}) @node")
    except Exception:  # noqa: BLE001 - not a node type of the grammar: no such nodes
        return None


def _in_order(found: list[Node], kernel: Node) -> list[Node]:
    """`found` in document order (a query's captures are not), parents before their children,
    without the kernel's own node (`nodes` is about what is in it). Sorted in place."""
    found.sort(key=lambda n: (n.start_byte, -n.end_byte))
    if found and found[0] == kernel:
        del found[0]
    return found


def launch_param_types(kernel: Kernel, module: ModuleIndex, launch: LaunchSite, source: bytes) -> dict[str, str]:
    """`kernel`'s runtime parameters' signature types (`*fp16`, `i32`) as `launch` shows them
    (analysis/argtypes.py); unknown ones are left out. Computed once per launch and module (the
    typer caches the file's calls and scopes on the index), and, in the language server, kept
    across the edits that cannot change them (analysis/launch_memo.py, analysis/rebase.py)."""
    # By launch and kernel start byte, as one number (`analysis/rebase.py` moves them).
    cache: dict[int, TypedLaunch] = module.__dict__.setdefault("_param_types", {})
    launch_byte = launch.node.start_byte
    key = launch_byte << 32 | kernel.node.start_byte
    known = cache.get(key)
    if known is not None:
        return known.types
    epoch = module.rebases
    # The memo lines up whole files (16 ms on 55,000 lines); an index carried across an edit
    # (rebase.py) kept every answer the edit left alone, and types the few others afresh.
    memo = module.launch_cache.launch_types if module.launch_cache is not None and not epoch else None
    if memo is not None:
        if not module.__dict__.get("_memo_advanced"):
            memo.advance(_root(kernel.node), source)  # once per version of the file
            module.__dict__["_memo_advanced"] = True
        known = memo.get(launch_byte, kernel.name, kernel.signature, epoch)
        if known is not None:
            cache[key] = known
            return known.types
    typer = module.__dict__.get("_launch_typer")
    if typer is None:
        typer = module.__dict__["_launch_typer"] = LaunchTyper(_Root(_root(kernel.node), source), module)  # type: ignore[arg-type]
    runtime, positions = _typed_parameters(kernel)
    typed_here: set[int] = module.__dict__.setdefault("_typed_here", set())
    typed_here.add(key)
    gave_up = False
    try:
        try:
            typed, reads = typer.launch_types_read(launch, runtime, positions)
        except TypingBudgetExceeded:
            # What the typer shares between launches costs no budget, so running out depends on
            # the launches typed before this one: type those a fresh check types first and the
            # editor took from its memo instead, then try again (analysis/launch_memo.py).
            if not _typed_as_fresh(kernel, module, launch, typer, typed_here):
                raise
            typed, reads = typer.launch_types_read(launch, runtime, positions)
    except TypingBudgetExceeded as exceeded:  # unknown, and kept while nothing is typed again
        typed, reads, gave_up = {}, exceeded.reads, True
    except (RecursionError, ValueError, KeyError):  # unknown; and not memoised (no reads)
        typed, reads = {}, None
    found = {name: t.type for name, t in typed.items() if t.type not in ("*", "")}
    cache[key] = TypedLaunch(found, frozenset(reads.statements) if reads is not None else None,
                             frozenset(reads.names) if reads is not None else frozenset(), epoch, gave_up)
    if memo is not None and reads is not None:
        memo.put(launch_byte, kernel.name, kernel.signature, found, reads, gave_up)
    return found


def _typed_as_fresh(kernel: Kernel, module: ModuleIndex, launch: LaunchSite, typer: LaunchTyper,
                    typed_here: set[int]) -> bool:
    """Type with `typer` every launch a fresh check types before `launch` (the kernels in order,
    each one's launches in order) that it has not typed yet; whether there was any."""
    missing = False
    for earlier_kernel in module.kernels:
        for site in earlier_kernel.launches:
            key = site.node.start_byte << 32 | earlier_kernel.node.start_byte
            if site is launch and earlier_kernel is kernel:
                return missing
            if key in typed_here:
                continue
            typed_here.add(key)
            missing = True
            with contextlib.suppress(RecursionError, ValueError, KeyError, TypingBudgetExceeded):
                typer.launch_types_read(site, *_typed_parameters(earlier_kernel))
    return missing


def _typed_parameters(kernel: Kernel) -> tuple[list[str], dict[str, int]]:
    """What the typer is asked of a kernel's launch: its runtime parameters, and each
    parameter's position among all of them."""
    params = kernel.params
    return [p.name for p in params if not p.is_constexpr], {p.name: i for i, p in enumerate(params)}


def _root(node: Node) -> Node:
    while node.parent is not None:
        node = node.parent
    return node


@dataclass(frozen=True)
class _Root:
    """What `LaunchTyper` reads of a parsed file: its root node (and source)."""

    root: Node
    source: bytes


class _AllBut(Mapping[str, Node]):
    """A mapping without one key, as a view: a kernel's interpretation sees every other jit
    function as a helper, and copying the module's table for each kernel made a file's check
    quadratic in its kernels."""

    def __init__(self, mapping: Mapping[str, Node], excluded: str) -> None:
        self._mapping, self._excluded = mapping, excluded

    def __getitem__(self, key: str) -> Node:
        if key == self._excluded:
            raise KeyError(key)
        return self._mapping[key]

    def __contains__(self, key: object) -> bool:
        return key != self._excluded and key in self._mapping

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._mapping if k != self._excluded)

    def __len__(self) -> int:
        return len(self._mapping) - (self._excluded in self._mapping)


class _JitNodes(Mapping[str, Node]):
    """Each jit function's definition by name (the last of a name), read from its kernel only
    when asked: with an index carried across an edit (analysis/rebase.py), only the helpers a
    kernel calls are then looked up in the new tree."""

    def __init__(self, kernels: list[Kernel]) -> None:
        self._by_name = {k.name: k for k in kernels}

    def __getitem__(self, key: str) -> Node:
        return self._by_name[key].node

    def __contains__(self, key: object) -> bool:
        return key in self._by_name

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)


class KernelContext:
    def __init__(self, kernel: Kernel, module: ModuleIndex, source: bytes, version: tuple[int, int] | None,
                 *, typed: bool = True, memo: StatementMemo | None = None) -> None:
        self.kernel = kernel
        self.memo = memo  # what the inference may replay of this kernel's last check
        # Without types (`typed=False`), a question that needs the type inference or the launch
        # arguments' types raises `NeedsTypes`: what the matcher's syntax-level pass is.
        self.typed = typed
        self.module = module
        self.source = source
        self.version = version
        self.imports = module.imports
        self._qualified: dict[int, str | None] = {}
        self._call_names: dict[int, str | None] = {}
        self._local_envs: dict[int, dict[str, Any]] = {}
        self._call_args: dict[int, tuple[list[Node], dict[str, tuple[Node, Node]]]] = {}
        # `in_body` runs for most nodes some check looks at: read the body's range once.
        body = kernel.body
        self._body_range = (body.start_byte, body.end_byte) if body is not None else (1, 0)
        # The node types most checks ask for, found by one query (a walk in C) now; any other
        # type by a query of its own when first asked for (`nodes`). A Python walk of every
        # node was 8% of a cold check.
        self._by_type = QueryCursor(_common_query()).captures(kernel.node)
        for found in self._by_type.values():
            _in_order(found, kernel.node)

    def close(self) -> None:
        """Drop everything the context holds. Its on-demand helpers (`_LocalEnv`,
        `_BlockNames`) and the checks' memos point back at it, so without this a context, its
        node lists and the module index it reaches are reference cycles that only the cyclic GC
        frees: it then runs often, over tens of thousands of young objects (about a tenth of a
        cold check). The matcher calls this once every check has run on the kernel."""
        self.__dict__.clear()

    # -- nodes -----------------------------------------------------------------------------

    def nodes(self, *types: str) -> list[Node]:
        """Every node of these types in the kernel (its signature and body), in order."""
        if len(types) == 1:
            return self._of_type(types[0])
        out = [n for t in types for n in self._of_type(t)]
        out.sort(key=lambda n: n.start_byte)
        return out

    def _of_type(self, kind: str) -> list[Node]:
        found = self._by_type.get(kind)
        if found is None:
            query = None if kind in _COMMON_TYPES else _type_query(kind)  # a common type not found: none
            found = [] if query is None else QueryCursor(query).captures(self.kernel.node).get("node", [])
            self._by_type[kind] = _in_order(found, self.kernel.node)
        return found

    def in_body(self, node: Node) -> bool:
        start, end = self._body_range  # (1, 0) without a body: nothing is inside
        return start <= node.start_byte and node.end_byte <= end

    @property
    def body_range(self) -> tuple[int, int]:
        """The body's (start, end) bytes, what `in_body` compares with; (1, 0) without a body."""
        return self._body_range

    def qualify(self, node: Node | None) -> str | None:
        # Every rule asks about the same few names: qualify each node once per kernel.
        if node is None:
            return None
        key = node.id
        if key not in self._qualified:
            self._qualified[key] = self.imports.qualify(node)
        return self._qualified[key]

    def call_name(self, call: Node) -> str | None:
        # Asked about each call by many rules: skip even the field lookup the second time.
        key = call.id
        if key in self._call_names:
            return self._call_names[key]
        name = self._call_names[key] = self.qualify(call.child_by_field_name("function"))
        return name

    @cached_property
    def _tl_calls_by_name(self) -> dict[str, list[Node]]:
        """Calls in the body of `triton.language.<name>`, by name (one pass for all rules)."""
        out: dict[str, list[Node]] = {}
        for call in self.nodes("call"):
            name = self.call_name(call)
            if name is None or not name.startswith("triton.language.") or not self.in_body(call):
                continue
            short = name.rsplit(".", 1)[1]
            if self.imports.is_triton(name, short):
                out.setdefault(short, []).append(call)
        return out

    def tl_calls(self, *names: str) -> Iterator[Node]:
        """Calls of `triton.language.<name>` (however imported) in the kernel body, in order."""
        if len(names) == 1:
            yield from self._tl_calls_by_name.get(names[0], [])
            return
        calls = [c for n in names for c in self._tl_calls_by_name.get(n, [])]
        yield from sorted(calls, key=lambda c: c.start_byte)

    def method_calls(self, *names: str) -> Iterator[tuple[Node, Node, Node]]:
        """Calls `obj.name(...)` whose name is one of `names`: (call, obj, attribute) triples,
        excluding calls through the `tl`/`triton` modules themselves."""
        for call, obj, attr, attr_name in self._attribute_calls:
            if attr_name not in names:
                continue
            qualified = self.qualify(obj)
            if qualified is not None and qualified.split(".")[0] in ("triton", "torch", "math", "numpy"):
                continue
            yield call, obj, attr

    @cached_property
    def _attribute_calls(self) -> list[tuple[Node, Node, Node, str]]:
        """(call, obj, attribute, attribute name) for every call `obj.attribute(...)`, in order:
        read once for the many `method_calls` questions."""
        out = []
        for call in self.nodes("call"):
            function = call.child_by_field_name("function")
            if function is None or function.type != "attribute":
                continue
            attr = function.child_by_field_name("attribute")
            obj = function.child_by_field_name("object")
            if attr is not None and obj is not None:
                out.append((call, obj, attr, text(attr)))
        return out

    def args(self, call: Node) -> tuple[list[Node], dict[str, tuple[Node, Node]]]:
        """`call_args(call)`, read once per call: many checks ask about the same calls. The
        lists and dicts are shared, so callers must not change them."""
        key = call.id
        cached = self._call_args.get(key)
        if cached is None:
            cached = self._call_args[key] = call_args(call)
        return cached

    def arg(self, call: Node, position: int, name: str) -> Node | None:
        positional, keywords = self.args(call)
        if name in keywords:
            return keywords[name][1]
        return positional[position] if position < len(positional) else None

    @cached_property
    def is_helper(self) -> bool:
        """Whether another jit function in the module calls this one. A helper's parameters
        are constexpr whenever its caller passes constexprs, annotated or not, so rules about
        missing annotations hold only for kernels that are launched."""
        if self.kernel.launches:
            return False
        return self.module.called_by_another(self.kernel)

    @cached_property
    def is_entry(self) -> bool:
        """Whether this is a kernel the host launches, whose runtime arguments are scalars or
        pointers (never blocks): launched in this file, or reading its program id and called by
        no jit function here. A helper's arguments may be blocks of any shape."""
        if self.kernel.launches:
            return True
        return not self.is_helper and any(self.imports.is_triton(self.call_name(c), "program_id")
                                          for c in self.nodes("call"))

    # -- names and values ------------------------------------------------------------------

    @cached_property
    def identifiers(self) -> dict[str, list[Node]]:
        """Every identifier node of the kernel, by name (read once, shared by the checks)."""
        out: dict[str, list[Node]] = {}
        for node in self.nodes("identifier"):
            out.setdefault(text(node), []).append(node)
        return out

    @cached_property
    def assignments(self) -> dict[str, list[Node]]:
        """Right-hand sides assigned to each simple local name in the body."""
        out: dict[str, list[Node]] = {}
        for node in self.nodes("assignment", "augmented_assignment"):
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            if left is not None and left.type == "identifier" and right is not None:
                out.setdefault(text(left), []).append(right)
        return out

    @cached_property
    def module_constexprs(self) -> dict[str, Any]:
        """Module globals created as `tl.constexpr(value)`: the only globals a kernel may read."""
        env: dict[str, Any] = {}
        for name, node in self.module.globals.items():
            value = unparen(node)
            if value is not None and value.type == "call" and self.imports.is_triton(self.call_name(value), "constexpr"):
                positional, _ = call_args(value)
                if positional:
                    env[name] = evaluate(positional[0], env, self.qualify)
        return env

    def _base_env(self) -> tuple[dict[str, Any], dict[str, Node]]:
        env = dict(self.module_constexprs)
        sources: dict[str, Node] = {}
        for param in self.kernel.params:
            if param.default is not None:
                env[param.name] = evaluate(param.default, env, self.qualify)
                sources[param.name] = param.default
            else:
                env[param.name] = UNKNOWN
        return env, sources

    @cached_property
    def _scenarios(self) -> list[Scenario]:
        base_env, base_sources = self._base_env()
        scenarios = [Scenario(env=base_env, sources=base_sources)]
        autotune = self.kernel.autotune
        if autotune is not None:
            for config in autotune.configs:
                env = dict(base_env)
                sources = dict(base_sources)
                for key, value in config.values.items():
                    env[key] = evaluate(value, self.module_constexprs, self.qualify)
                    sources[key] = value
                scenarios.append(Scenario(env=env, origin=config.node, label="this triton.Config", sources=sources))
        for launch in self.kernel.launches:
            env = dict(base_env)
            sources = dict(base_sources)
            for param, arg in zip(self.kernel.params, launch.positional):
                if param.is_constexpr:
                    env[param.name] = evaluate(arg, self.module_constexprs, self.qualify)
                    sources[param.name] = arg
            for key, (_, value) in launch.keywords.items():
                env[key] = evaluate(value, self.module_constexprs, self.qualify)
                sources[key] = value
            scenarios.append(Scenario(env=env, origin=launch.node, label="this launch", sources=sources))
        return scenarios

    def scenarios(self) -> list[Scenario]:
        return self._scenarios

    def compile_scenarios(self) -> list[CompileScenario]:
        """What a compile specialises the kernel with: each autotune `Config` (any launch
        filling in the rest), else each launch site, else the defaults; each with the launch
        options it sets and the constexprs it leaves unknown (evaluator/compile.py)."""
        kernel = self.kernel
        all_scenarios = self.scenarios()
        defaults = all_scenarios[0]
        configs = [s for s in all_scenarios if s.label == "this triton.Config"]
        launches = [s for s in all_scenarios if s.label == "this launch"]
        constexpr_names = [p.name for p in kernel.params if p.is_constexpr]
        fallback_launch = launches[0] if launches else None

        def build(label: str, index_: int | None, scenario: Any, launch: Any | None) -> CompileScenario:
            values: dict[str, Any] = {}
            missing: list[str] = []
            for name in constexpr_names:
                value = scenario.env.get(name, UNKNOWN)
                if value is UNKNOWN and launch is not None and launch is not scenario:
                    value = launch.env.get(name, UNKNOWN)
                if value is UNKNOWN or not _plain(value):
                    missing.append(name)
                else:
                    values[name] = value
            options: dict[str, int] = {}
            for source_scenario in (launch, scenario):
                if source_scenario is None or source_scenario.origin is None:
                    continue
                for site in kernel.launches:
                    if site.node == source_scenario.origin:
                        for key in OPTION_KEYS:
                            option = _int_option(site.keywords.get(key, (None, None))[1])
                            if option is not None:
                                options[key] = option
                if kernel.autotune is not None:
                    for config in kernel.autotune.configs:
                        if config.node == source_scenario.origin:
                            for key in OPTION_KEYS:
                                option = _int_option(config.options.get(key))
                                if option is not None:
                                    options[key] = option
            typed_by: LaunchSite | None = None
            if launch is not None:
                typed_by = next((s for s in kernel.launches if s.node == launch.origin), None)
            return CompileScenario(label, index_, scenario.origin, values, options, missing, typed_by)

        if configs:
            return [
                build(f"Config #{i + 1}", i, s, fallback_launch) for i, s in enumerate(configs)
            ]
        if launches:
            return [build(f"launch at line {s.origin.start_point[0] + 1}" if s.origin else "launch",
                          i, s, s) for i, s in enumerate(launches)]
        return [build("defaults", None, defaults, None)]

    # -- types and shapes --------------------------------------------------------------------
    def param_types(self, scenario: Scenario) -> dict[str, str]:
        """The runtime parameters' signature types (`*fp16`, `i32`) that the scenario's launch
        site shows (the first launch for defaults and Configs); unknown ones are left out."""
        if not self.typed:
            raise NeedsTypes
        launches = self.kernel.launches
        launch = next((site for site in launches if site.node == scenario.origin), launches[0] if launches else None)
        if launch is None:
            return {}
        return launch_param_types(self.kernel, self.module, launch, self.source)

    def typed_scenarios(self) -> list[Scenario]:
        """The scenarios the type checks interpret: each launch site and Config (the defaults
        only when there is nothing else: their unknown constexprs decide less), at most
        MAX_TYPED_SCENARIOS."""
        scenarios = self.scenarios()
        chosen = [s for s in scenarios if s.origin is not None] or scenarios[:1]
        return chosen[:MAX_TYPED_SCENARIOS]

    def types(self, scenario: Scenario, *, values: bool = False) -> KernelTypes:
        """The issues (and with `values`, each expression's type and shape) in `scenario`
        (analysis/infer.py), computed once."""
        if values:
            kept: dict[int, KernelTypes] = self.__dict__.setdefault("_kept_values", {})
            found = kept.get(id(scenario))
            if found is None:
                found = kept[id(scenario)] = self._interpret(scenario, keep_values=True)
            return found
        cache: dict[int, KernelTypes] = self.__dict__.setdefault("_types", {})
        found = cache.get(id(scenario))
        if found is None:
            types = self.param_types(scenario)
            params = parameter_values([(p.name, p.is_constexpr) for p in self.kernel.params], scenario.env, types,
                                      entry=self.is_entry)
            # Scenarios that give every parameter the same value (two Configs differing in
            # num_warps only) share one interpretation.
            by_values: dict[str, KernelTypes] = self.__dict__.setdefault("_types_by_values", {})
            key = repr(params)
            found = by_values.get(key)
            if found is None:
                found = by_values[key] = self._interpret(scenario, keep_values=False, params=params)
            cache[id(scenario)] = found
        return found

    def types_as_launched(self, scenario: Scenario, arg_types: Mapping[str, str]) -> KernelTypes:
        """Each expression's type and shape in `scenario` with the runtime parameters' types
        the source leaves unknown taken from `arg_types` (recorded at a launch of a check run)."""
        types = {**arg_types, **self.param_types(scenario)}
        params = parameter_values([(p.name, p.is_constexpr) for p in self.kernel.params], scenario.env, types,
                                  entry=self.is_entry)
        return self._interpret(scenario, keep_values=True, params=params)

    def inferred(self, node: Node) -> list[Value]:
        """The node's inferred value in each typed scenario where it is known (for the learned
        rules' dtype and shape predicates); the interpretations are kept once computed."""
        out = []
        for scenario in self.typed_scenarios():
            value = self.types(scenario, values=True).at(node)
            if value is not None and value.known:
                out.append(value)
        return out

    def _interpret(self, scenario: Scenario, *, keep_values: bool, params: list[Any] | None = None) -> KernelTypes:
        if not self.typed:
            raise NeedsTypes
        body = self.kernel.body
        if body is None:
            return KernelTypes()
        if params is None:
            params = parameter_values([(p.name, p.is_constexpr) for p in self.kernel.params], scenario.env,
                                      self.param_types(scenario), entry=self.is_entry)
        helpers = self.module.__dict__.get("_jit_helpers")
        if helpers is None:
            helpers = self.module.__dict__["_jit_helpers"] = _JitNodes(self.module.kernels)
        return infer_kernel(body, params, self.qualify, _AllBut(helpers, self.kernel.name),
                            keep_values=keep_values, arguments=self.args, memo=self.memo)

    def local_env(self, scenario: Scenario) -> dict[str, Any]:
        """The scenario's values extended with locals assigned once from foldable expressions
        (`BLOCK2: tl.constexpr = BLOCK * 2`), folded on demand and once per scenario."""
        cached = self._local_envs.get(id(scenario))
        if cached is None:
            cached = self._local_envs[id(scenario)] = _LocalEnv(scenario.env, self)
        return cached

    def values(self, node: Node) -> Iterator[tuple[Any, Scenario]]:
        """Each distinct known value of `node` across the scenarios, with the first scenario that
        gives it. Scenarios without a known value are skipped."""
        seen: set[Any] = set()
        for scenario in self.scenarios():
            value = evaluate(node, self.local_env(scenario), self.qualify)
            if value is UNKNOWN:
                continue
            try:
                key = (type(value), value)
                if key in seen:
                    continue
                seen.add(key)
            except TypeError:
                pass
            yield value, scenario

    def is_constexpr_name(self, name: str) -> bool:
        param = self.kernel.param(name)
        if param is not None:
            return param.is_constexpr
        if name in self.module_constexprs:
            return True
        # Locals annotated constexpr or folded from constexprs.
        values = self.assignments.get(name, [])
        return bool(values) and all(self.is_constexpr_expr(v) for v in values)

    def is_constexpr_expr(self, node: Node | None, _depth: int = 0) -> bool:
        """Whether an expression is built only from literals and constexpr names."""
        node = unparen(node)
        if node is None or _depth > 30:
            return False
        if node.type in ("integer", "float", "true", "false", "none", "string"):
            return True
        if node.type == "identifier":
            name = text(node)
            if name in self.assignments and self.kernel.param(name) is None:
                return all(self.is_constexpr_expr(v, _depth + 1) for v in self.assignments[name])
            return self.is_constexpr_name(name)
        if node.type in ("binary_operator", "unary_operator", "tuple", "list", "comparison_operator",
                         "boolean_operator", "not_operator"):
            return all(self.is_constexpr_expr(c, _depth + 1) for c in node.named_children
                       if c.type not in ("comment",))
        if node.type == "call":
            called = self.call_name(node)
            if called in ("triton.next_power_of_2", "triton.cdiv", "min", "max", "int", "len") or (
                called is not None and called.startswith("math.")
            ):
                positional, keywords = call_args(node)
                return all(self.is_constexpr_expr(a, _depth + 1) for a in positional) and not keywords
        return False

    def is_runtime_param(self, node: Node | None) -> bool:
        """Whether `node` is (an expression over) a non-constexpr kernel parameter."""
        node = unparen(node)
        if node is None:
            return False
        if node.type == "identifier":
            param = self.kernel.param(text(node))
            return param is not None and not param.is_constexpr and text(node) not in self.assignments
        return False

    # -- block tensors ---------------------------------------------------------------------

    @cached_property
    def block_names(self) -> _BlockNames:
        """The locals that hold block tensors, worked out per name when first asked."""
        return _BlockNames(self)

    def is_block(self, node: Node | None) -> bool:
        return self._is_block(node, self.block_names)

    def _is_block(self, node: Node | None, names: _BlockNames | set[str], depth: int = 0) -> bool:
        node = unparen(node)
        if node is None or depth > 40:
            return False
        kind = node.type
        if kind == "identifier":
            return text(node) in names
        if kind == "comparison_operator" and any(c.type in ("is", "is not") for c in node.children):
            return False  # Triton answers `x is None` when compiling, block or not: a constexpr
        if kind in ("binary_operator", "comparison_operator", "boolean_operator"):
            return any(self._is_block(c, names, depth + 1) for c in node.named_children)
        if kind in ("unary_operator", "not_operator"):
            return self._is_block(node.named_children[-1] if node.named_children else None, names, depth + 1)
        if kind == "subscript":
            return self._is_block(node.child_by_field_name("value"), names, depth + 1)
        if kind == "attribute":
            return text(node.child_by_field_name("attribute")) == "T" and self._is_block(
                node.child_by_field_name("object"), names, depth + 1
            )
        if kind == "call":
            function = node.child_by_field_name("function")
            qualified = self.qualify(function)
            short = qualified.rsplit(".", 1)[-1] if qualified else None
            is_tl = qualified is not None and (
                qualified.startswith("triton.language") or qualified.startswith("triton.language.extra")
            )
            if is_tl and short in _REDUCTIONS:
                return False
            if is_tl and short in _BLOCK_SOURCES:
                return True
            positional, keywords = self.args(node)
            if is_tl:
                return any(self._is_block(a, names, depth + 1) for a in positional) or any(
                    self._is_block(v, names, depth + 1) for k, (_, v) in keywords.items() if k not in ("mask", "other")
                )
            if function is not None and function.type == "attribute":
                attr = text(function.child_by_field_name("attribute"))
                if attr in _REDUCTIONS:
                    return False
                return self._is_block(function.child_by_field_name("object"), names, depth + 1)
        return False
