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


def test_server_start_leaves_adaptation_and_search_unloaded():
    # What the first diagnostics do not need loads on the first save or search (cold start).
    code = (
        "import sys, tritonsmith.server, tritonsmith.cli\n"
        "tritonsmith.server.create_server()\n"
        "late = [m for m in sys.modules if m.startswith(('tritonsmith.adapt', 'tritonsmith.search'))]\n"
        "assert not late, late\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


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
