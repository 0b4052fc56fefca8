"""The pygls language server. Never imports torch or triton (a test enforces it).

Importing this package imports neither pygls nor lsprotocol: `serve` answers the client's first
messages before they load (early.py). `create_server` (and `TritonsmithServer`) import them."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import TritonsmithServer

__all__ = ["TritonsmithServer", "configure_logging", "create_server", "serve"]


def __getattr__(name: str) -> Any:
    if name == "TritonsmithServer":
        _import_server_types()
        from .server import TritonsmithServer

        return TritonsmithServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _import_server_types() -> None:
    from .lsp_types import import_lsprotocol_types

    import_lsprotocol_types()  # before anything imports it: about half the server's start-up (lsp_types.py)


def create_server() -> TritonsmithServer:
    _import_server_types()
    from .features import register_all
    from .server import TritonsmithServer

    server = TritonsmithServer()
    register_all(server)
    return server


class _PyglsNoise(logging.Filter):
    """pygls warns for every `$/cancelRequest` of a request it already answered ("Cancel
    notification for unknown message id"): normal traffic (an editor cancels stale hovers and
    code actions all the time), not something a user can act on."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Cancel notification for unknown message id")


def configure_logging(log_file: str | None = None) -> None:
    """Log to stderr (the editor's output channel, which stamps each line with its own time)
    or to `log_file` (with the time)."""
    logging.basicConfig(
        level=logging.INFO,
        format=("%(asctime)s " if log_file else "") + "%(levelname)s %(name)s: %(message)s",
        force=True,
        **({"filename": log_file} if log_file else {"stream": sys.stderr}),
    )
    # pygls logs every message it sends at INFO: far too much for an output channel, and slow.
    pygls = logging.getLogger("pygls")
    pygls.setLevel(logging.WARNING)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_PyglsNoise())


def serve(*, tcp: str | None = None, log_file: str | None = None) -> int:
    """Run the server over stdio, or on TCP `HOST:PORT`; log to stderr or `log_file`. Returns
    the exit status: 1 when the client asked it to exit without a shutdown request first (the
    LSP specification's rule), else 0."""
    configure_logging(log_file)
    from .transport import serve_stdio, serve_tcp

    server: TritonsmithServer | None
    if tcp:
        server = _made()
        host, _, port = tcp.rpartition(":")
        serve_tcp(server, server.framer, host or "127.0.0.1", int(port))
    else:
        server = serve_stdio(_made)
    return 1 if server is not None and getattr(server.protocol, "exit_without_shutdown", False) else 0


def _made() -> TritonsmithServer:
    """The full server, with the collector tuned once its imports are in (`_runtime.tune_gc`)."""
    from .._runtime import tune_gc

    server = create_server()
    tune_gc()
    return server
