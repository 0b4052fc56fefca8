"""Import `lsprotocol.types` with the methods attrs generates for it cached on disk.

lsprotocol defines about 570 attrs classes. For each, attrs writes the source of `__init__`,
`__repr__`, `__eq__`, ... and calls `compile()` on it when the module is imported: most of the
server's import, and the same text every time. Python caches the bytecode of files
(`__pycache__`), not of generated text; this does that for attrs: the code objects are kept in
one `marshal` file in the user's cache, keyed by a digest of the exact generated text and its
pseudo file name (digests, not the texts: long string keys make the file slow to read), and
reused while the text is the same. A different attrs or lsprotocol writes different text (a
miss, compiled as usual, and the entries no longer used are dropped); the file is named after
the Python version (marshal's format is per version).

The file is trusted as `__pycache__` is: whoever can write the user's cache can run code in the
server. Only the import of `lsprotocol.types` is patched, and anything unexpected (an attrs
without the hook, an unreadable or corrupt cache) falls back to a plain import: the cache can
make the import faster, never different.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["cache_path", "import_lsprotocol_types"]

log = logging.getLogger(__name__)

def cache_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("tritonsmith", appauthor=False)) / f"attrs-methods-{sys.implementation.cache_tag}.marshal"


def _load(path: Path) -> dict[bytes, Any]:
    try:
        with path.open("rb") as f:
            cache = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    return cache if isinstance(cache, dict) else {}


def _save(path: Path, cache: dict[bytes, Any]) -> None:
    """Atomically: two servers starting at once each write a whole file, never a torn one."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            marshal.dump(cache, f)
        os.replace(tmp, path)
    except (OSError, ValueError):
        log.debug("attrs method cache not written to %s", path, exc_info=True)


def import_lsprotocol_types(path: Path | None = None) -> None:
    """Import `lsprotocol.types`, compiling attrs' generated methods only on a cache miss."""
    if "lsprotocol.types" in sys.modules:
        return
    try:
        import attr._make as make

        original = make._compile_and_eval
    except (ImportError, AttributeError):  # an attrs without the hook: import as usual
        import lsprotocol.types  # noqa: F401

        return
    path = cache_path() if path is None else path
    cache = _load(path)
    used: dict[bytes, Any] = {}  # what this import needed: entries of an older attrs are dropped

    def compile_and_eval(script: str, globs: Any, locs: Any = None, filename: str = "") -> None:
        key = hashlib.blake2b(f"{filename}\0{script}".encode(), digest_size=16).digest()
        code = cache.get(key)
        if code is None:
            code = compile(script, filename, "exec")
        used[key] = code
        eval(code, globs, locs)  # what attrs does with the code it compiles

    make._compile_and_eval = compile_and_eval
    try:
        import lsprotocol.types  # noqa: F401
    finally:
        make._compile_and_eval = original
    if used.keys() != cache.keys():
        _save(path, used)
