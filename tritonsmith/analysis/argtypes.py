"""The types a kernel's runtime arguments have at a launch site, read from the syntax tree.

Compiling ahead of time needs a signature (`*fp16` for a pointer to half-precision data, `i32`
for an integer). Triton takes it from the arguments of each launch; without running anything,
this module follows each argument of a launch site back to where its value is made:

- allocations and casts in the launcher: `torch.empty(..., dtype=torch.int32)`,
  `torch.empty_like(x)`, `x.half()`, `x.to(torch.float16)`, `x.int()`, `x.view(torch.int32)`;
  factories without a dtype make torch's default, float32 (unless the file changes it);
- a launcher's parameters through its callers in the file (`out = my_add(x, y)`), through
  `ModelNew.forward` to KernelBench's `get_inputs()`, and through a harness launcher `F` to
  `F_inputs()` (docs/harness.md);
- `self.<name>` through its assignment in the class (`self.w = nn.Parameter(torch.randn(...))`,
  `self.register_buffer("packed", ...)`), module constants, and literals.

What it cannot follow stays unknown, and the caller says that it assumed a type. Tree-sitter
only: the server imports this module too, so no torch or triton here.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tree_sitter import Node, Query, QueryCursor

from .document import PY_LANGUAGE, Document
from .index import LaunchSite, ModuleIndex
from .syntax import call_args, enclosing, string_value, text, top_statement, unparen

__all__ = ["ArgType", "LaunchTyper", "Reads", "TypingBudgetExceeded", "triton_type", "TORCH_DTYPES"]

TORCH_DTYPES: dict[str, str] = {
    "float16": "float16", "half": "float16", "bfloat16": "bfloat16", "float32": "float32",
    "float": "float32", "float64": "float64", "double": "float64", "int8": "int8", "int16": "int16",
    "short": "int16", "int32": "int32", "int": "int32", "int64": "int64", "long": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "bool": "bool",
    "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2",
    "float8_e4m3fnuz": "float8_e4m3fnuz", "float8_e5m2fnuz": "float8_e5m2fnuz",
}
"""`torch.<attribute>` -> the dtype's canonical name."""

_TRITON: dict[str, str] = {
    "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64", "int8": "i8",
    "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32",
    "uint64": "u64", "bool": "i1", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
    "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2fnuz": "fp8e5b16",
}

_CAST_METHODS = {"half": "float16", "float": "float32", "double": "float64", "bfloat16": "bfloat16",
                 "int": "int32", "long": "int64", "short": "int16", "char": "int8", "byte": "uint8",
                 "bool": "bool"}
# Methods whose result has the dtype of the tensor they are called on.
_SAME_DTYPE_METHODS = frozenset({
    "contiguous", "clone", "detach", "view", "reshape", "flatten", "t", "transpose", "permute",
    "expand", "expand_as", "squeeze", "unsqueeze", "cuda", "cpu", "narrow", "select", "as_strided",
    "view_as", "reshape_as", "repeat", "unfold", "movedim", "swapaxes", "flip", "roll", "requires_grad_",
    "pin_memory", "share_memory_", "relu", "sigmoid", "tanh", "exp", "abs", "neg", "sqrt", "square",
    "zero_", "fill_", "copy_", "normal_", "uniform_", "add", "sub", "mul", "add_", "mul_", "sub_",
    "clamp", "clamp_", "sum", "mean", "amax", "amin", "max", "min", "softmax", "cumsum", "tril",
    "triu", "masked_fill", "index_select", "gather", "T", "mT", "data", "real", "diagonal",
})
_INT_METHODS = frozenset({"numel", "size", "stride", "dim", "element_size", "nelement", "ndimension",
                          "storage_offset", "get_device", "data_ptr"})
_BOOL_RESULT = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "logical_not",
                          "logical_and", "logical_or", "logical_xor"})
_INT64_RESULT = frozenset({"argmax", "argmin", "argsort", "nonzero", "randint", "randperm",
                           "bincount", "searchsorted", "bucketize"})
_FLOAT_FACTORIES = frozenset({"empty", "zeros", "ones", "rand", "randn", "empty_strided", "linspace",
                              "logspace", "eye", "normal"})
_LIKE_FACTORIES = frozenset({"empty_like", "zeros_like", "ones_like", "full_like", "rand_like",
                             "randn_like", "randint_like"})
# torch functions (and torch.nn.functional's) whose result has the dtype of their first tensor.
_SAME_DTYPE_FUNCTIONS = frozenset({
    "relu", "sigmoid", "tanh", "exp", "abs", "neg", "sqrt", "softmax", "log_softmax", "gelu", "silu",
    "matmul", "mm", "bmm", "addmm", "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "layer_norm", "group_norm", "batch_norm", "dropout",
    "clone", "contiguous", "transpose", "permute", "reshape", "flatten", "squeeze", "unsqueeze",
    "narrow", "t", "cat", "concat", "concatenate", "stack", "clamp", "maximum", "minimum", "add",
    "sub", "mul", "sum", "mean", "amax", "amin", "cumsum", "tril", "triu", "max_pool2d", "avg_pool2d",
    "pad", "interpolate", "where", "flip", "roll", "chunk", "split",
})
_INT_FUNCTIONS = frozenset({"int", "len", "triton.cdiv", "triton.next_power_of_2", "math.ceil",
                            "math.floor", "math.prod", "round", "divmod", "cdiv", "next_power_of_2"})
_LAYERS_WITH_WEIGHTS = ("Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                        "ConvTranspose3d", "LayerNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d",
                        "BatchNorm3d", "Embedding", "InstanceNorm2d", "RMSNorm", "Bilinear")
