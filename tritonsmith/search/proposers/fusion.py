"""Fusing a kernel into the one launched before it (a regenerate transformation).

A launcher that runs `producer[grid](x, tmp, n, BLOCK_SIZE=16)` and then
`consumer[grid](tmp, out, n, BLOCK_SIZE=16)` writes `tmp` to memory only for the next kernel to
read it back. The fused kernel computes the producer's value and hands it to the consumer's code
in registers: one launch, and one round trip through memory fewer. This is the fusion a kernel
engineer does first, and the one the starting points of `bench/problems` leave undone.

Preconditions, each a reason the rewrite could change what the program computes:

- the two launches are in the same block of one function, with the same grid, and nothing
  between them reads the temporary or reassigns a name the first launch reads;
- the temporary is a local the launcher allocates (`torch.empty_like(...)`), passed once to
  each launch (the producer's output, the consumer's input) and not used after the second;
- the consumer's output is a tensor the launcher allocates, not one the producer reads (fused,
  some programs would write it while others still read it);
- both kernels are flat and elementwise: straight-line assignments over one program axis,
  `tl.*` calls from an elementwise list only (no reductions, dots, atomics, scans, helpers,
  subscripts or control flow), so lane i of the consumer reads only what lane i of the producer
  wrote;
- the producer ends with its only store, `tl.store(out + OFFS, VALUE, mask=MASK)`, and the
  consumer reads the temporary once, `tl.load(tmp + OFFS, mask=MASK, ...)`, with the same
  offsets and mask once the consumer's names are mapped onto the producer's (parameters bound to
  the same launch argument are shared; the same definitions, `pid`, `offsets`, `mask`, are
  merged; other clashing names get a suffix).

Masked-off lanes: the consumer used to read `other=` there and now reads the producer's value;
either way its own store, under the same mask, drops those lanes.

**Epilogues** (`_fuse_epilogue`): a flat elementwise consumer after a producer of any shape (a
tiled matmul writing `y`, then bias and ReLU over `y.numel()` elements) runs on the producer's
own lanes, after everything the producer computes: its `offsets` become the memory offsets the
producer stored the temporary at (`offs_m[:, None] * stride_om + offs_n[None, :] * stride_on`),
its `mask` the producer's store mask, its load of the temporary the stored value (`acc`). This
holds when the consumer reads lanes only through `offsets` and `mask` (not its program id or
block size), covers the whole temporary (its element count is `tmp.numel()`, which a correct
producer writes entirely), and the statements between the launches read only the temporary's
size, strides or type. The fused kernel launches on the producer's grid.

The old kernels stay in the file (another module may import them); the launcher launches the
fused one, and the temporary's allocation goes when nothing else uses it. Text only: nothing
here imports torch or triton, and the verifier, not this module, decides whether the result is
right and faster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from ...analysis import Document, index_module
from ...analysis.index import Kernel, LaunchSite, ModuleIndex
from ...analysis.syntax import enclosing, line_span, text, walk

__all__ = ["FlatBody", "flat_body", "flat_preamble", "fuse_elementwise"]

# `tl.*` functions that act lane by lane (plus the two that build a program's offsets).
ELEMENTWISE = frozenset({
    "program_id", "arange", "load", "store", "where", "maximum", "minimum", "clamp", "abs", "exp",
    "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sigmoid", "erf", "cos", "sin", "fma",
    "floor", "ceil", "fdiv", "div_rn", "cdiv", "full", "zeros", "zeros_like", "full_like",
    "cast", "multiple_of", "max_contiguous", "umulhi",
})
# Methods a value may call: conversions only.
METHODS = frozenset({"to"})


@dataclass
class FlatBody:
    """A flat kernel's statements (docstring and comments left out)."""

    kernel: Kernel
    statements: list[Node]
    indent: str


def fuse_elementwise(source: str, kernel: str | None = None) -> str | None:
    """`source` with the first fusable pair of consecutive launches fused (a pair launching
    `kernel` first), or None when no pair meets the preconditions."""
    document = Document(source)
    index = index_module(document.root)
    data = document.source
    pairs = _consecutive_launches(index)
    pairs.sort(key=lambda pair: kernel not in (pair[0][0].name, pair[1][0].name))
    for (producer, first), (consumer, second) in pairs:
        fused = _fuse(data, index, producer, first, consumer, second) or \
            _fuse_epilogue(data, index, producer, first, consumer, second)
        if fused is not None:
            return fused
    return None


