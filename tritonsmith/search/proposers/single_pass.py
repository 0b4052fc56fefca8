"""A multi-pass row reduction made single-pass (a regenerate transformation).

A kernel that walks its row in blocks, once per pass (softmax: the maximum, then the sum of
exponentials, then the output), reads the row from memory once per pass. When one block covers
the whole row, each loop runs once: the launcher sets the block to
`triton.next_power_of_2(n_cols)`, the loops become straight-line code, and a load the row
already made is not made again. That is the softmax of Triton's tutorial, the single pass a
kernel engineer writes when a row fits in registers.

Preconditions:

- the kernel has no `tl.dot` (a matmul's K loop is not a row to hold whole) and its loops load
  1-D blocks (no `[:, None]` tiles, whose other dimension would multiply the whole row);
- the loops are top-level statements of the kernel, each `for v in range(0, N, BLOCK)` with
  the same runtime parameter `N` and constexpr parameter `BLOCK`, with no `else`, `break`,
  `continue` or `return`, and `v` not read outside its loop;
- every launch passes `BLOCK` by keyword and `N` as an expression the launcher can wrap in
  `triton.next_power_of_2(...)`, with a grid that does not read the block, in a module that
  imports `triton`.

The result carries no dead code. The loop variable, now 0, goes where every use adds it
(`cols = start + offsets` becomes `cols = offsets`). A repeated statement is dropped when it is
the same plain assignment as an earlier top-level one and nothing between them assigns its
target or a name it reads, or stores; "the same" compares the expressions with each name that
is assigned once in the kernel read as its value (the last pass's `tl.load(..., mask=mask)` is
the first pass's `tl.load(..., mask=cols < n_cols)`). Then an assignment that nothing reads
again (and that stores nothing) goes.

Text only; the verifier decides whether the result is right and faster. For very long rows a
whole-row block spills registers on a GPU: the search's timing, not this module, rejects it.
"""

from __future__ import annotations

import ast
import re

from tree_sitter import Node

from ...analysis import Document, index_module
from ...analysis.index import Kernel
from ...analysis.syntax import line_span, text, walk

__all__ = ["single_pass"]


def single_pass(source: str, kernel_name: str) -> str | None:
    """`source` with `kernel_name`'s block loops unrolled into one whole-row pass and its
    launches' block set to cover the row, or None where the preconditions fail."""
    document = Document(source)
    index = index_module(document.root)
    kernel = index.kernel(kernel_name)
    if kernel is None or kernel.body is None or not kernel.launches or "triton" not in index.imports.names:
        return None
    if "tl.dot(" in text(kernel.body):
        return None  # a matmul's K loop: a whole-K block would not fit a GPU's registers
    loops = [s for s in kernel.body.named_children if s.type == "for_statement"]
    if any(n.type == "subscript" for loop in loops for n in walk(loop)):
        return None  # 2-D tiles (`rows[:, None]`): a whole-row block times the other would spill
    shape = _loop_shape(kernel, loops)
    if shape is None:
        return None
    bound, block = shape
    data = document.source
    edits: list[tuple[int, int, bytes]] = []
    for site in kernel.launches:
        value = site.keywords.get(block)
        argument = _argument(kernel, site, bound)
        if value is None or argument is None or site.grid is None or block in text(site.grid):
            return None
        if argument.type not in ("identifier", "attribute", "subscript", "call", "integer"):
            return None
        edits.append((value[1].start_byte, value[1].end_byte, f"triton.next_power_of_2({text(argument)})".encode()))
    for loop in loops:
        edits.append((*line_span(data, loop), _unrolled(data, loop).encode()))
    out = data
    for start, end, new in sorted(edits, reverse=True):
        out = out[:start] + new + out[end:]
    return _without_dead_code(_drop_repeats(out.decode("utf-8"), kernel_name), kernel_name)


def _loop_shape(kernel: Kernel, loops: list[Node]) -> tuple[str, str] | None:
    """(N, BLOCK) when every loop is `for v in range(0, N, BLOCK)` over the same two parameters."""
    if not loops:
        return None
    params = {p.name: p for p in kernel.params}
    shapes = set()
    body = kernel.body
    assert body is not None
    for loop in loops:
        variable, iterable = loop.child_by_field_name("left"), loop.child_by_field_name("right")
        if variable is None or variable.type != "identifier" or iterable is None or iterable.type != "call" \
                or text(iterable.child_by_field_name("function")) != "range" or loop.child_by_field_name("alternative"):
            return None
        arguments = [a for a in (iterable.child_by_field_name("arguments") or iterable).named_children if a.type != "comment"]
        if len(arguments) != 3 or text(arguments[0]) != "0" or any(a.type != "identifier" for a in arguments[1:]):
            return None
        bound, block = text(arguments[1]), text(arguments[2])
        if bound not in params or params[bound].is_constexpr or block not in params or not params[block].is_constexpr:
            return None
        if any(n.type in ("break_statement", "continue_statement", "return_statement") for n in walk(loop)):
            return None
        name = text(variable)
        outside = [n for n in walk(body) if n.type == "identifier" and text(n) == name
                   and not any(other.start_byte <= n.start_byte < other.end_byte for other in loops)]
        if outside:
            return None
        shapes.add((bound, block))
    return shapes.pop() if len(shapes) == 1 else None


