"""The canonical form of Python source: two snippets with the same form are the same up to
renaming (syntax-tree isomorphism). The experience memory keys solutions by it
(`state/experience.py`); the search's equivalence check compares candidates with it
(`search/equivalence.py`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from tree_sitter import Node

from .document import Document
from .syntax import text

__all__ = ["Canonicaliser", "Scope", "canonical", "canonical_hash", "top_level"]

def top_level(root: Node) -> list[tuple[str, Node]]:
    """(name bound, statement) for module-level definitions and simple assignments."""
    out: list[tuple[str, Node]] = []
    for node in root.named_children:
        definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
        if definition is not None and definition.type in ("function_definition", "class_definition"):
            out.append((text(definition.child_by_field_name("name")), node))
        elif node.type == "expression_statement" and node.named_child_count == 1:
            assign = node.named_children[0]
            left = assign.child_by_field_name("left") if assign.type == "assignment" else None
            if left is not None and left.type == "identifier":
                out.append((text(left), node))
    return out


_PARAMETER_TYPES = frozenset({"typed_parameter", "default_parameter", "typed_default_parameter",
                              "list_splat_pattern", "dictionary_splat_pattern"})
_NO_RENAME_PARENTS = frozenset({"import_statement", "import_from_statement", "aliased_import", "dotted_name",
                                "future_import_statement"})
_CLOSERS = frozenset({")", "]", "}"})


class Scope:
    def __init__(self, kind: str, parent: Scope | None) -> None:
        self.kind = kind  # "module" | "function" | "class"
        self.parent = parent
        self.names: set[str] = set()
        self.declared_outer: set[str] = set()  # `global` / `nonlocal` names


def _target_names(node: Node | None) -> Iterator[str]:
    """Names bound by an assignment target (identifiers, tuples, lists, starred)."""
    if node is None:
        return
    if node.type == "identifier":
        yield text(node)
    elif node.type in ("pattern_list", "tuple_pattern", "list_pattern", "expression_list", "tuple", "list",
                       "parenthesized_expression", "list_splat_pattern", "as_pattern_target"):
        for child in node.named_children:
            yield from _target_names(child)


def _parameter_name(node: Node) -> str | None:
    if node.type == "identifier":
        return text(node)
    if node.type in _PARAMETER_TYPES:
        name = node.child_by_field_name("name")
        if name is None:
            name = next((c for c in node.named_children if c.type == "identifier"), None)
        return text(name) if name is not None else None
    return None


class Canonicaliser:
    """One canonical form: see `canonical`."""

    def __init__(self, root: Node) -> None:
        self.root = root
        self.tokens: list[str] = []
        self.numbers: dict[tuple[int, str], str] = {}
        self.scopes: dict[int, Scope] = {}  # a scope-opening node's id -> its scope
        self.module = Scope("module", None)
        self.functions: dict[str, tuple[Scope, set[str]]] = {}  # module-level def -> (scope, params)
        self.strings: dict[str, tuple[Scope, str]] = {}  # string constant -> the parameter it names
        self._collect(root, self.module)
        for name, statement in top_level(root):
            definition = statement.child_by_field_name("definition") if statement.type == "decorated_definition" else statement
            if definition is not None and definition.type == "function_definition":
                scope = self.scopes[definition.id]
                params = self._params(definition)
                self.functions[name] = (scope, params)
        # Strings naming a kernel's parameter (`meta["BLOCK"]`, `triton.Config({"BLOCK": 64})`,
        # `key=["n"]`) are renamed with it: jit-decorated definitions first, then the others.
        ordered = sorted(self.functions.items(), key=lambda item: 0 if item[0] in self._decorated() else 1)
        for _, (scope, params) in ordered:
            for param in sorted(params):
                self.strings.setdefault(param, (scope, param))

    def _decorated(self) -> set[str]:
        return {name for name, node in top_level(self.root) if node.type == "decorated_definition"}

    @staticmethod
    def _params(definition: Node) -> set[str]:
        params = definition.child_by_field_name("parameters")
        out: set[str] = set()
        for child in params.named_children if params is not None else []:
            name = _parameter_name(child)
            if name is not None:
                out.add(name)
        return out

    # Pass 1: which names each scope binds.

    def _collect(self, node: Node, scope: Scope) -> None:
        for child in node.children:
            kind = child.type
            if kind in ("function_definition", "class_definition"):
                name = child.child_by_field_name("name")
                if name is not None and scope.kind != "class":
                    scope.names.add(text(name))
                inner = Scope("function" if kind == "function_definition" else "class", scope)
                self.scopes[child.id] = inner
                if kind == "function_definition":
                    inner.names |= self._params(child)
                    # Defaults, annotations and decorators are evaluated in the outer scope.
                    params = child.child_by_field_name("parameters")
                    if params is not None:
                        self._collect(params, scope)
                body = child.child_by_field_name("body")
                if body is not None:
                    self._collect(body, inner)
                superclasses = child.child_by_field_name("superclasses")
                if superclasses is not None:
                    self._collect(superclasses, scope)
                continue
            if kind == "lambda":
                inner = Scope("function", scope)
                self.scopes[child.id] = inner
                params = child.child_by_field_name("parameters")
                for param in params.named_children if params is not None else []:
                    bound = _parameter_name(param)
                    if bound is not None:
                        inner.names.add(bound)
                body = child.child_by_field_name("body")
                if body is not None:
                    self._collect(body, inner)
                continue
            if kind in ("import_statement", "import_from_statement", "future_import_statement"):
                continue  # imported names are API: kept
            if scope.kind != "class":
                if kind in ("assignment", "augmented_assignment", "for_statement", "for_in_clause"):
                    scope.names.update(_target_names(child.child_by_field_name("left")))
                elif kind == "as_pattern_target":
                    scope.names.update(_target_names(child))
                elif kind == "named_expression":
                    scope.names.update(_target_names(child.child_by_field_name("name")))
                elif kind in ("global_statement", "nonlocal_statement"):
                    scope.declared_outer.update(text(c) for c in child.named_children if c.type == "identifier")
            self._collect(child, scope)

    # Pass 2: the tokens.

    def _resolve(self, name: str, scope: Scope) -> tuple[Scope, str] | None:
        current: Scope | None = scope
        first = True
        while current is not None:
            if current.kind == "class":
                if first and name in current.names:
                    return None  # class attributes are reached by attribute: kept
            elif name in current.names and name not in current.declared_outer:
                return current, name
            first = False
            current = current.parent
        return None

    def _number(self, key: tuple[Scope, str]) -> str:
        scope, name = key
        number_key = (id(scope), name)
        if number_key not in self.numbers:
            self.numbers[number_key] = f"v{len(self.numbers)}"
        return self.numbers[number_key]

    def _callee(self, call: Node | None, scope: Scope) -> tuple[Scope, set[str]] | None:
        """The module-level definition a call (`f(...)`, `kernel[grid](...)`) calls, if any."""
        if call is None or call.type != "call":
            return None
        function = call.child_by_field_name("function")
        while function is not None and function.type in ("subscript", "parenthesized_expression"):
            function = function.child_by_field_name("value") if function.type == "subscript" else function.named_children[0]
        if function is None or function.type != "identifier":
            return None
        resolved = self._resolve(text(function), scope)
        if resolved is None or resolved[0] is not self.module:
            return None
        return self.functions.get(text(function))

    def emit(self, node: Node, scope: Scope) -> None:
        kind = node.type
        if kind == "comment" or kind == "line_continuation":
            return
        if kind == "expression_statement" and node.named_child_count == 1 and node.named_children[0].type == "string":
            return  # a docstring, or any bare string: does nothing
        if kind == "identifier":
            self.tokens.append(self._identifier(node, scope))
            return
        if kind == "string" and self._plain_string(node) is not None:
            value = self._plain_string(node) or ""
            target = self.strings.get(value)
            self.tokens.append(f"str:{self._number(target)}" if target is not None else f"str:{value!r}")
            return
        if kind == "string_start":
            self.tokens.append("str" + "".join(c for c in text(node).lower() if c.isalpha()))
            return
        if kind == "string_end":
            return
        if node.child_count == 0:
            self.tokens.append(text(node) if node.is_named else kind)
            return
        inner = self.scopes.get(node.id)
        self.tokens.append("(" + kind)
        children = node.children
        for i, child in enumerate(children):
            if child.type == "," and (i + 1 == len(children) or children[i + 1].type in _CLOSERS):
                continue  # a trailing comma
            self.emit(child, self._child_scope(node, child, scope, inner))
        self.tokens.append(")")

    @staticmethod
    def _child_scope(node: Node, child: Node, scope: Scope, inner: Scope | None) -> Scope:
        if inner is None:
            return scope
        if node.type == "function_definition":
            # The name, decorators, defaults and annotations belong outside; parameters' own
            # names are resolved in `_identifier`, the body inside.
            return inner if child == node.child_by_field_name("body") else scope
        if node.type == "lambda":
            return inner if child in (node.child_by_field_name("body"), node.child_by_field_name("parameters")) else scope
        if node.type == "class_definition":
            return inner if child == node.child_by_field_name("body") else scope
        return scope

    def _identifier(self, node: Node, scope: Scope) -> str:
        name = text(node)
        parent = node.parent
        if parent is None or parent.type in _NO_RENAME_PARENTS:
            return name
        if parent.type == "attribute" and node == parent.child_by_field_name("attribute"):
            return name  # `tl.load`, `x.shape`: attribute names are meaning, not naming
        if parent.type == "keyword_argument" and node == parent.child_by_field_name("name"):
            callee = self._callee(parent.parent.parent if parent.parent is not None else None, scope)
            if callee is not None and name in callee[1]:
                return self._number((callee[0], name))  # `BLOCK=1024` to a kernel defined here
            return name  # `mask=`, `num_warps=`: API keywords
        if self._is_parameter_name(node):
            definition = self._definition_of_parameter(node)
            inner = self.scopes.get(definition.id) if definition is not None else None
            if inner is not None:
                return self._number((inner, name))
        resolved = self._resolve(name, scope)
        return self._number(resolved) if resolved is not None else name

    @staticmethod
    def _is_parameter_name(node: Node) -> bool:
        parent = node.parent
        if parent is None:
            return False
        if parent.type in ("parameters", "lambda_parameters"):
            return True
        if parent.type in _PARAMETER_TYPES:
            grand = parent.parent
            if grand is None or grand.type not in ("parameters", "lambda_parameters"):
                return False
            name = parent.child_by_field_name("name")
            if name is not None:
                return node == name
            return node == next((c for c in parent.named_children if c.type == "identifier"), None)
        return False

    @staticmethod
    def _definition_of_parameter(node: Node) -> Node | None:
        current = node.parent
        while current is not None and current.type not in ("parameters", "lambda_parameters"):
            current = current.parent
        return current.parent if current is not None else None

    @staticmethod
    def _plain_string(node: Node) -> str | None:
        """A string's value when it has no interpolation (escape sequences kept as written)."""
        parts = []
        for child in node.children:
            if child.type in ("string_start", "string_end"):
                continue
            if child.type not in ("string_content", "escape_sequence"):
                return None
            parts.append(text(child))
        return "".join(parts)


def canonical(source: str) -> str:
    """The canonical form of Python source: two snippets with the same form are the same up to
    renaming (syntax-tree isomorphism).

    Names the snippet binds (parameters, local variables, loop and `with` targets, functions,
    classes and constants defined at module level) are numbered `v0, v1, …` by first occurrence,
    per scope; a keyword argument to a function defined in the snippet, and a string naming a
    kernel's parameter (`meta["BLOCK"]`, `triton.Config({"BLOCK": 64})`), follow that parameter.
    Comments, docstrings, whitespace, trailing commas and quote styles drop out. Everything else
    is kept: imported and builtin names (`tl`, `triton`, `torch`, `range`), attribute names
    (`tl.load`, `x.shape`), API keywords (`mask=`, `num_warps=`), class attributes, literals and
    operators.
    """
    root = Document(source).root
    canon = Canonicaliser(root)
    canon.emit(root, canon.module)
    return " ".join(canon.tokens)


def canonical_hash(source: str) -> str:
    """sha256 (hex) of `canonical(source)`."""
    return hashlib.sha256(canonical(source).encode("utf-8")).hexdigest()