def _consecutive_launches(index: ModuleIndex) -> list[tuple[tuple[Kernel, LaunchSite], tuple[Kernel, LaunchSite]]]:
    """Pairs of launch statements, in file order, that follow each other in the same block
    (other statements may stand between them)."""
    by_block: dict[int, list[tuple[Node, Kernel, LaunchSite]]] = {}
    for kernel in index.kernels:
        for site in kernel.launches:
            statement = site.node.parent
            if statement is None or statement.type != "expression_statement" or statement.parent is None:
                continue  # `y = k[grid](...)` or a launch inside an expression: not a plain statement
            by_block.setdefault(statement.parent.id, []).append((statement, kernel, site))
    pairs = []
    for launches in by_block.values():
        launches.sort(key=lambda item: item[0].start_byte)
        for (_, k1, s1), (_, k2, s2) in zip(launches, launches[1:]):
            if k1.name != k2.name:
                pairs.append(((k1, s1), (k2, s2)))
    pairs.sort(key=lambda pair: pair[0][1].node.start_byte)
    return pairs


# -- the kernels ----------------------------------------------------------------------------

def flat_body(kernel: Kernel, index: ModuleIndex) -> FlatBody | None:
    """The kernel's statements when it is flat and elementwise (see the module docstring), else None."""
    if kernel.autotune is not None or kernel.heuristics or len(kernel.decorators) != 1 or kernel.wrapper_calls:
        return None
    body = kernel.body
    if body is None:
        return None
    statements = [s for s in body.named_children if s.type != "comment"]
    if statements and statements[0].type == "expression_statement" and statements[0].named_children[0].type == "string":
        statements = statements[1:]  # the docstring
    if not statements or any(s.type != "expression_statement" for s in statements):
        return None  # control flow, returns, nested definitions
    for node in walk(body):
        if node.type in ("subscript", "lambda", "list_comprehension", "generator_expression", "yield", "await"):
            return None
        if node.type == "call" and not _elementwise_call(node, index):
            return None
    first = statements[0]
    indent = (_root(body).text or b"")[first.start_byte - first.start_point[1]:first.start_byte]
    if indent.strip():
        return None  # a statement on the `def` line
    return FlatBody(kernel, statements, indent.decode())


def _root(node: Node) -> Node:
    while node.parent is not None:
        node = node.parent
    return node


def _elementwise_call(call: Node, index: ModuleIndex) -> bool:
    function = call.child_by_field_name("function")
    if function is None:
        return False
    if function.type == "attribute":
        attribute = function.child_by_field_name("attribute")
        if attribute is not None and text(attribute) in METHODS and index.imports.qualify(function) is None:
            return True
    qualified = index.imports.qualify(function) or ""
    if qualified.startswith("triton.language."):
        name = qualified.rsplit(".", 1)[-1]
        if name == "program_id":  # one program axis: the launches' grids are 1-D
            return text(call.child_by_field_name("arguments")).replace(" ", "") in ("(0)", "(axis=0)")
        return name in ELEMENTWISE
    if function.type == "attribute":  # `x.to(tl.float32)`: a method on a value
        attribute = function.child_by_field_name("attribute")
        return attribute is not None and text(attribute) in METHODS
    return False


def _store_parts(statement: Node, index: ModuleIndex) -> tuple[Node, str, Node, Node] | None:
    """`tl.store(PTR + OFFS, VALUE, mask=MASK)` -> (PTR, OFFS as text, VALUE, MASK); OFFS may
    be a sum (`ptr + offs_m[:, None] * s0 + offs_n[None, :] * s1`)."""
    call = statement.named_children[0] if statement.named_child_count == 1 else None
    if call is None or call.type != "call" or index.imports.qualify(call.child_by_field_name("function")) != "triton.language.store":
        return None
    positional, keywords = _args(call)
    if set(keywords) - {"value", "mask", "pointer"} or len(positional) + len(keywords) != 3:
        return None
    pointer = positional[0] if positional else keywords.get("pointer")
    value = positional[1] if len(positional) > 1 else keywords.get("value")
    mask = positional[2] if len(positional) > 2 else keywords.get("mask")
    # The leftmost term of a chain of `+` is the pointer; the rest is the offset.
    bottom = pointer
    while bottom is not None and bottom.type == "binary_operator" and text(bottom.child_by_field_name("operator")) == "+" \
            and (left := bottom.child_by_field_name("left")) is not None and left.type == "binary_operator":
        bottom = left
    parts = _pointer_plus(bottom)
    if parts is None or pointer is None or value is None or mask is None:
        return None
    data = _root(pointer).text or b""
    return parts[0], data[parts[1].start_byte:pointer.end_byte].decode().strip(), value, mask


def _writes(node: Node, index: ModuleIndex) -> int:
    """How many `tl.store` and `tl.atomic_*` calls the node holds."""
    count = 0
    for call in walk(node):
        if call.type == "call":
            name = index.imports.qualify(call.child_by_field_name("function")) or ""
            count += name == "triton.language.store" or name.startswith("triton.language.atomic_")
    return count


