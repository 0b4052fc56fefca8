"""What a host function's body binds (rules/checks/launch.py `_body_bindings`, read by the launch
checks to tell a launched name shadowed by a local): the names Python's own symbol table gives the
function (`symtable`), each with the node the checks read, in the order of a walk that visits a
node before its children and children right to left."""

from __future__ import annotations

import symtable
from pathlib import Path

import pytest
from tree_sitter import Node

from tritonsmith.analysis import Document
from tritonsmith.analysis.syntax import text, walk
from tritonsmith.rules.checks.launch import _body_bindings, _may_bind

ROOT = Path(__file__).resolve().parents[2]

TRICKY = '''
def launcher(x, kernel):
    kernel = pick(kernel)
    a, b = x.shape
    (c, d) = 1, 2
    [e, *rest] = x
    x.attr, x[0] = 1, 2
    for i, (j, k) in enumerate(pairs):
        kernel = other
        if i:
            def kernel(y):
                inner = 1
                return inner
    with open(p) as handle, lock, open(q) as (h1, h2):
        squares = [n * n for n in range(4) if (m := n)]
        table = {key: value for key, value in pairs}
    f = lambda kernel, lam=(w := 1): kernel + 1
    class Local:
        in_class = 3
    import torch.cuda, numpy as np
    from triton import jit as kernel2, language
    from . import sibling
    try:
        grid = (1,)
    except Exception as error:
        grid = None
    while grid:
        grid = {g: g for g in grid}
    counter += 1
    del gone, x.attr, x[0]
    annotated: int
    first = second = 3
    kernel = kernel[grid]
    return kernel


def broken(x):
    y = (
    kernel = 1
'''


def _functions(source: bytes) -> list[Node]:
    return [n for n in walk(Document(source).root) if n.type == "function_definition"]


def _symbol_tables(source: bytes) -> dict[tuple[int, str], symtable.SymbolTable]:
    """Each function's symbol table, by the line of its `def` (0-based, as tree-sitter counts)
    and its name (a lambda or comprehension on the same line has a table of its own)."""
    out: dict[tuple[int, str], symtable.SymbolTable] = {}
    stack = [symtable.symtable(source.decode(), "<test>", "exec")]
    while stack:
        table = stack.pop()
        if table.get_type() == "function":
            out[(table.get_lineno() - 1, table.get_name())] = table
        stack.extend(table.get_children())
    return out


def _python_binds(table: symtable.SymbolTable) -> set[str]:
    return {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}


def _parses(source: bytes) -> bool:
    try:
        compile(source, "<test>", "exec")
    except SyntaxError:
        return False
    return True


SOURCES = [TRICKY.split("def broken")[0].encode()] + sorted(
    source for p in [*(ROOT / "examples").rglob("*.py"), *(ROOT / "bench" / "problems").glob("*.py"),
                     *(ROOT / "tritonsmith" / "rules" / "checks").glob("*.py")]
    if b"def " in (source := p.read_bytes()))


@pytest.mark.parametrize("source", SOURCES)
def test_a_function_binds_the_names_pythons_symbol_table_gives_it(source: bytes) -> None:
    assert _parses(source)
    tables = _symbol_tables(source)
    functions = _functions(source)
    assert functions
    for function in functions:
        table = tables[(function.start_point[0], text(function.child_by_field_name("name")))]
        assert set(_body_bindings(function)) == _python_binds(table) - {
            # Parameters the body leaves alone are not its bindings (`_local_bindings` adds them).
            s.get_name() for s in table.get_symbols() if s.is_parameter() and not s.is_assigned()
        }, text(function)[:200]


def test_each_name_is_bound_to_what_the_launch_checks_read() -> None:
    launcher = _functions(TRICKY.encode())[0]
    found = _body_bindings(launcher)
    types = {name: [n.type for n in nodes] for name, nodes in found.items()}
    assert types["kernel"] == ["subscript", "function_definition", "identifier", "call"]  # right to left
    assert types["m"] == ["identifier"] and types["w"] == ["integer"]  # `:=`: its value
    assert types["handle"] == ["as_pattern_target"] and types["h1"] == ["as_pattern_target"]
    assert types["Local"] == ["class_definition"] and "in_class" not in found
    assert {"torch", "np", "kernel2", "language", "sibling"} <= set(found) and "cuda" not in found and "jit" not in found
    assert types["annotated"] == ["assignment"] and types["counter"] == ["augmented_assignment"]
    assert types["gone"] == ["delete_statement"] and "attr" not in found
    assert {"first", "second", "e", "rest", "error"} <= set(found)
    assert not {"n", "key", "value", "g", "inner", "y", "lam"} & set(found)  # their own scopes


def test_a_broken_function_still_reads_what_it_can() -> None:
    broken = _functions(TRICKY.encode())[-1]
    assert "kernel" in _body_bindings(broken) or "y" in _body_bindings(broken)


@pytest.mark.parametrize("line", [
    "kernel = 1", "kernel += 1", "kernel: int", "[a, kernel] = x", "(kernel := 2)", "del kernel",
    "with f() as kernel: pass", "import kernel", "from m import (\n    a,\n    kernel)", "for kernel in x: pass",
    "class kernel: pass", "def kernel(): pass", "kernel <<= 1", "with f() as [a, *kernel]: pass",
    # A line continued by a backslash.
    "from m import a, \\\n    kernel", "kernel \\\n    = 1", "for kernel \\\n    in x: pass", "del \\\n    kernel",
])
def test_the_prefilter_sees_every_binding_form(line: str) -> None:
    source = ("def host(x):\n" + "".join(f"    {row}\n" for row in line.splitlines())).encode()
    assert "kernel" in _body_bindings(_functions(source)[0])
    assert _may_bind(source, "kernel")
    for other in ("kernél", "élan", "kerné", "кернел"):  # the non-ASCII path, at either end of the name
        renamed = source.replace(b"kernel", other.encode())
        assert other in _body_bindings(_functions(renamed)[0]) and _may_bind(renamed, other), other


LAUNCHED = '''
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets))


def launch(x):
{inner}
    add_kernel[(1,)](x, x.numel(), BLOCK=128, num_warps=3)
'''


@pytest.mark.parametrize("inner, shadowed", [
    # Bound only in a nested scope, or only read: still the module's kernel, so its launch is checked.
    ("    class Options:\n        add_kernel = None", False),
    ("    squares = [add_kernel for add_kernel in range(3)]", False),
    ("    with open('f') as handle:\n        print(add_kernel, handle)", False),
    # Rebound in the launching function: it may launch anything, so nothing is said of it.
    ("    with pick() as add_kernel:\n        pass", True),
    ("    from other import add_kernel", True),
    ("    add_kernel += 0", True),
])
def test_a_launch_is_checked_unless_the_launching_function_rebinds_its_name(inner: str, shadowed: bool) -> None:
    from tritonsmith.rules import Matcher, load_rules, pack_paths

    source = LAUNCHED.format(inner=inner)
    matcher = Matcher(load_rules(pack_paths(None, include_user=False)), version=(3, 9))
    codes = [f.code for f in matcher.check_source(source)]
    assert ("TS901" in codes) is not shadowed, codes  # num_warps=3 is not a power of 2
