"""The architecture's invariants (docs/ARCHITECTURE.md), checked."""

from __future__ import annotations

import subprocess
import sys
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
    offenders = [
        p for p in (ROOT / "tritonsmith").rglob("*.py")
        if "server" not in p.relative_to(ROOT / "tritonsmith").parts[:1]
        and ("lsprotocol" in p.read_text() or "pygls" in p.read_text())
        and p.name != "cli.py"
    ]
    assert offenders == []


def test_rule_docs_are_up_to_date():
    from tritonsmith.rules.docs import check_docs

    stale = check_docs(ROOT / "docs" / "rules")
    assert stale == [], f"run `tritonsmith rules docs`; stale: {stale}"