def _load_parts(call: Node, index: ModuleIndex) -> tuple[Node, Node, Node] | None:
    """`tl.load(PTR + OFFS, mask=MASK, other=...)` -> (PTR, OFFS, MASK)."""
    if call.type != "call" or index.imports.qualify(call.child_by_field_name("function")) != "triton.language.load":
        return None
    positional, keywords = _args(call)
    if set(keywords) - {"pointer", "mask", "other"} or len(positional) > 3:
        return None
    pointer = positional[0] if positional else keywords.get("pointer")
    mask = positional[1] if len(positional) > 1 else keywords.get("mask")
    parts = _pointer_plus(pointer)
    if parts is None or mask is None:
        return None
    return parts[0], parts[1], mask


def _args(call: Node) -> tuple[list[Node], dict[str, Node]]:
    arguments = call.child_by_field_name("arguments")
    positional: list[Node] = []
    keywords: dict[str, Node] = {}
    for child in arguments.named_children if arguments is not None else ():
        if child.type == "keyword_argument":
            name, value = child.child_by_field_name("name"), child.child_by_field_name("value")
            if name is None or value is None:
                return [], {"?": child}
            keywords[text(name)] = value
        elif child.type == "comment":
            continue
        else:
            positional.append(child)
    return positional, keywords


def _pointer_plus(node: Node | None) -> tuple[Node, Node] | None:
    """`ptr + offsets` -> (ptr, offsets), the pointer a parameter's identifier."""
    if node is None or node.type != "binary_operator" or text(node.child_by_field_name("operator")) != "+":
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or right is None or left.type != "identifier":
        return None
    return left, right


def _identifiers(node: Node) -> list[Node]:
    """The identifiers that name variables (not attribute fields or keyword names)."""
    found = []
    for n in walk(node):
        if n.type != "identifier":
            continue
        parent = n.parent
        if parent is not None and parent.type == "attribute" and parent.child_by_field_name("attribute") == n:
            continue
        if parent is not None and parent.type == "keyword_argument" and parent.child_by_field_name("name") == n:
            continue
        found.append(n)
    return found


def _assigned(statement: Node) -> str | None:
    """The one name a `name = expr` (or `name += expr`) statement assigns, else None."""
    expression = statement.named_children[0] if statement.named_child_count == 1 else None
    if expression is None or expression.type not in ("assignment", "augmented_assignment"):
        return None
    left = expression.child_by_field_name("left")
    return text(left) if left is not None and left.type == "identifier" else None


def _renamed(node: Node, names: dict[str, str], replace: dict[tuple[int, int], str] | None = None) -> str:
    """The node's text with identifiers renamed and some spans replaced."""
    data = _root(node).text or b""
    edits = {(n.start_byte, n.end_byte): names[text(n)] for n in _identifiers(node) if text(n) in names}
    for (start, end), new in (replace or {}).items():
        edits = {k: v for k, v in edits.items() if not (start <= k[0] and k[1] <= end)}
        edits[(start, end)] = new
    out = data[node.start_byte:node.end_byte]
    for (start, end), new in sorted(edits.items(), reverse=True):
        out = out[:start - node.start_byte] + new.encode() + out[end - node.start_byte:]
    return out.decode()


def _value_text(node: Node) -> str:
    return text(node).strip()


# -- the launches ---------------------------------------------------------------------------

def _bindings(kernel: Kernel, site: LaunchSite) -> dict[str, Node] | None:
    """Parameter name -> the argument node the launch binds to it, or None when the launch
    cannot be read (`*args`, an unknown keyword, too many positionals)."""
    params = [p.name for p in kernel.params]
    positional = site.positional
    if any(a.type in ("list_splat", "dictionary_splat") for a in positional) or len(positional) > len(params):
        return None
    bound = dict(zip(params, positional))
    for name, (_, value) in site.keywords.items():
        if name in bound:
            return None
        if name in params:
            bound[name] = value
        elif name not in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
            return None
    return bound