def _argument(kernel: Kernel, site: object, param: str) -> Node | None:
    """The launch's argument for a parameter, by keyword or position."""
    keywords = site.keywords  # type: ignore[attr-defined]
    if param in keywords:
        return keywords[param][1]
    index = next((p.index for p in kernel.params if p.name == param), None)
    positional = site.positional  # type: ignore[attr-defined]
    return positional[index] if index is not None and index < len(positional) else None


def _unrolled(data: bytes, loop: Node) -> str:
    """`for v in range(0, N, B): body` as the body one level out, with `v` as 0: each `v + e`
    (or `e + v`) as `e` where every use of `v` is one, else `v = 0` before the body."""
    indent = data[data.rfind(b"\n", 0, loop.start_byte) + 1:loop.start_byte].decode()
    body = loop.child_by_field_name("body")
    assert body is not None
    variable = text(loop.child_by_field_name("left"))
    start = data.rfind(b"\n", 0, body.start_byte) + 1
    end = line_span(data, body)[1]
    sums = _sums_with(body, variable)
    block = data[start:end]
    if sums is not None:
        for whole, kept in sorted(sums, key=lambda pair: pair[0].start_byte, reverse=True):
            block = (block[:whole.start_byte - start] + data[kept.start_byte:kept.end_byte]
                     + block[whole.end_byte - start:])
    lines = block.decode().splitlines()
    inner = re.match(r"[ \t]*", next((line for line in lines if line.strip()), "")).group(0)  # type: ignore[union-attr]
    out = [] if sums is not None else [f"{indent}{variable} = 0"]
    out += [indent + line[len(inner):] if line.startswith(inner) else line for line in lines]
    return "\n".join(out) + "\n"


def _sums_with(body: Node, variable: str) -> list[tuple[Node, Node]] | None:
    """(`v + e`, `e`) for every use of `variable` in `body`, or None when one use is not an
    operand of a `+` (nor assigned, which the preconditions already exclude)."""
    sums = []
    for node in walk(body):
        if node.type != "identifier" or text(node) != variable:
            continue
        parent = node.parent
        operator = parent.child_by_field_name("operator") if parent is not None else None
        if parent is None or parent.type != "binary_operator" or operator is None or text(operator) != "+":
            return None
        left, right = parent.child_by_field_name("left"), parent.child_by_field_name("right")
        other = right if left is not None and left.id == node.id else left
        if other is None or any(node.id == n.id for n in walk(other)):
            return None
        sums.append((parent, other))
    return sums


def _assigned(statement: Node) -> tuple[str, bool] | None:
    """(target, whether a plain `=`) of an assignment statement to one name."""
    expression = statement.named_children[0] if statement.type == "expression_statement" and statement.named_child_count == 1 else None
    if expression is None or expression.type not in ("assignment", "augmented_assignment"):
        return None
    left = expression.child_by_field_name("left")
    if left is None or left.type != "identifier":
        return None
    return text(left), expression.type == "assignment"


def _writes_memory(statement: Node) -> bool:
    return any(n.type == "call" and re.search(r"(^|\.)(store|atomic_\w+)$", text(n.child_by_field_name("function")))
               for n in walk(statement))


def _drop_repeats(source: str, kernel_name: str) -> str:
    """Drop each top-level plain assignment that repeats an earlier one whose value still
    holds, until none is left (a dropped `cols = ...` can make two loads the same)."""
    while True:
        out = _drop_repeats_once(source, kernel_name)
        if out == source:
            return out
        source = out


def _single_values(statements: list[Node], body: Node) -> dict[str, ast.expr]:
    """Each name assigned exactly once in the kernel body, by a top-level plain assignment,
    with its value as Python's parser reads it (what `_expanded` reads the name as)."""
    counts: dict[str, int] = {}
    for node in walk(body):
        if node.type in ("assignment", "augmented_assignment", "for_statement"):
            left = node.child_by_field_name("left")
            for name in (n for n in walk(left) if n.type == "identifier") if left is not None else ():
                counts[text(name)] = counts.get(text(name), 0) + 1
    values: dict[str, ast.expr] = {}
    for statement in statements:
        target = _assigned(statement)
        right = statement.named_children[0].child_by_field_name("right") if target is not None else None
        if target is None or not target[1] or right is None or counts.get(target[0]) != 1:
            continue
        try:
            values[target[0]] = ast.parse(text(right), mode="eval").body
        except SyntaxError:
            continue
    return values


