"""The architecture's invariants (docs/ARCHITECTURE.md), checked."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_server_never_imports_torch_or_triton():
    code = (
        "import sys, tritonsmith.server, tritonsmith.cli, tritonsmith.workspace\n"
        "tritonsmith.server.create_server()\n"
        "from tritonsmith.workspace import Workspace\n"
        "from tritonsmith.settings import Settings\n"
        "Workspace(None, Settings()).check_source(open(sys.argv[1]).read())\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('torch', 'triton')]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code, str(ROOT / "examples" / "mistakes" / "softmax.py")], check=True, timeout=60)


FIRST_DIAGNOSTICS = """
import asyncio, json, sys
from collections.abc import Iterator
from pathlib import Path
import tritonsmith.cli
import tritonsmith.workspace
from tritonsmith.server import create_server
from tritonsmith.server.framing import dispatch

reads = []
load_rules = tritonsmith.workspace.load_rules
tritonsmith.workspace.load_rules = lambda *args: reads.append(args) or load_rules(*args)
server = create_server()
sent = []

class Writer:
    def write(self, data):
        sent.append(json.loads(data.split(b"\\r\\n\\r\\n", 1)[1]))
    def close(self):
        pass

def frame(message):
    return json.dumps({"jsonrpc": "2.0", **message}).encode()

async def main():
    server.protocol.set_writer(Writer())
    path = Path(sys.argv[1])
    dispatch(frame({"id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {},
                    "rootUri": path.parent.as_uri()}}), server.protocol, server.protocol.writer.write)
    dispatch(frame({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": path.as_uri(), "languageId": "python", "version": 1, "text": path.read_text()}}}),
        server.protocol, server.protocol.writer.write)
    for _ in range(2000):
        if any(m.get("method") == "textDocument/publishDiagnostics" and m["params"]["diagnostics"] for m in sent):
            return
        await asyncio.sleep(0.005)
    raise SystemExit("no diagnostics")

asyncio.run(main())
late = [m for m in sys.modules if m.startswith(("tritonsmith.adapt", "tritonsmith.search", "tritonsmith.evaluator"))]
assert not late, late
assert len(reads) == 1, f"the rule packs were read {len(reads)} times"
"""


def test_first_diagnostics_leave_the_evaluator_adaptation_and_search_unloaded():
    # What the first diagnostics do not need loads on the first save, search or request that
    # needs it (cold start: the evaluator package alone is ~40 ms of imports), and the rule
    # packs are read once, at `initialize`.
    subprocess.run([sys.executable, "-c", FIRST_DIAGNOSTICS, str(ROOT / "examples" / "mistakes" / "softmax.py")],
                   check=True, timeout=60)


# docs/ARCHITECTURE.md, "Layers": each package and the ones it must never import, even inside
# a function (adapt may import search inside functions to run searches; that is the one
# deliberate exception, so adapt is not listed).
LAYERS = {
    "analysis": ("rules", "state", "evaluator", "search", "adapt", "server"),
    "rules": ("state", "evaluator", "search", "adapt", "server"),
    "state": ("evaluator", "search", "adapt", "server"),
    "evaluator": ("state", "search", "adapt", "server"),
    "search": ("adapt", "server"),
}


def _imported_packages(path: Path) -> set[str]:
    import ast

    package = path.relative_to(ROOT).with_suffix("").parts  # ("tritonsmith", "state", "db")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = package[: len(package) - node.level]
                target = (*base, *(node.module or "").split(".")) if node.module else base
            else:
                target = tuple((node.module or "").split("."))
            names = [target] if node.module else [(*target, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [tuple(alias.name.split(".")) for alias in node.names]
        else:
            continue
        found |= {name[1] for name in names if len(name) > 1 and name[0] == "tritonsmith"}
    return found


def test_imports_flow_down_the_layers():
    crossings = []
    for layer, forbidden in LAYERS.items():
        for path in sorted((ROOT / "tritonsmith" / layer).rglob("*.py")):
            bad = _imported_packages(path) & set(forbidden)
            if bad:
                crossings.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert crossings == []


def test_only_server_imports_lsprotocol():
    """The protocol is the server package's; the command line's `serve` (cli/serve.py) starts it."""
    offenders = [
        p for p in (ROOT / "tritonsmith").rglob("*.py")
        if "server" not in p.relative_to(ROOT / "tritonsmith").parts[:1]
        and ("lsprotocol" in p.read_text() or "pygls" in p.read_text())
        and p.relative_to(ROOT / "tritonsmith").parts != ("cli", "serve.py")
    ]
    assert offenders == []


def test_only_state_reads_the_state_database():
    """state.db has one home (docs/ARCHITECTURE.md): the rest of the package goes through state/."""
    offenders = [
        str(p.relative_to(ROOT)) for p in sorted((ROOT / "tritonsmith").rglob("*.py"))
        if p.relative_to(ROOT / "tritonsmith").parts[0] != "state" and "sqlite3" in p.read_text()
    ]
    assert offenders == []


def test_rule_docs_are_up_to_date():
    from tritonsmith.rules.docs import check_docs

    stale = check_docs(ROOT / "docs" / "rules")
    assert stale == [], f"run `tritonsmith rules docs`; stale: {stale}"


def _module_imports_for_the_type_checker_too() -> dict[str, set[str]]:
    return _module_imports(type_checking=True)


def _module_imports(type_checking: bool = False) -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports, at the top or inside a
    function (an import in an `if TYPE_CHECKING:` block is for the type checker only: counted
    only with `type_checking`)."""
    import ast

    modules: dict[str, Path] = {}
    for path in (ROOT / "tritonsmith").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def imports(node: ast.AST) -> Iterator[ast.AST]:
        for child in ast.iter_child_nodes(node):
            if not type_checking and isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from (n for c in child.orelse for n in [c, *imports(c)])
                continue
            yield child
            yield from imports(child)

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        found: set[str] = set()
        for node in imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
                # `from . import checks` names a module; `from .registry import Hit` names its module
                found |= {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules}
                if target in modules and not any(f"{target}.{a.name}" in modules for a in node.names):
                    found.add(target)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name in modules}
        graph[name] = found - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_import_cycle_between_modules():
    """At run time: an import under `if TYPE_CHECKING:` is the type checker's only."""
    assert _cycles(_module_imports()) == []


def test_distinct_classes_have_distinct_names():
    """Two classes of one name in two modules (a verification's verdict and a matcher's, a span's
    edit and a search's) make a reader check every import; each class and type alias is named
    once in the package."""
    import ast

    seen: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tritonsmith").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign) and isinstance(node.value, (ast.Subscript, ast.BinOp)):
                names = [t.id for t in node.targets if isinstance(t, ast.Name) and t.id[:1].isupper()]
            else:
                continue
            for name in names:
                seen.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def test_the_servers_collaborators_depend_on_the_session_not_the_server():
    """jobs, publishing and searches are handed the `Session` and pygls' `LanguageServer`
    (server/session.py), not `TritonsmithServer`, even for the type checker: the server builds
    them, so naming it would make a circle again."""
    graph = _module_imports_for_the_type_checker_too()
    named = [name for name in ("session", "jobs", "publish", "searches")
             if "tritonsmith.server.server" in graph[f"tritonsmith.server.{name}"]]
    assert named == []