def _unique(base: str, taken: set[str]) -> str:
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def _fuse(data: bytes, index: ModuleIndex, producer: Kernel, first: LaunchSite,
          consumer: Kernel, second: LaunchSite) -> str | None:
    a, b = flat_body(producer, index), flat_body(consumer, index)
    if a is None or b is None or first.grid is None or second.grid is None:
        return None
    if text(first.grid) != text(second.grid):
        return None
    bound_a, bound_b = _bindings(producer, first), _bindings(consumer, second)
    if bound_a is None or bound_b is None:
        return None
    store = _store_parts(a.statements[-1], index)
    if store is None:
        return None
    out_ptr, store_offsets, value, store_mask = store
    if sum(1 for s in a.statements for n in _identifiers(s) if text(n) == text(out_ptr)) != 1:
        return None  # the producer reads its output too, or stores twice
    if any(_writes(s, index) for s in a.statements[:-1]):
        return None
    temporary = bound_a.get(text(out_ptr))
    if temporary is None or temporary.type != "identifier":
        return None
    tmp = text(temporary)
    in_params = [name for name, arg in bound_b.items() if arg.type == "identifier" and text(arg) == tmp]
    if len(in_params) != 1 or sum(1 for arg in bound_a.values() if tmp in _names_in(arg)) != 1:
        return None
    in_ptr = in_params[0]
    if any(tmp in _names_in(arg) for name, arg in bound_b.items() if name != in_ptr):
        return None
    launcher = _launcher_block(first)
    if launcher is None or not _temporary_is_local(launcher, tmp, first) or _used_after(launcher, tmp, second):
        return None
    if not _nothing_between(first, second, tmp):
        return None

    params_a = {p.name: p for p in producer.params}
    params_b = {p.name: p for p in consumer.params}
    # Every name the fused kernel's producer half uses (its output pointer is gone).
    taken = ({text(n) for s in a.statements for n in _identifiers(s)} | set(params_a)) - {text(out_ptr)}
    # The consumer's names onto the producer's: a parameter bound to the same argument is shared.
    names: dict[str, str] = {}
    extra_params: list[str] = []
    for p in consumer.params:
        if p.name == in_ptr:
            continue
        arg = bound_b.get(p.name)
        shared = next((q for q, arg_a in bound_a.items() if arg is not None and q != text(out_ptr)
                       and text(arg_a) == text(arg) and params_a[q].is_constexpr == p.is_constexpr), None)
        if shared is not None:
            names[p.name] = shared
        else:
            names[p.name] = _unique(p.name, taken)
            extra_params.append(p.name)
    # The consumer's statements: definitions the producer already made are merged (`pid`,
    # `offsets`, `mask`), the temporary's load becomes the value the producer computed.
    definitions = {_value_text(right): n for st in a.statements[:-1] if (n := _assigned(st)) is not None
                   and (right := _right(st)) is not None and sum(1 for t in a.statements if _assigned(t) == n) == 1}
    handoff = _unique(tmp, taken)  # the launcher's name for what now stays in registers
    expected_offsets, expected_mask = store_offsets, _value_text(store_mask)
    consumer_store = _store_parts(b.statements[-1], index)
    if consumer_store is None or any(_writes(st, index) for st in b.statements[:-1]):
        return None  # every load before the one store: merging a load cannot skip a write
    loads_of_tmp = 0
    lines: list[str] = []
    for statement in b.statements:
        loads = [n for n in walk(statement) if n.type == "call" and (parts := _load_parts(n, index)) is not None
                 and text(parts[0]) == in_ptr]
        if sum(1 for n in _identifiers(statement) if text(n) == in_ptr) != len(loads):
            return None  # the input pointer used other than in a plain load
        replace: dict[tuple[int, int], str] = {}
        for load in loads:
            parts = _load_parts(load, index)
            assert parts is not None
            if _renamed(parts[1], names) != expected_offsets or _renamed(parts[2], names) != expected_mask:
                return None  # a different element or mask than the producer stored
            replace[(load.start_byte, load.end_byte)] = handoff
            loads_of_tmp += 1
        name, right = _assigned(statement), _right(statement)
        if name is not None and right is not None and sum(1 for t in b.statements if _assigned(t) == name) == 1:
            if len(loads) == 1 and right.id == loads[0].id:
                names[name] = handoff  # `x = tl.load(tmp_ptr + offsets, ...)`: x is the value itself
                continue
            if not loads and _renamed(right, names) in definitions:
                names[name] = definitions[_renamed(right, names)]
                continue
        if name is not None and name not in names:
            names[name] = _unique(name, taken)
        lines.append(_reindent(_renamed(statement, names, replace), b, a.indent))
    if loads_of_tmp == 0 or _renamed(consumer_store[3], names) != expected_mask:
        return None  # the consumer stores lanes the producer did not compute
    if not _fresh_output(launcher, bound_b.get(text(consumer_store[0])), first, second):
        return None

    fused_name = _unique(_fused_name(producer.name, consumer.name), set(index.functions) | {k.name for k in index.kernels})
    nodes_a, nodes_b = _param_nodes(producer), _param_nodes(consumer)
    # Runtime parameters first, then constexprs: the launch passes the first by position.
    order = [(params_a[q].is_constexpr, q, text(nodes_a[q]), bound_a.get(q)) for q in params_a if q != text(out_ptr)]
    order += [(params_b[p].is_constexpr, names[p], _renamed_param(nodes_b[p], names[p]), bound_b.get(p))
              for p in extra_params]
    order.sort(key=lambda item: item[0])
    decorator = text(producer.decorators[0])
    body = [f'{a.indent}"""{producer.name} and {consumer.name} fused: {tmp} stays in registers."""']
    body += [_reindent(text(st), a, a.indent) for st in a.statements[:-1]]
    body += [f"{a.indent}{handoff} = {_value_text(value)}"]
    body += lines
    definition = f"{decorator}\ndef {fused_name}({', '.join(item[2] for item in order)}):\n" + "\n".join(body) + "\n"
    launch = _fused_launch(fused_name, first, [(item[1], item[3]) for item in order])
    return _rewrite(data, producer, consumer, first, second, launch, definition, tmp, launcher)


