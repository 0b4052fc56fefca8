"""The pygls language server. Never imports torch or triton (a test enforces it)."""

from __future__ import annotations

import logging
import sys

from .lsp_types import import_lsprotocol_types

import_lsprotocol_types()  # before anything imports it: about half the server's start-up (lsp_types.py)

from .server import TritonsmithServer  # noqa: E402

__all__ = ["TritonsmithServer", "create_server", "serve"]


def create_server() -> TritonsmithServer:
    from .features import register_all

    server = TritonsmithServer()
    register_all(server)
    return server


def serve(*, tcp: str | None = None, log_file: str | None = None) -> None:
    """Run the server over stdio, or on TCP `HOST:PORT`; log to stderr or `log_file`."""
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
        **({"filename": log_file} if log_file else {"stream": sys.stderr}),
    )
    # pygls logs every message it sends at INFO: far too much for an output channel, and slow.
    logging.getLogger("pygls").setLevel(logging.WARNING)
    server = create_server()
    from .._runtime import tune_gc

    tune_gc()
    if tcp:
        host, _, port = tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
