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

A repeated statement is dropped only when it is the same plain assignment as an earlier
top-level one and nothing between them assigns its target or a name it reads, or stores.

Text only; the verifier decides whether the result is right and faster. For very long rows a
whole-row block spills registers on a GPU: the search's timing, not this module, rejects it.
"""

from __future__ import annotations

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
    return _drop_repeats(out.decode("utf-8"), kernel_name)


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
    """`for v in range(0, N, B): body` as `v = 0` and the body one level out."""
    indent = data[data.rfind(b"\n", 0, loop.start_byte) + 1:loop.start_byte].decode()
    body = loop.child_by_field_name("body")
    assert body is not None
    variable = text(loop.child_by_field_name("left"))
    start = data.rfind(b"\n", 0, body.start_byte) + 1
    end = line_span(data, body)[1]
    lines = data[start:end].decode().splitlines()
    inner = re.match(r"[ \t]*", next((line for line in lines if line.strip()), "")).group(0)  # type: ignore[union-attr]
    out = [f"{indent}{variable} = 0"]
    out += [indent + line[len(inner):] if line.startswith(inner) else line for line in lines]
    return "\n".join(out) + "\n"


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
    """Drop a top-level plain assignment that repeats an earlier one whose value still holds."""
    document = Document(source)
    kernel = index_module(document.root).kernel(kernel_name)
    if kernel is None or kernel.body is None:
        return source
    statements = list(kernel.body.named_children)
    drop: list[Node] = []
    for j, later in enumerate(statements):
        target = _assigned(later)
        if target is None or not target[1]:
            continue
        right = later.named_children[0].child_by_field_name("right")
        reads = {text(n) for n in walk(right) if n.type == "identifier"} if right is not None else set()
        if target[0] in reads:
            continue  # `acc = acc + x` twice is not once
        for i in range(j - 1, -1, -1):
            earlier = statements[i]
            if earlier.type == "comment" or any(earlier.id == d.id for d in drop):
                continue  # a dropped repeat assigns what its original already holds
            if earlier.type == "expression_statement" and text(earlier) == text(later):
                drop.append(later)
                break
            assigned = {text(n) for n in walk(earlier) if n.type == "identifier" and n.parent is not None
                        and n.parent.type in ("assignment", "augmented_assignment", "for_statement")
                        and n.parent.child_by_field_name("left") == n}
            if assigned & (reads | {target[0]}) or _writes_memory(earlier) or earlier.type != "expression_statement":
                break
    data = document.source
    for statement in sorted(drop, key=lambda n: n.start_byte, reverse=True):
        start, end = line_span(data, statement)
        data = data[:start] + data[end:]
    return data.decode("utf-8")