# -- an elementwise consumer as the epilogue of any producer (a matmul's bias and ReLU) -------

_FLAT_OFFSETS = re.compile(r"(?P<pid>\w+|tl\.program_id\((?:axis=)?0\))\*(?P<block>\w+)\+tl\.arange\(0,(?P=block)\)")
_METADATA = frozenset({"numel", "shape", "stride", "dtype", "device", "size", "dim", "element_size"})


def _tile_producer(kernel: Kernel, index: ModuleIndex) -> tuple[list[Node], str] | None:
    """A producer of any shape (loops, dots, reductions) that ends with its only store: its
    statements before the docstring's end and its body's indent."""
    if kernel.autotune is not None or kernel.heuristics or len(kernel.decorators) != 1 or kernel.wrapper_calls:
        return None
    body = kernel.body
    if body is None or _writes(body, index) != 1:
        return None
    statements = [s for s in body.named_children if s.type != "comment"]
    if statements and statements[0].type == "expression_statement" and statements[0].named_children[0].type == "string":
        statements = statements[1:]
    if len(statements) < 2 or statements[-1].type != "expression_statement":
        return None
    first = statements[0]
    indent = (_root(body).text or b"")[first.start_byte - first.start_point[1]:first.start_byte]
    return (statements, indent.decode()) if not indent.strip() else None


def flat_preamble(b: FlatBody, index: ModuleIndex) -> tuple[dict[str, Node], str, str, str] | None:
    """A flat consumer's `pid = tl.program_id(0)`, `offsets = pid * BLOCK + tl.arange(0, BLOCK)`
    and `mask = offsets < n`: (those statements by name, the offsets' and mask's names, n's
    parameter), or None."""
    found: dict[str, Node] = {}
    offsets = mask = n = None
    block = None
    for statement in b.statements:
        name, right = _assigned(statement), _right(statement)
        if name is None or right is None:
            continue
        compact = re.sub(r"\s+", "", text(right))
        if right.type == "call" and index.imports.qualify(right.child_by_field_name("function")) == "triton.language.program_id":
            found[name] = statement
        elif offsets is None and (match := _FLAT_OFFSETS.fullmatch(compact)) is not None \
                and (match["pid"] in found or match["pid"].startswith("tl.")):
            offsets, block = name, match["block"]
            found[name] = statement
        elif offsets is not None and mask is None and (match := re.fullmatch(rf"{offsets}<(\w+)", compact)):
            mask, n = name, match[1]
            found[name] = statement
    if offsets is None or mask is None or n is None or block is None:
        return None
    lane_names = {block} | {k for k, v in found.items() if k not in (offsets, mask)}
    for statement in b.statements:  # the rest reads lanes only through `offsets` and `mask`
        if statement.id not in {v.id for v in found.values()} and lane_names & _names_in(statement):
            return None
    if {param.name for param in b.kernel.params} & {n} != {n}:
        return None
    return found, offsets, mask, n


def _covers_temporary(block: Node, tmp: str, argument: Node, second: LaunchSite) -> bool:
    """The consumer's element count is the temporary's (`tmp.numel()`, or a local assigned it
    before the launch): it covers the whole temporary, which a correct producer writes."""
    if re.sub(r"\s+", "", text(argument)) == f"{tmp}.numel()":
        return True
    if argument.type != "identifier":
        return False
    assignments = [s for s in block.named_children if s.type == "expression_statement"
                   and _assigned(s) == text(argument) and s.start_byte < second.node.start_byte]
    right = _right(assignments[-1]) if assignments else None
    return right is not None and re.sub(r"\s+", "", text(right)) == f"{tmp}.numel()"


def _metadata_only(statement: Node, tmp: str) -> bool:
    """Every use of `tmp` in the statement reads its shape, size or type, not its contents."""
    for n in _identifiers(statement):
        if text(n) != tmp:
            continue
        parent = n.parent
        if parent is not None and parent.type == "attribute" and text(parent.child_by_field_name("attribute")) in _METADATA:
            continue
        call = parent.parent if parent is not None and parent.type == "argument_list" else None
        function = call.child_by_field_name("function") if call is not None else None
        if function is not None and text(function) in ("torch.empty_like", "torch.zeros_like") and parent is not None \
                and parent.named_children and parent.named_children[0].id == n.id:
            continue
        return False
    return True