_FLOAT_RANK = {"float16": 1, "bfloat16": 1, "float32": 2, "float64": 3}
_MAX_DEPTH = 24
# Expressions one launch's typing may evaluate. Real code's most is 135 (fla's activations.py);
# host functions that all call one another with the argument make the walk exponential in their
# number (`bench/typing_cost.py`'s dispatchers), so past this the launch's types are unknown.
_BUDGET = 2_000
_SCOPES = frozenset({"function_definition", "class_definition", "lambda"})

_Recorded = tuple[frozenset[tuple[int, int]], frozenset[str]]
"""What a part of a launch's typing read (`Reads.recorded`): top-level statements' spans, names."""


class TypingBudgetExceeded(Exception):
    """A launch's typing evaluated more than `_BUDGET` expressions: its types are not known.
    `reads`: what it had read by then (`launch_types_read`), which the editor keeps the answer by
    while no launch of the file is typed again (analysis/launch_memo.py)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: Reads | None = None


_Assigned = tuple[int, int, Node, "Node | None", Node]
"""One assignment of a name: the statement's start and end bytes, the statement, and the target
pattern and value `_last_assignment` answers with (a pattern only when its elements cannot be
matched with the value's)."""


def triton_type(dtype: str) -> str:
    """A torch dtype name (`float16`, `torch.int32`) as Triton writes it in a signature (`fp16`,
    `i32`); unknown names come back unchanged."""
    name = dtype.rsplit(".", 1)[-1]
    return _TRITON.get(TORCH_DTYPES.get(name, name), name)


@dataclass(frozen=True)
class _Value:
    """What an expression evaluates to, as far as dtypes go."""

    kind: str  # "tensor", "int", "float", "bool", "none", "dtype"
    dtype: str | None = None  # tensors and dtype values: the torch dtype name
    node: Node | None = None  # the expression that decided the dtype (for the provenance)
    value: int | None = None  # ints known exactly (literals)
    via: str = ""  # how the launch reached it: "", "get_inputs", "harness inputs", a caller


@dataclass(frozen=True)
class ArgType:
    """One runtime argument's signature type and where it came from."""

    type: str  # "*fp16", "i32", "fp32", "i1", or "constexpr" for a literal None
    source: str  # in words: "torch.empty(..., dtype=torch.int32) at line 31"
    assumed: bool = False


def _shorten(value: str, limit: int = 70) -> str:
    value = " ".join(value.split())
    return value if len(value) <= limit else value[: limit - 3] + "..."


class LaunchTyper:
    """Types the runtime arguments of a file's launch sites (one per parsed file: it caches the
    file's calls and scopes)."""

    def __init__(self, document: Document, index: ModuleIndex) -> None:
        self.document = document
        # What it reads of the index, not the index: the rules keep a typer on its index, and a
        # typer pointing back would make a cycle that holds the index and its whole tree (a
        # server's every edit in a host function) until the cyclic collector's rare full pass.
        self.imports = index.imports
        self.functions = index.functions
        self.globals = index.globals
        self.kernels = index.kernels
        self._spans = index.spans  # moved across edits (rebase.py), unlike relocated kernels' nodes
        self._calls: dict[str, list[Node]] | None = None
        self._scope_assignments: dict[tuple[int, int], dict[str, list[_Assigned]]] = {}
        self.default_float = self._default_float()
        self._reads: Reads | None = None
        self._searches = 0  # callers found by searching the text, before the table is worth building
        # A parameter's value from its callers, by (function, parameter index), and what a
        # function returns, by function, with what finding them read: the same wrapper's
        # parameters are asked for by every launch and every caller chain through it, and
        # walking the chains again was most of a check of real code (`_memoized`).
        self._parameters: dict[tuple[int, int], tuple[_Value | None, _Recorded | None]] = {}
        self._returns: dict[int, tuple[_Value | None, _Recorded | None]] = {}
        self._scope_parameters: dict[int, dict[str, tuple[int, Node | None, str, str]]] = {}
        self._cuts = 0  # answers cut short by the depth limit or a cycle: those depend on the path
        self._budget = _BUDGET  # evaluations left to this launch (`launch_types`)

    # -- the public question ---------------------------------------------------------------

    def launch_types_read(self, launch: LaunchSite, names: list[str], positions: dict[str, int]
                          ) -> tuple[dict[str, ArgType], Reads]:
        """`launch_types`, and what the answer read outside the launch's own statement: the
        file's top-level statements it looked into and the names it looked up (a module
        constant, a function's returns, a function's callers), which may be defined elsewhere
        or later. An edit that touches none of them leaves the answer as it was
        (`analysis/launch_memo.py`)."""
        reads = self._reads = Reads(top_statement(launch.node))
        try:
            return self.launch_types(launch, names, positions), reads
        except TypingBudgetExceeded as gave_up:
            gave_up.reads = reads
            raise
        finally:
            self._reads = None

    def launch_types(self, launch: LaunchSite, names: list[str], positions: dict[str, int]) -> dict[str, ArgType]:
        """The types of the named runtime parameters at `launch` (positions: the parameter's
        index among all of the kernel's parameters). Unknown parameters are left out."""
        out: dict[str, ArgType] = {}
        self._budget = _BUDGET
        for name in names:
            arg: Node | None = None
            index = positions[name]
            if index < len(launch.positional):
                arg = launch.positional[index]
            elif name in launch.keywords:
                arg = launch.keywords[name][1]
            if arg is None or arg.type in ("list_splat", "dictionary_splat"):
                continue
            value = self.value(arg, 0, frozenset())
            typed = _arg_type(value)
            if typed is not None:
                out[name] = typed
        return out

    # -- evaluation ----------------------------------------------------------------------

    def value(self, node: Node | None, depth: int, seen: frozenset[int]) -> _Value | None:
        node = unparen(node)
        if node is None:
            return None
        if depth > _MAX_DEPTH:
            self._cuts += 1
            return None
        self._budget -= 1
        if self._budget < 0:
            raise TypingBudgetExceeded
        if self._reads is not None:
            self._reads.visit(node)
        kind = node.type
        if kind == "integer":
            try:
                return _Value("int", node=node, value=int(text(node).replace("_", ""), 0))
            except ValueError:
                return _Value("int", node=node)
        if kind == "float":
            return _Value("float", node=node)
        if kind in ("true", "false"):
            return _Value("bool", node=node)
        if kind == "none":
            return _Value("none", node=node)
        if kind == "unary_operator":
            return self.value(node.child_by_field_name("argument"), depth + 1, seen)
        if kind == "identifier":
            return self._name(node, text(node), depth, seen)
        if kind == "attribute":
            return self._attribute(node, depth, seen)
        if kind == "subscript":
            base = self.value(node.child_by_field_name("value"), depth + 1, seen)
            if base is not None and base.kind == "tensor":
                return base
            if base is not None and base.kind == "shape":
                return _Value("int", node=node)
            return None
        if kind == "call":
            return self._call(node, depth, seen)
        if kind == "binary_operator":
            return self._binary(node, depth, seen)
        if kind in ("comparison_operator", "not_operator", "boolean_operator"):
            left = self.value(node.named_children[0] if node.named_children else None, depth + 1, seen)
            if left is not None and left.kind == "tensor":
                return _Value("tensor", "bool", node)
            return _Value("bool", node=node)
        if kind == "conditional_expression":
            parts = [self.value(c, depth + 1, seen) for c in node.named_children[:2]]
            if parts[0] is not None and parts[1] is not None and (parts[0].kind, parts[0].dtype) == (parts[1].kind, parts[1].dtype):
                return parts[0]
            return None
        return None

    def _binary(self, node: Node, depth: int, seen: frozenset[int]) -> _Value | None:
        operator = node.child_by_field_name("operator")
        op = operator.type if operator is not None else ""
        left = self.value(node.child_by_field_name("left"), depth + 1, seen)
        right = self.value(node.child_by_field_name("right"), depth + 1, seen)
        if left is None or right is None:
            # `x + 1` with x a tensor of a known dtype: the scalar's kind matters, not its value.
            return None
        if left.kind == "tensor" or right.kind == "tensor":
            tensors = [v for v in (left, right) if v.kind == "tensor"]
            scalars = [v for v in (left, right) if v.kind != "tensor"]
            dtypes = [v.dtype for v in tensors]
            if any(d is None for d in dtypes):
                return None
            if len(tensors) == 2:
                a, b = dtypes
                if a == b:
                    dtype = a
                elif a in _FLOAT_RANK and b in _FLOAT_RANK:
                    dtype = a if _FLOAT_RANK[a] >= _FLOAT_RANK[b] else b  # type: ignore[index]
                elif a in _FLOAT_RANK:
                    dtype = a
                elif b in _FLOAT_RANK:
                    dtype = b
                else:
                    return None
            else:
                dtype = dtypes[0]
                scalar = scalars[0].kind
                if dtype not in _FLOAT_RANK and (scalar == "float" or op == "/"):
                    dtype = self.default_float
            if op == "/" and dtype not in _FLOAT_RANK:
                dtype = self.default_float
            return _Value("tensor", dtype, node, via=tensors[0].via)
        kinds = {left.kind, right.kind}
        if kinds <= {"int", "bool"}:
            return _Value("float", node=node) if op == "/" else _Value("int", node=node)
        if kinds <= {"int", "float", "bool"}:
            return _Value("float", node=node)
        return None

    def _attribute(self, node: Node, depth: int, seen: frozenset[int]) -> _Value | None:
        qualified = self.imports.qualify(node) or ""
        if qualified.startswith("torch."):
            name = qualified[len("torch."):]
            if name in TORCH_DTYPES:
                return _Value("dtype", TORCH_DTYPES[name], node)
        obj = node.child_by_field_name("object")
        attr = text(node.child_by_field_name("attribute"))
        if obj is not None and obj.type == "identifier" and text(obj) == "self":
            return self._self_attribute(node, attr, depth, seen)
        if attr == "dtype":
            base = self.value(obj, depth + 1, seen)
            if base is not None and base.kind == "tensor" and base.dtype is not None:
                return _Value("dtype", base.dtype, base.node, via=base.via)
            return None
        if attr == "shape":
            return _Value("shape", node=node)
        if attr in ("ndim", "itemsize"):
            return _Value("int", node=node)
        if attr in ("T", "mT", "H", "data", "real"):
            base = self.value(obj, depth + 1, seen)
            return base if base is not None and base.kind == "tensor" else None
        if attr in ("weight", "bias") and obj is not None:
            layer = self._layer(obj, depth, seen)
            if layer is not None:
                return layer
        return None

    def _layer(self, layer: Node, depth: int, seen: frozenset[int]) -> _Value | None:
        """`self.linear` made by `nn.Linear(...)`: its parameters are float32 (or its dtype=)."""
        node = unparen(layer)
        if node is None or node.type != "attribute":
            return None
        obj = node.child_by_field_name("object")
        if obj is None or text(obj) != "self":
            return None
        for assigned, _ in self._self_assignments(node, text(node.child_by_field_name("attribute"))):
            value = unparen(assigned)
            if value is None or value.type != "call":
                continue
            qualified = self.imports.qualify(value.child_by_field_name("function")) or ""
            if qualified.rsplit(".", 1)[-1] in _LAYERS_WITH_WEIGHTS and qualified.startswith("torch.nn"):
                _, keywords = call_args(value)
                if "dtype" in keywords:
                    given = self.value(keywords["dtype"][1], depth + 1, seen)
                    if given is not None and given.kind == "dtype":
                        return _Value("tensor", given.dtype, value)
                    return None
                return _Value("tensor", self.default_float, value)
        return None

    def _self_assignments(self, node: Node, attr: str) -> Iterator[tuple[Node, Node | None]]:
        """Values assigned to `self.<attr>` in the class holding `node` (and `register_buffer`/
        `register_parameter` of that name), with the method they are in."""
        cls = enclosing(node, "class_definition")
        if cls is None:
            return
        for current in _descendants(cls, scopes=True):
            if current.type == "assignment":
                left = current.child_by_field_name("left")
                right = current.child_by_field_name("right")
                if left is not None and right is not None and left.type == "attribute" and \
                        text(left.child_by_field_name("object")) == "self" and \
                        text(left.child_by_field_name("attribute")) == attr:
                    yield right, enclosing(current, "function_definition")
            elif current.type == "call":
                function = current.child_by_field_name("function")
                if function is not None and function.type == "attribute" and \
                        text(function.child_by_field_name("attribute")) in ("register_buffer", "register_parameter"):
                    positional, _ = call_args(current)
                    if len(positional) >= 2 and string_value(positional[0]) == attr:
                        yield positional[1], enclosing(current, "function_definition")

    def _self_attribute(self, node: Node, attr: str, depth: int, seen: frozenset[int]) -> _Value | None:
        for value, _ in self._self_assignments(node, attr):
            if value.id in seen:
                self._cuts += 1
                continue
            found = self.value(value, depth + 1, seen | {value.id})
            if found is not None:
                return found
        return None

    def _call(self, node: Node, depth: int, seen: frozenset[int]) -> _Value | None:
        function = node.child_by_field_name("function")
        positional, keywords = call_args(node)
        qualified = self.imports.qualify(function) or ""
        explicit = self._dtype_keyword(keywords, depth, seen)
        if qualified.startswith(("torch.", "torch.nn.functional.")) and function is not None and \
                self._is_module_path(function):
            name = qualified.rsplit(".", 1)[-1]
            if name in ("Parameter", "Buffer"):
                return self.value(positional[0], depth + 1, seen) if positional else None
            if explicit is not None:
                return _Value("tensor", explicit.dtype, node)
            if "dtype" in keywords:
                return None  # a dtype we cannot read
            if name in _FLOAT_FACTORIES:
                return _Value("tensor", self.default_float, node)
            if name in _LIKE_FACTORIES:
                like = self.value(positional[0], depth + 1, seen) if positional else None
                return like if like is not None and like.kind == "tensor" else _Value("tensor", None, node)
            if name == "full" and len(positional) >= 2:
                fill = self.value(positional[1], depth + 1, seen)
                kinds = {"float": self.default_float, "int": "int64", "bool": "bool"}
                return _Value("tensor", kinds[fill.kind], node) if fill is not None and fill.kind in kinds else None
            if name == "arange":
                values = [self.value(p, depth + 1, seen) for p in positional]
                if values and all(v is not None and v.kind == "int" for v in values):
                    return _Value("tensor", "int64", node)
                if any(v is not None and v.kind == "float" for v in values):
                    return _Value("tensor", self.default_float, node)
                return None
            if name in _INT64_RESULT:
                return _Value("tensor", "int64", node)
            if name in _BOOL_RESULT:
                return _Value("tensor", "bool", node)
            if name in _SAME_DTYPE_FUNCTIONS:
                # `torch.where(cond, a, b)` has a's dtype; the others their first tensor's.
                first = positional[1 if name == "where" else 0] if len(positional) > (name == "where") else None
                if first is not None and first.type in ("list", "tuple") and first.named_children:
                    first = first.named_children[0]
                value = self.value(first, depth + 1, seen)
                return value if value is not None and value.kind == "tensor" else None
            return None
        if qualified in _INT_FUNCTIONS or qualified.rsplit(".", 1)[-1] in ("cdiv", "next_power_of_2"):
            return _Value("int", node=node)
        if qualified == "float":
            return _Value("float", node=node)
        if qualified == "bool":
            return _Value("bool", node=node)
        if qualified in ("max", "min", "abs") and positional:
            value = self.value(positional[0], depth + 1, seen)
            return value if value is not None and value.kind in ("int", "float") else None
        if function is not None and function.type == "attribute":
            return self._method(function, positional, keywords, explicit, node, depth, seen)
        if function is not None and function.type == "identifier":
            return self._returned(text(function), node, depth, seen)
        return None

    def _is_module_path(self, function: Node) -> bool:
        """`torch.empty` rather than a method call on a local that happens to be named torch."""
        head = function
        while head.type == "attribute":
            obj = head.child_by_field_name("object")
            if obj is None:
                return False
            head = obj
        return head.type == "identifier" and text(head) in self.imports.names

    def _method(self, function: Node, positional: list[Node], keywords: dict[str, tuple[Node, Node]],
                explicit: _Value | None, node: Node, depth: int, seen: frozenset[int]) -> _Value | None:
        method = text(function.child_by_field_name("attribute"))
        obj = function.child_by_field_name("object")
        if method in _CAST_METHODS and not positional:
            return _Value("tensor", _CAST_METHODS[method], node)
        if method in _INT_METHODS:
            return _Value("int", node=node)
        if method == "item":
            base = self.value(obj, depth + 1, seen)
            if base is not None and base.kind == "tensor" and base.dtype is not None:
                return _Value("float" if base.dtype in _FLOAT_RANK else "int", node=node)
            return None
        if method in ("to", "type", "view"):
            for arg in positional:
                given = self.value(arg, depth + 1, seen)
                if given is not None and given.kind == "dtype":
                    return _Value("tensor", given.dtype, node)
                if method == "to" and given is not None and given.kind == "tensor":
                    return given
            if explicit is not None:
                return _Value("tensor", explicit.dtype, node)
            if "dtype" in keywords:
                return _Value("tensor", None, node)
            return self._tensor(obj, node, depth, seen)
        if method in ("new_empty", "new_zeros", "new_ones", "new_full", "new_tensor"):
            if explicit is not None:
                return _Value("tensor", explicit.dtype, node)
            return self._tensor(obj, node, depth, seen)
        if method in _BOOL_RESULT:
            return _Value("tensor", "bool", node)
        if method in _INT64_RESULT:
            return _Value("tensor", "int64", node)
        if method in _SAME_DTYPE_METHODS:
            return self._tensor(obj, node, depth, seen)
        return None

    def _tensor(self, obj: Node | None, node: Node, depth: int, seen: frozenset[int]) -> _Value:
        """A method only tensors have, called on `obj`: `obj`'s dtype when known, else a tensor
        of unknown dtype (still a pointer argument)."""
        base = self.value(obj, depth + 1, seen)
        return base if base is not None and base.kind == "tensor" else _Value("tensor", None, node)

    def _dtype_keyword(self, keywords: dict[str, tuple[Node, Node]], depth: int, seen: frozenset[int]) -> _Value | None:
        if "dtype" not in keywords:
            return None
        given = self.value(keywords["dtype"][1], depth + 1, seen)
        return given if given is not None and given.kind == "dtype" and given.dtype is not None else None

    def _returned(self, name: str, call: Node, depth: int, seen: frozenset[int]) -> _Value | None:
        """`y = helper(x)`: what a module-level function of the file returns (its single kind
        of return value), e.g. a launcher returning the tensor it allocated."""
        if self._reads is not None:
            self._reads.name(name)
        definition = self.functions.get(name)
        if definition is None:
            return None
        if definition.id in seen:
            self._cuts += 1
            return None
        return self._memoized(self._returns, definition.id, lambda: self._returned_walk(definition, depth, seen))

    def _returned_walk(self, outer: Node, depth: int, seen: frozenset[int]) -> _Value | None:
        definition = outer.child_by_field_name("definition") if outer.type == "decorated_definition" else outer
        if definition is None or definition.type != "function_definition":
            return None
        found: _Value | None = None
        for current in _descendants(definition):
            if current.type == "return_statement" and current.named_children:
                value = self.value(current.named_children[0], depth + 1, seen | {definition.id})
                if value is None:
                    return None
                if found is not None and (found.kind, found.dtype) != (value.kind, value.dtype):
                    return None
                found = value
        return found

    # -- names ---------------------------------------------------------------------------

    def _name(self, node: Node, name: str, depth: int, seen: frozenset[int]) -> _Value | None:
        scope = enclosing(node, "function_definition")
        if scope is not None:
            assigned = self._last_assignment(scope, name, node.start_byte)
            if assigned is not None:
                target, value = assigned
                if value.id in seen:
                    self._cuts += 1
                    return None
                if target is not None:  # `M, K = a.shape`
                    return self._unpacked(value)
                return self.value(value, depth + 1, seen | {value.id})
            parameters = self._scope_parameters.get(scope.id)
            if parameters is None:
                parameters = self._scope_parameters[scope.id] = _parameters(scope)
            parameter = parameters.get(name)
            if parameter is not None:
                return self._parameter(scope, parameter, depth, seen)
        if self._reads is not None:
            self._reads.name(name)
        constant = self.globals.get(name)
        if constant is not None and constant.type != "assignment":
            if constant.id not in seen:
                return self.value(constant, depth + 1, seen | {constant.id})
            self._cuts += 1
        return None

    def _unpacked(self, assigned: Node) -> _Value | None:
        """One name of `a, b = value` when the elements cannot be told apart: sizes from a
        shape (`M, K = a.shape`, `a.size()`) are integers; anything else is unknown."""
        value = unparen(assigned)
        if value is None:
            return None
        if value.type == "attribute" and text(value.child_by_field_name("attribute")) == "shape":
            return _Value("int", node=value)
        if value.type == "call":
            function = value.child_by_field_name("function")
            if function is not None and function.type == "attribute" and \
                    text(function.child_by_field_name("attribute")) in ("size", "stride"):
                return _Value("int", node=value)
        return None

    def _assigned_names(self, scope: Node) -> dict[str, list[_Assigned]]:
        """What `scope`'s body assigns (not in nested scopes), by name, in order; read once per
        scope, since a launch's arguments look up several names in one function."""
        key = (scope.start_byte, scope.end_byte)
        found = self._scope_assignments.get(key)
        if found is not None:
            return found
        found = {}
        body = scope.child_by_field_name("body")
        for current in QueryCursor(_assignment_query()).captures(body).get("assignment", []) if body is not None else []:
            if _nested_scope(current, scope):
                continue
            left, right = current.child_by_field_name("left"), current.child_by_field_name("right")
            if left is None or right is None:
                continue
            start, end = current.start_byte, current.end_byte
            if left.type == "identifier":
                found.setdefault(text(left), []).append((start, end, current, None, right))
            elif left.type in ("pattern_list", "tuple_pattern", "list_pattern"):
                names = [c for c in left.named_children if c.type != "comment"]
                inner = unparen(right)
                elements = [c for c in inner.named_children if c.type != "comment"] \
                    if inner is not None and inner.type in ("tuple", "list", "expression_list") else []
                seen: set[str] = set()
                for position, target in enumerate(names):
                    name = text(target) if target.type == "identifier" else ""
                    if not name or name in seen:
                        continue  # a name twice in one pattern: its first place, as Python reads it
                    seen.add(name)
                    found.setdefault(name, []).append(
                        (start, end, current, None, elements[position]) if len(elements) == len(names)
                        else (start, end, current, left, right))
        self._scope_assignments[key] = found
        return found

    def _last_assignment(self, scope: Node, name: str, before: int) -> tuple[Node | None, Node] | None:
        """The last `name = value` in `scope` before byte `before`: (None, value), or for an
        unpacking target the (target pattern, value) when `name` is one of its names."""
        best: _Assigned | None = None
        for assigned in self._assigned_names(scope).get(name, ()):
            if assigned[1] <= before and (best is None or assigned[0] > best[0]):
                best = assigned
        if best is None or _in_branch(best[2], before):
            return None  # assigned on one branch of an if the use is not in: which one ran is not known
        return best[3], best[4]

    def _parameter(self, scope: Node, parameter: tuple[int, Node | None, str, str], depth: int,
                   seen: frozenset[int]) -> _Value | None:
        """A function parameter: from the function's callers in this file, `get_inputs()` for
        `forward`, `F_inputs()` for a harness launcher `F`, else its default.

        The path holds the parameter itself (as a number no node id is: those are not negative),
        so that working it out again inside its own walk (`def f(x): f(x)`) is the cycle that is
        cut, and not the call the path came from: `y = alloc(x)` in each of twenty launchers
        was cut at its own call, so no answer was kept and each launch walked all of `alloc`'s
        callers again, and theirs (cubic in the launchers; `tests/analysis/test_launch_typing_cost.py`)."""
        marker = -1 - (scope.id << 16 | parameter[0])
        if marker in seen:
            self._cuts += 1
            return None
        return self._memoized(self._parameters, (scope.id, parameter[0]),
                              lambda: self._parameter_walk(scope, parameter, depth, seen | {marker}))

    def _memoized(self, table: dict[Any, tuple[_Value | None, _Recorded | None]], key: Any,
                  compute: Callable[[], _Value | None]) -> _Value | None:
        """`compute()`, once per key and file where no cut-off (a cycle, the depth limit) shaped
        the answer, since such an answer depends on the path. An answer taken from there tells
        the launch's `Reads` what finding it read."""
        known = table.get(key)
        if known is not None and (self._reads is None or known[1] is not None):  # found without reads: found again
            if self._reads is not None and known[1] is not None:
                self._reads.replay(*known[1])
            return known[0]
        cuts = self._cuts
        if self._reads is not None:
            self._reads.record()
        recorded: _Recorded | None = None
        try:
            value = compute()
        finally:
            if self._reads is not None:
                recorded = self._reads.recorded()
        if self._cuts == cuts:
            table[key] = (value, recorded)
        return value

    def _parameter_walk(self, scope: Node, parameter: tuple[int, Node | None, str, str], depth: int,
                        seen: frozenset[int]) -> _Value | None:
        index, default, pname, annotation = parameter
        name = text(scope.child_by_field_name("name"))
        cls = enclosing(scope, "class_definition")
        offset = 1 if cls is not None else 0  # `self`
        if cls is not None and name == "forward":
            inputs = self._returned_elements("get_inputs")
            if inputs is not None and 0 <= index - offset < len(inputs):
                found = self.value(inputs[index - offset], depth + 1, seen)
                if found is not None:
                    return _via(found, "get_inputs")
        if cls is None:
            inputs = self._returned_elements(f"{name}_inputs")
            if inputs is not None and 0 <= index < len(inputs):
                found = self.value(inputs[index], depth + 1, seen)
                if found is not None:
                    return _via(found, f"{name}_inputs")
        # Callers in this file: `name(...)` for a function, `self.name(...)` for a method.
        position = index - offset
        agreed: _Value | None = None
        for call in self._callers(name, cls):
            if self._reads is not None:  # a caller's statement, with or without the argument
                self._reads.visit(call)
            positional, keywords = call_args(call)
            arg = positional[position] if 0 <= position < len(positional) else (
                keywords[pname][1] if pname in keywords else None)
            if arg is None:
                continue
            found = self.value(arg, depth + 1, seen | {call.id})
            if found is None:
                continue
            if agreed is not None and (agreed.kind, agreed.dtype) != (found.kind, found.dtype):
                return None  # callers disagree (`make_tensor(..., torch.int32)` and `(..., torch.float16)`)
            agreed = agreed or found
        if agreed is not None:
            return agreed
        if default is not None:
            return self.value(default, depth + 1, seen)
        if annotation.rsplit(".", 1)[-1] == "Tensor":
            return _Value("tensor", None, scope.child_by_field_name("parameters"))
        return None

    def _returned_elements(self, function_name: str) -> list[Node] | None:
        if self._reads is not None:
            self._reads.name(function_name)
        definition = self.functions.get(function_name)
        if definition is not None and definition.type == "decorated_definition":
            definition = definition.child_by_field_name("definition")
        if definition is None or definition.type != "function_definition" or \
                enclosing(definition, "class_definition") is not None:
            return None
        for current in _descendants(definition):
            if current.type == "return_statement" and current.named_children:
                value = unparen(current.named_children[0])
                if value is None:
                    return None
                if value.type in ("list", "tuple", "expression_list"):
                    return [c for c in value.named_children if c.type != "comment"]
                return [value]
        return None

    def _callers(self, name: str, cls: Node | None) -> list[Node]:
        """The calls of function `name` (method `name` of `cls`) in the file's host code. Calls
        inside kernels are not callers: a kernel cannot call a host function (TS401 says so),
        and leaving them out spares walking kernels' bodies, most of a Triton file."""
        if self._reads is not None:
            self._reads.name(name)
        if self._calls is None and self._searches < _SEARCHES_BEFORE_TABLE:
            # A few lookups (an edit re-types a launch or two) search the text for the name: a
            # few milliseconds, where the table of every call walks the host code (40 ms on
            # 55,000 lines); a whole file's check builds the table once.
            self._searches += 1
            return self._callers_searched(name, cls)
        if self._calls is None:
            calls: dict[str, list[Node]] = {}
            cursor = QueryCursor(_calls_query())
            for start, end in self._host_ranges():  # C walks of the host code only
                cursor.set_byte_range(start, end)
                for _, captures in cursor.matches(self.document.root):
                    call = captures["call"][0]
                    if "function" in captures:
                        calls.setdefault(text(captures["function"][0]), []).append(call)
                    elif "method" in captures:
                        calls.setdefault("." + text(captures["method"][0]), []).append(call)
            for found in calls.values():
                found.sort(key=lambda node: node.start_byte)
            self._calls = calls
        if cls is None:
            return list(self._calls.get(name, []))
        return [c for c in self._calls.get("." + name, []) if _in_class(c, cls)]

    def _host_ranges(self) -> list[tuple[int, int]]:
        """The file's byte ranges outside every kernel, in order."""
        ranges, at = [], 0
        for start, end in self._kernel_spans:
            if start > at:
                ranges.append((at, start))
            at = max(at, end)
        if at < len(self.document.source):
            ranges.append((at, len(self.document.source)))
        return ranges

    @functools.cached_property
    def _kernel_spans(self) -> list[tuple[int, int]]:
        # From the index's spans where it has them: a carried index's kernels would each be
        # read again from the tree to tell where they are (30 ms on 55,000 lines, every edit).
        if self._spans is not None:
            return sorted((start, end) for start, end, _ in self._spans)
        return sorted((k.outer.start_byte, k.outer.end_byte) for k in self.kernels)

    def _in_kernel(self, offset: int) -> bool:
        spans = self._kernel_spans
        at = bisect.bisect_right(spans, (offset, len(self.document.source) + 1)) - 1
        return at >= 0 and spans[at][0] <= offset < spans[at][1]

    def _callers_searched(self, name: str, cls: Node | None) -> list[Node]:
        """`_callers` from the text: each `name(` (`.name(` for a method) outside the kernels
        that the tree confirms is a call whose function is that identifier (or that attribute)."""
        root = self.document.root
        source = self.document.source
        out: list[Node] = []
        for match in re.finditer(re.escape(name.encode()) + rb"\s*\(", source):
            start = match.start()
            before = source[start - 1:start]
            if before and (before.isalnum() or before == b"_" or before[0] >= 0x80):
                continue  # part of a longer name
            if self._in_kernel(start):
                continue
            ident = root.descendant_for_byte_range(start, start + len(name.encode()))
            if ident is None or ident.type != "identifier" or ident.parent is None:
                continue
            parent = ident.parent
            if cls is None and parent.type == "call" and parent.child_by_field_name("function") == ident:
                out.append(parent)
            elif cls is not None and parent.type == "attribute" and parent.child_by_field_name("attribute") == ident \
                    and parent.parent is not None and parent.parent.type == "call" \
                    and parent.parent.child_by_field_name("function") == parent and _in_class(parent.parent, cls):
                out.append(parent.parent)
        return out

    def _default_float(self) -> str:
        """torch's default float dtype for this file: float32 unless it calls
        `torch.set_default_dtype(torch.<x>)` at module level."""
        for statement in self.document.root.named_children:
            if statement.type != "expression_statement" or not statement.named_children:
                continue
            call = statement.named_children[0]
            if call.type == "call" and (self.imports.qualify(call.child_by_field_name("function")) or "") \
                    == "torch.set_default_dtype":
                positional, _ = call_args(call)
                qualified = self.imports.qualify(positional[0]) if positional else None
                if qualified and qualified.startswith("torch.") and qualified[6:] in TORCH_DTYPES:
                    return TORCH_DTYPES[qualified[6:]]
        return "float32"


_SEARCHES_BEFORE_TABLE = 16
"""Caller lookups answered by searching the text before the typer builds the table of calls."""


def _in_class(call: Node, cls: Node) -> bool:
    owner = enclosing(call, "class_definition")
    return owner is not None and owner.id == cls.id


class Reads:
    """What one launch's typing read outside its own top-level statement (`launch_types_read`)."""

    def __init__(self, own: Node) -> None:
        self.own = own.start_byte  # the launch's statement
        self._own_end = own.end_byte
        self.statements: set[int] = {own.start_byte}  # start bytes of the top-level statements read
        self.names: set[str] = set()
        # The statements found so far, as sorted (start, end) bytes: the typer reads a few
        # statements' nodes over and over, and walking up to the module from each of them was the
        # largest own time in a profile of a check of real code.
        self._found: list[tuple[int, int]] = []
        self._frames: list[tuple[set[tuple[int, int]], set[str]]] = []

    def visit(self, node: Node) -> None:
        start = node.start_byte
        if self.own <= start < self._own_end:
            if self._frames:
                self._frames[-1][0].add((self.own, self._own_end))
            return
        found = self._found
        at = bisect.bisect_right(found, (start, 1 << 62)) - 1
        if at >= 0 and start < found[at][1]:
            if self._frames:
                self._frames[-1][0].add(found[at])
            return
        statement = top_statement(node)
        self._add((statement.start_byte, statement.end_byte))

    def name(self, name: str) -> None:
        self.names.add(name)
        if self._frames:
            self._frames[-1][1].add(name)

    def _add(self, span: tuple[int, int]) -> None:
        if self._frames:
            self._frames[-1][0].add(span)
        if span[0] == self.own:
            return
        found = self._found
        at = bisect.bisect_left(found, span)
        if at < len(found) and found[at] == span:
            return
        found.insert(at, span)
        self.statements.add(span[0])

    # What a part of the typing read, to be told again when its answer is reused for another
    # launch (`LaunchTyper._parameter`): every statement it touched (this launch's own included,
    # which another launch has not read) and every name, in frames that nest as the parts do.
    def record(self) -> None:
        self._frames.append((set(), set()))

    def recorded(self) -> _Recorded:
        statements, names = self._frames.pop()
        if self._frames:
            self._frames[-1][0].update(statements)
            self._frames[-1][1].update(names)
        return frozenset(statements), frozenset(names)

    def replay(self, statements: frozenset[tuple[int, int]], names: frozenset[str]) -> None:
        for span in statements:
            self._add(span)
        for name in names:
            self.name(name)


def _via(value: _Value, via: str) -> _Value:
    return value if value.via else _Value(value.kind, value.dtype, value.node, value.value, via)


def _arg_type(value: _Value | None) -> ArgType | None:
    if value is None:
        return None
    where = ""
    if value.node is not None:
        where = f"`{_shorten(text(value.node))}` at line {value.node.start_point[0] + 1}"
        if value.via:
            where += f" (through {value.via})"
    if value.kind == "tensor":
        return ArgType("*" + triton_type(value.dtype) if value.dtype is not None else "*", where)
    if value.kind == "float":
        return ArgType("fp32", where)
    if value.kind == "bool":
        return ArgType("i1", where)
    if value.kind == "none":
        return ArgType("constexpr", where)
    if value.kind == "int" and value.value is not None:
        return ArgType("i64" if not -(2**31) <= value.value < 2**31 else "i32", where)
    # An int of unknown size (a shape, numel()): Triton picks i32 or i64 from the value.
    return None


_CALLS_SOURCE = """
[(call function: (identifier) @function)
 (call function: (attribute attribute: (identifier) @method))] @call
"""


@functools.cache
def _assignment_query() -> Query:
    return Query(PY_LANGUAGE, "(assignment) @assignment")


def _nested_scope(node: Node, scope: Node) -> bool:
    """Whether `node` is inside a function, class or lambda nested in `scope`."""
    current = node.parent
    while current is not None and current != scope:
        if current.type in _SCOPES:
            return True
        current = current.parent
    return False


@functools.cache
def _calls_query() -> Query:
    """Compiled on first use (compiling a query costs tens of milliseconds of server start)."""
    return Query(PY_LANGUAGE, _CALLS_SOURCE)


def _in_branch(assignment: Node, use: int) -> bool:
    """Whether `assignment` sits in a branch of an if (or a loop body) that does not hold the
    byte `use`: after that statement the value may come from another path."""
    current = assignment.parent
    while current is not None and current.type not in ("function_definition", "module"):
        if current.type in ("if_statement", "elif_clause", "else_clause", "for_statement", "while_statement",
                            "try_statement", "except_clause") and not current.start_byte <= use < current.end_byte:
            return True
        current = current.parent
    return False


def _descendants(node: Node, *, scopes: bool = False) -> Iterator[Node]:
    """`node` and the named nodes under it; nested functions, classes and lambdas are skipped
    unless `scopes` (their assignments bind other names)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is not node and not scopes and current.type in _SCOPES:
            continue
        stack.extend(reversed(current.named_children))


def _parameters(scope: Node) -> dict[str, tuple[int, Node | None, str, str]]:
    """Each of `scope`'s parameters by name: (index, default value, name, annotation)."""
    out: dict[str, tuple[int, Node | None, str, str]] = {}
    params = scope.child_by_field_name("parameters")
    if params is None:
        return out
    index = 0
    for child in params.named_children:
        if child.type == "comment":
            continue
        annotation = text(child.child_by_field_name("type")) if child.type.startswith("typed") else ""
        if child.type == "identifier":
            pname, default = text(child), None
        elif child.type in ("default_parameter", "typed_default_parameter"):
            pname, default = text(child.child_by_field_name("name")), child.child_by_field_name("value")
        elif child.type == "typed_parameter":
            ident = next((c for c in child.named_children if c.type == "identifier"), None)
            pname, default = text(ident), None
        else:  # *args, **kwargs, the bare `*` and `/`
            index += 1
            continue
        out.setdefault(pname, (index, default, pname, annotation))
        index += 1
    return out