class _Expand(ast.NodeTransformer):
    def __init__(self, values: dict[str, ast.expr]) -> None:
        self.values, self.depth = values, 0

    def visit_Name(self, node: ast.Name) -> ast.AST:
        value = self.values.get(node.id)
        if value is None or self.depth > 8:
            return node
        self.depth += 1
        expanded = self.visit(ast.parse(ast.unparse(value), mode="eval").body)
        self.depth -= 1
        return expanded


def _expanded(statement: Node, values: dict[str, ast.expr]) -> tuple[str, ast.expr] | None:
    """(target, the value with each single-assignment name read as its value)."""
    target = _assigned(statement)
    right = statement.named_children[0].child_by_field_name("right") if target is not None else None
    if target is None or right is None:
        return None
    try:
        return target[0], _Expand(values).visit(ast.parse(text(right), mode="eval").body)
    except (SyntaxError, RecursionError):
        return None


def _same_value(a: tuple[str, ast.expr] | None, b: tuple[str, ast.expr] | None) -> bool:
    return a is not None and b is not None and a[0] == b[0] and ast.dump(a[1]) == ast.dump(b[1])


def _drop_repeats_once(source: str, kernel_name: str) -> str:
    document = Document(source)
    kernel = index_module(document.root).kernel(kernel_name)
    if kernel is None or kernel.body is None:
        return source
    statements = list(kernel.body.named_children)
    values = _single_values(statements, kernel.body)
    drop: list[Node] = []
    for j, later in enumerate(statements):
        target = _assigned(later)
        if target is None or not target[1]:
            continue
        right = later.named_children[0].child_by_field_name("right")
        reads = {text(n) for n in walk(right) if n.type == "identifier"} if right is not None else set()
        if target[0] in reads:
            continue  # `acc = acc + x` twice is not once
        value = _expanded(later, values)
        if value is not None:  # what it reads once each single-assignment name is its value
            reads = {n.id for n in ast.walk(value[1]) if isinstance(n, ast.Name)}
        for i in range(j - 1, -1, -1):
            earlier = statements[i]
            if earlier.type == "comment" or any(earlier.id == d.id for d in drop):
                continue  # a dropped repeat assigns what its original already holds
            if earlier.type == "expression_statement" and (
                    text(earlier) == text(later) or _same_value(_expanded(earlier, values), value)):
                drop.append(later)
                break
            assigned = {text(n) for n in walk(earlier) if n.type == "identifier" and n.parent is not None
                        and n.parent.type in ("assignment", "augmented_assignment", "for_statement")
                        and n.parent.child_by_field_name("left") == n}
            if assigned & (reads | {target[0]}) or _writes_memory(earlier) or earlier.type != "expression_statement":
                break
    return _cut(document.source, drop)


def _cut(data: bytes, statements: list[Node]) -> str:
    for statement in sorted(statements, key=lambda n: n.start_byte, reverse=True):
        start, end = line_span(data, statement)
        data = data[:start] + data[end:]
    return data.decode("utf-8")


_EFFECTS = re.compile(r"(^|\.)(store|atomic_\w+|device_print|device_assert|static_print|static_assert|"
                      r"debug_barrier|print|inline_asm_elementwise)$")


def _without_dead_code(source: str, kernel_name: str) -> str:
    """Drop each top-level plain assignment whose name nothing reads after it (before it is
    assigned again, or ever), when its value has no effect, until none is left."""
    while True:
        document = Document(source)
        kernel = index_module(document.root).kernel(kernel_name)
        if kernel is None or kernel.body is None:
            return source
        statements = list(kernel.body.named_children)
        dead = [statement for j, statement in enumerate(statements) if _dead(statement, statements[j + 1:])]
        if not dead:
            return source
        source = _cut(document.source, dead[-1:])  # one at a time: a dropped one may free another


def _dead(statement: Node, after: list[Node]) -> bool:
    target = _assigned(statement)
    if target is None or not target[1]:
        return False
    right = statement.named_children[0].child_by_field_name("right")
    if right is None or any(n.type == "call" and _EFFECTS.search(text(n.child_by_field_name("function")))
                            for n in walk(right)):
        return False
    name = target[0]
    for later in after:
        reads = [n for n in walk(later) if n.type == "identifier" and text(n) == name]
        assigned = _assigned(later)
        if assigned is not None and assigned[0] == name and assigned[1]:
            value = later.named_children[0].child_by_field_name("right")
            return value is not None and not any(text(n) == name for n in walk(value) if n.type == "identifier")
        if reads:
            return False
    return True
