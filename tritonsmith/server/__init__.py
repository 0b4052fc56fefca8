"""The pygls language server. Never imports torch or triton (a test enforces it)."""

from __future__ import annotations

import logging
import sys

from .lsp_types import import_lsprotocol_types

import_lsprotocol_types()  # before anything imports it: about half the server's start-up (lsp_types.py)

from .server import TritonsmithServer  # noqa: E402

__all__ = ["TritonsmithServer", "configure_logging", "create_server", "serve"]


def create_server() -> TritonsmithServer:
    from .features import register_all

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
    server = create_server()
    from .._runtime import tune_gc

    tune_gc()
    from .transport import serve_stdio, serve_tcp

    if tcp:
        host, _, port = tcp.rpartition(":")
        serve_tcp(server, server.framer, host or "127.0.0.1", int(port))
    else:
        serve_stdio(server, server.framer)
    return 1 if getattr(server.protocol, "exit_without_shutdown", False) else 0