def _fuse_epilogue(data: bytes, index: ModuleIndex, producer: Kernel, first: LaunchSite,
                   consumer: Kernel, second: LaunchSite) -> str | None:
    """A flat elementwise consumer run on the producer's own lanes, after its last statement:
    the consumer's `offsets` become the memory offsets the producer stored the temporary at and
    its `mask` the producer's store mask, so each lane finishes the element it computed."""
    produced, b = _tile_producer(producer, index), flat_body(consumer, index)
    if produced is None or b is None or first.grid is None:
        return None
    statements, indent = produced
    preamble = flat_preamble(b, index)
    bound_a, bound_b = _bindings(producer, first), _bindings(consumer, second)
    store = _store_parts(statements[-1], index)
    if preamble is None or bound_a is None or bound_b is None or store is None:
        return None
    lanes, offsets, mask, n = preamble
    out_ptr, store_offsets, value, store_mask = store
    body_identifiers = [t for st in statements for t in _identifiers(st)]
    if sum(1 for t in body_identifiers if text(t) == text(out_ptr)) != 1:
        return None
    temporary = bound_a.get(text(out_ptr))
    if temporary is None or temporary.type != "identifier":
        return None
    tmp = text(temporary)
    in_params = [name for name, arg in bound_b.items() if arg.type == "identifier" and text(arg) == tmp]
    # The temporary's data passed once to each; its strides or size may be passed too.
    if len(in_params) != 1 or sum(1 for arg in bound_a.values() if not _metadata_only(arg, tmp)) != 1:
        return None
    in_ptr = in_params[0]
    launcher = _launcher_block(first)
    if launcher is None or not _temporary_is_local(launcher, tmp, first) or _used_after(launcher, tmp, second):
        return None
    if n not in bound_b or not _covers_temporary(launcher, tmp, bound_b[n], second):
        return None
    reads = _names_in(first.node)
    for statement in launcher.named_children:  # between the launches: metadata of tmp only
        if first.node.end_byte <= statement.start_byte < second.node.start_byte:
            if statement.type == "comment":
                continue
            if statement.type != "expression_statement" or _assigned(statement) in reads \
                    or not _metadata_only(statement, tmp):
                return None
    if any(not _metadata_only(arg, tmp) for name, arg in bound_b.items() if name != in_ptr):
        return None

    params_a = {p.name: p for p in producer.params}
    taken = ({text(t) for t in body_identifiers} | set(params_a)) - {text(out_ptr)}
    names: dict[str, str] = {}
    # The value handed over: the producer's variable itself (`acc`), else a new name for it.
    handoff = text(value) if value.type == "identifier" else _unique(tmp, taken)
    lines = [] if value.type == "identifier" else [f"{indent}{handoff} = {_value_text(value)}"]
    for name, expression in ((offsets, store_offsets), (mask, _value_text(store_mask))):
        if re.fullmatch(r"\w+", expression):  # the producer's own variable
            names[name] = expression
        else:
            names[name] = _unique(name, taken)
            lines.append(f"{indent}{names[name]} = {expression}")
    rest = [st for st in b.statements if st.id not in {v.id for v in lanes.values()}]
    used = {text(t) for st in rest for t in _identifiers(st)}
    extra_params: list[str] = []
    for p in consumer.params:
        if p.name == in_ptr or p.name not in used:
            continue
        arg = bound_b.get(p.name)
        shared = next((q for q, arg_a in bound_a.items() if arg is not None and q != text(out_ptr)
                       and text(arg_a) == text(arg) and params_a[q].is_constexpr == p.is_constexpr), None)
        names[p.name] = shared if shared is not None else _unique(p.name, taken)
        if shared is None:
            extra_params.append(p.name)
    consumer_store = _store_parts(b.statements[-1], index)
    if consumer_store is None or any(_writes(st, index) for st in b.statements[:-1]) \
            or text(consumer_store[3]) != mask or consumer_store[1] != offsets:
        return None
    loads_of_tmp = 0
    for statement in rest:
        loads = [t for t in walk(statement) if t.type == "call" and (parts := _load_parts(t, index)) is not None
                 and text(parts[0]) == in_ptr]
        if sum(1 for t in _identifiers(statement) if text(t) == in_ptr) != len(loads):
            return None
        replace: dict[tuple[int, int], str] = {}
        for load in loads:
            parts = _load_parts(load, index)
            assert parts is not None
            if text(parts[1]) != offsets or text(parts[2]) != mask:
                return None
            replace[(load.start_byte, load.end_byte)] = handoff
            loads_of_tmp += 1
        local, right = _assigned(statement), _right(statement)
        if local is not None and right is not None and len(loads) == 1 and right.id == loads[0].id \
                and sum(1 for t in b.statements if _assigned(t) == local) == 1:
            names[local] = handoff  # `y = tl.load(y_ptr + offsets, ...)`: y is the value itself
            continue
        if local is not None and local not in names:
            names[local] = _unique(local, taken)
        lines.append(_reindent(_renamed(statement, names, replace), b, indent))
    if loads_of_tmp == 0 or not _fresh_output(launcher, bound_b.get(text(consumer_store[0])), first, second):
        return None

    fused_name = _unique(_fused_name(producer.name, consumer.name), set(index.functions) | {k.name for k in index.kernels})
    nodes_a, nodes_b = _param_nodes(producer), _param_nodes(consumer)
    order = [(params_a[q].is_constexpr, q, text(nodes_a[q]), bound_a.get(q)) for q in params_a if q != text(out_ptr)]
    order += [(p.is_constexpr, names[p.name], _renamed_param(nodes_b[p.name], names[p.name]), bound_b.get(p.name))
              for p in consumer.params if p.name in extra_params]
    order.sort(key=lambda item: item[0])
    start = data.rfind(b"\n", 0, statements[0].start_byte) + 1
    end = data.rfind(b"\n", 0, statements[-1].start_byte) + 1
    kept = data[start:end].decode().rstrip("\n")  # everything the producer does before its store
    definition = (f"{text(producer.decorators[0])}\ndef {fused_name}({', '.join(item[2] for item in order)}):\n"
                  f'{indent}"""{producer.name} with {consumer.name} as its epilogue: {tmp} stays in registers."""\n'
                  + kept + "\n" + "\n".join(lines) + "\n")
    launch = _fused_launch(fused_name, first, [(item[1], item[3]) for item in order])
    return _rewrite(data, producer, consumer, first, second, launch, definition, tmp, launcher)


