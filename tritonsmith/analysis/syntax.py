"""Small helpers over tree-sitter nodes shared by the index and the rule checks."""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

__all__ = [
    "definition_name",
    "argument_list",
    "call_args",
    "dotted_name",
    "enclosing",
    "iter_descendants",
    "line_span",
    "operator_of",
    "string_value",
    "text",
    "unparen",
    "walk",
]

# Nodes that open a new Python scope: a walk over a kernel body stops at them, since their
# contents run elsewhere (or are themselves rule violations found by another check).
SCOPE_NODES = frozenset({"function_definition", "class_definition", "lambda"})


def text(node: Node | None) -> str:
    if node is None:
        return ""
    raw = node.text  # a copy out of the tree's source: read it once
    return "" if raw is None else raw.decode("utf-8", errors="replace")


def line_span(data: bytes, node: Node) -> tuple[int, int]:
    """The byte range of the whole lines a node occupies, with the last one's newline: what to
    cut to remove a statement, or replace to rewrite it."""
    start = data.rfind(b"\n", 0, node.start_byte) + 1
    end = data.find(b"\n", node.end_byte)
    return start, (len(data) if end < 0 else end + 1)


def enclosing(node: Node, kind: str) -> Node | None:
    """The nearest ancestor of a type (`function_definition`), or None."""
    current = node.parent
    while current is not None:
        if current.type == kind:
            return current
        current = current.parent
    return None


def top_statement(node: Node) -> Node:
    """The module-level statement holding `node` (a child of the module; `node` itself when it is one)."""
    while node.parent is not None and node.parent.parent is not None:
        node = node.parent
    return node


def operator_of(node: Node | None) -> str:
    """The operator of a binary, unary, comparison or augmented assignment node (`"+"`, `"**="`).
    Operators are anonymous nodes whose type is their text, so nothing is decoded."""
    operator = node.child_by_field_name("operator") if node is not None else None
    return operator.type if operator is not None else ""


def unparen(node: Node | None) -> Node | None:
    while node is not None and node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def dotted_name(node: Node | None) -> str | None:
    """`a.b.c` for an identifier or attribute chain, else None."""
    node = unparen(node)
    if node is None:
        return None
    if node.type == "identifier":
        return text(node)
    if node.type == "attribute":
        obj = dotted_name(node.child_by_field_name("object"))
        attr = node.child_by_field_name("attribute")
        if obj is None or attr is None:
            return None
        return f"{obj}.{text(attr)}"
    return None


def argument_list(call: Node) -> Node | None:
    args = call.child_by_field_name("arguments")
    return args if args is not None and args.type == "argument_list" else None


def call_args(call: Node) -> tuple[list[Node], dict[str, tuple[Node, Node]]]:
    """Positional argument nodes and keyword arguments (name -> (keyword node, value node))."""
    positional: list[Node] = []
    keywords: dict[str, tuple[Node, Node]] = {}
    args = argument_list(call)
    if args is None:
        return positional, keywords
    for child in args.named_children:
        if child.type == "keyword_argument":
            name = child.child_by_field_name("name")
            value = child.child_by_field_name("value")
            if name is not None and value is not None:
                keywords[text(name)] = (child, value)
        elif child.type in ("comment", "list_splat", "dictionary_splat"):
            continue
        else:
            positional.append(child)
    return positional, keywords


def string_value(node: Node | None) -> str | None:
    """The value of a plain string literal (no interpolation), else None."""
    node = unparen(node)
    if node is None or node.type != "string":
        return None
    parts = []
    for child in node.named_children:
        if child.type == "string_content":
            parts.append(text(child))
        elif child.type == "interpolation":
            return None
    return "".join(parts)


def definition_name(root: Node, name: str) -> Node | None:
    """The name node of the module-level function or class called `name` (decorated or not)."""
    for node in root.named_children:
        definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
        if definition is None or definition.type not in ("class_definition", "function_definition"):
            continue
        found = definition.child_by_field_name("name")
        if found is not None and found.text == name.encode():
            return found
    return None


def walk(node: Node | None) -> Iterator[Node]:
    """`node` and every named node under it, in document order (scopes included)."""
    if node is None:
        return
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.named_children))


def iter_descendants(node: Node, *, stop_at_scopes: bool = True) -> Iterator[Node]:
    """Every named descendant of `node` in document order, not descending into nested scopes."""
    cursor = node.walk()
    # An explicit cursor walk: far faster than recursion over `.children` in Python.
    visited_children = False
    depth = 0
    while True:
        current = cursor.node
        if not visited_children:
            if depth > 0 and current is not None and current.is_named:
                yield current
            descend = current is not None and not (
                stop_at_scopes and depth > 0 and current.type in SCOPE_NODES
            )
            if descend and cursor.goto_first_child():
                depth += 1
                continue
        if cursor.goto_next_sibling():
            visited_children = False
            continue
        if depth == 0 or not cursor.goto_parent():
            return
        depth -= 1
        visited_children = True
