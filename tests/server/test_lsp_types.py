"""The cache of attrs' generated methods for lsprotocol (server/lsp_types.py): written on the
first start, read (and not rewritten) on the next, and harmless when corrupt."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import attr._make

# Run in a child: the server package imports lsprotocol through the cache as it loads.
PROBE = """
import sys
from tritonsmith.server.lsp_types import import_lsprotocol_types
import_lsprotocol_types()  # what the server does before anything imports lsprotocol
from lsprotocol import types
from pygls.protocol import default_converter

a = types.Position(line=1, character=2)
assert a == types.Position(1, 2) and a != types.Position(1, 3)
command = types.Command(title="t", command="c")
assert repr(command) == "Command(title='t', command='c', tooltip=None, arguments=None)", repr(command)
params = types.PublishDiagnosticsParams(uri="file:///k.py", diagnostics=[
    types.Diagnostic(range=types.Range(a, a), message="m", severity=types.DiagnosticSeverity.Error)])
converter = default_converter()
plain = converter.unstructure(params)
assert plain["diagnostics"][0]["range"]["start"] == {"line": 1, "character": 2}, plain
assert converter.unstructure(converter.structure(plain, types.PublishDiagnosticsParams)) == plain
print(sys.modules["tritonsmith.server.lsp_types"].cache_path())
"""


def _start(cache_home: Path) -> Path:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache_home))
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


def test_attrs_still_has_the_hook_the_cache_uses() -> None:
    # If an attrs release renames it, the server still starts (a plain import), only slower:
    # this test says so instead.
    assert callable(attr._make._compile_and_eval)


def test_written_once_then_reused(tmp_path: Path) -> None:
    path = _start(tmp_path)
    assert path.is_relative_to(tmp_path) and path.is_file()
    with path.open("rb") as f:
        cache = marshal.load(f)
    assert len(cache) > 500  # lsprotocol's classes' generated methods
    assert all(isinstance(key, bytes) and len(key) == 16 for key in cache)  # digests of the texts
    written = path.stat().st_mtime_ns
    os.utime(path, ns=(written - 10**9, written - 10**9))
    assert _start(tmp_path) == path
    assert path.stat().st_mtime_ns == written - 10**9  # every method came from the cache: not rewritten


def test_a_corrupt_cache_is_replaced(tmp_path: Path) -> None:
    path = _start(tmp_path)
    path.write_bytes(b"\x00not marshal")
    assert _start(tmp_path) == path
    with path.open("rb") as f:
        assert len(marshal.load(f)) > 500
