"""`tritonsmith serve`: the language server (server/), on stdio or TCP. The server package is
imported only when the command runs."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any) -> None:
    serve = commands.add_parser("serve", help="run the language server (stdio by default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    serve.add_argument("--log-file", metavar="FILE", help="write the log here instead of stderr")
    # vscode-languageclient appends --stdio when told the transport explicitly.
    serve.add_argument("--stdio", action="store_true", help="use stdio (the default)")
    serve.set_defaults(handler=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from ..server import serve

    return serve(tcp=args.tcp, log_file=args.log_file)