def _right(statement: Node) -> Node | None:
    """The right side of a plain `name = expr` statement."""
    expression = statement.named_children[0] if statement.named_child_count == 1 else None
    if expression is None or expression.type != "assignment" or _assigned(statement) is None:
        return None
    return expression.child_by_field_name("right")


def _param_nodes(kernel: Kernel) -> dict[str, Node]:
    """Each parameter's whole node (`BLOCK: tl.constexpr = 128`), by name."""
    parameters = kernel.node.child_by_field_name("parameters")
    found: dict[str, Node] = {}
    for node in parameters.named_children if parameters is not None else ():
        name = node if node.type == "identifier" else \
            node.child_by_field_name("name") or next((c for c in node.named_children if c.type == "identifier"), None)
        if name is not None:
            found[text(name)] = node
    return found


def _names_in(node: Node) -> set[str]:
    return {text(n) for n in _identifiers(node)}


def _renamed_param(node: Node, name: str) -> str:
    """A parameter's text with its name replaced (annotation and default kept)."""
    if node.type == "identifier":
        return name
    inner = node.child_by_field_name("name") or next((c for c in node.named_children if c.type == "identifier"), None)
    if inner is None:
        return text(node)
    whole = text(node)
    return whole[:inner.start_byte - node.start_byte] + name + whole[inner.end_byte - node.start_byte:]


def _reindent(statement_text: str, body: FlatBody, indent: str) -> str:
    lines = statement_text.split("\n")
    rest = [line[len(body.indent):] if line.startswith(body.indent) else line for line in lines[1:]]
    return "\n".join([indent + lines[0]] + [indent + line if line else line for line in rest])


def _fused_name(producer: str, consumer: str) -> str:
    stem = producer[:-len("_kernel")] if producer.endswith("_kernel") else producer
    return f"{stem}_{consumer}"


def _launcher_block(site: LaunchSite) -> Node | None:
    statement = site.node.parent
    return statement.parent if statement is not None else None


def _temporary_is_local(block: Node, tmp: str, first: LaunchSite) -> bool:
    """`tmp = torch.empty...(...)` in the launcher's block before the first launch, and the only
    assignment to it there."""
    assignments = [s for s in block.named_children if s.type == "expression_statement" and _assigned(s) == tmp]
    if len(assignments) != 1 or assignments[0].start_byte > first.node.start_byte:
        return False
    right = assignments[0].named_children[0].child_by_field_name("right")
    function = right.child_by_field_name("function") if right is not None and right.type == "call" else None
    return function is not None and re.fullmatch(r"torch\.(empty|empty_like|zeros|zeros_like|empty_strided)", text(function)) is not None


def _fresh_output(block: Node, argument: Node | None, first: LaunchSite, second: LaunchSite) -> bool:
    """The consumer writes a tensor the launcher allocates before the second launch and does not
    pass to the producer: fused, some programs would otherwise write what others still read (a
    consumer storing into the matmul's input while other tiles load it)."""
    if argument is None or argument.type != "identifier":
        return False
    name = text(argument)
    if name in _names_in(first.node):
        return False
    assignments = [s for s in block.named_children if s.type == "expression_statement" and _assigned(s) == name
                   and s.start_byte < second.node.start_byte]
    right = _right(assignments[-1]) if len(assignments) == 1 else None
    function = right.child_by_field_name("function") if right is not None and right.type == "call" else None
    return function is not None and re.fullmatch(r"torch\.(empty|empty_like|zeros|zeros_like|empty_strided)", text(function)) is not None


def _used_after(block: Node, tmp: str, second: LaunchSite) -> bool:
    function = enclosing(block, "function_definition") or block
    return any(n.start_byte >= second.node.end_byte and text(n) == tmp for n in _identifiers(function))


def _nothing_between(first: LaunchSite, second: LaunchSite, tmp: str) -> bool:
    """Nothing between the launches reads the temporary or rebinds a name the first launch reads."""
    block = _launcher_block(first)
    assert block is not None
    reads = _names_in(first.node)
    for statement in block.named_children:
        if first.node.end_byte <= statement.start_byte < second.node.start_byte:
            names = _names_in(statement)
            if tmp in names:
                return False
            assigned = {text(n) for n in walk(statement) if n.type == "identifier" and n.parent is not None
                        and n.parent.type in ("assignment", "augmented_assignment")
                        and n.parent.child_by_field_name("left") == n}
            if assigned & reads or statement.type not in ("expression_statement", "comment"):
                return False
    return True


def _fused_launch(name: str, first: LaunchSite, arguments: list[tuple[str, Node | None]]) -> str:
    """The fused launch: by position while every parameter so far is passed that way, by
    keyword after; the producer's launch options (`num_warps=`) kept."""
    parts: list[str] = []
    by_keyword = False
    for param, value in arguments:
        if value is None:  # a default: everything after it goes by name
            by_keyword = True
            continue
        by_keyword = by_keyword or (value.parent is not None and value.parent.type == "keyword_argument")
        parts.append(f"{param}={text(value)}" if by_keyword else text(value))
    parts += [f"{option}={text(value)}" for option, (_, value) in first.keywords.items()
              if option in ("num_warps", "num_stages", "num_ctas", "maxnreg")]
    return f"{name}[{text(first.grid)}]({', '.join(parts)})"


def _rewrite(data: bytes, producer: Kernel, consumer: Kernel, first: LaunchSite, second: LaunchSite,
             launch: str, definition: str, tmp: str, block: Node) -> str:
    first_statement, second_statement = first.node.parent, second.node.parent
    assert first_statement is not None and second_statement is not None
    edits: list[tuple[int, int, bytes]] = []
    edits.append((*line_span(data, first_statement), b""))
    edits.append((second.node.start_byte, second.node.end_byte, launch.encode()))
    function = enclosing(block, "function_definition") or block
    before = _references(function)
    # The fused kernel after the later of the two definitions.
    last = max(producer.outer, consumer.outer, key=lambda n: n.end_byte)
    end = line_span(data, last)[1]
    edits.append((end, end, b"\n\n" + definition.encode()))
    out = data
    for start, stop, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + new + out[stop:]
    return _drop_dead_locals(out, launch.split("[", 1)[0], before).decode("utf-8")


_PURE_CALL = re.compile(r"torch\.(empty|empty_like|zeros|zeros_like|empty_strided|ones|ones_like|full)|"
                        r"triton\.(cdiv|next_power_of_2)|.+\.(numel|stride|size|dim)|len|min|max")


def _references(function: Node) -> dict[str, int]:
    """How often each name is read in a function (assignment targets left out)."""
    counts: dict[str, int] = {}
    for n in _identifiers(function):
        parent = n.parent
        if parent is not None and parent.type == "assignment" and parent.child_by_field_name("left") == n:
            continue
        counts[text(n)] = counts.get(text(n), 0) + 1
    return counts


def _pure(node: Node) -> bool:
    """Whether evaluating the expression has no effect but its value (allocations included)."""
    if node.type == "lambda":
        return True
    if node.type == "call":
        function = node.child_by_field_name("function")
        arguments = node.child_by_field_name("arguments")
        return function is not None and _PURE_CALL.fullmatch(text(function)) is not None and \
            all(_pure(a) for a in (arguments.named_children if arguments is not None else ()))
    if node.type in ("identifier", "attribute", "integer", "float", "string", "true", "false", "none"):
        return True
    if node.type in ("binary_operator", "unary_operator", "tuple", "parenthesized_expression", "subscript",
                     "keyword_argument", "comparison_operator", "list"):
        return all(_pure(c) for c in node.named_children)
    return False


def _drop_dead_locals(data: bytes, fused_name: str, before: dict[str, int]) -> bytes:
    """Remove the launcher's assignments that only the replaced launches read (the temporary,
    the consumer's grid, its element count): a name read before the fusion and no longer, whose
    value has no side effect. Dead code the launcher had before is not ours to remove."""
    for _ in range(8):
        document = Document(data)
        kernel = index_module(document.root).kernel(fused_name)
        if kernel is None or not kernel.launches:
            return data
        function = enclosing(kernel.launches[0].node, "function_definition") or document.root
        body = function.child_by_field_name("body")
        after = _references(function)
        dead = [s for s in (body.named_children if body is not None else ())
                if s.type == "expression_statement" and (name := _assigned(s)) is not None
                and (right := _right(s)) is not None and before.get(name, 0) > 0 and after.get(name, 0) == 0
                and _pure(right)]
        if not dead:
            return data
        for statement in sorted(dead, key=lambda n: n.start_byte, reverse=True):
            start, end = line_span(document.source, statement)
            data = data[:start] + data[end:]
    return data
