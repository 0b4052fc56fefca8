"""`tritonsmith`: the command line.

    tritonsmith check PATH... [--format text|json|sarif] [--select ...] [--ignore ...] [--fix]
    tritonsmith rules list | show ID | import FILE | docs [--check] | review [--accept|--reject CODE]
    tritonsmith adapt induce [PATH] | graduate CODE | run [TASKS] [--steps N] [--synthesize N] ...
    tritonsmith verify FILE [--device auto|gpu|cpu] ...
    tritonsmith optimize FILE --kernel NAME [--steps N] [--proposer ...] [--resume ID] [--out PATCH]
    tritonsmith serve [--tcp HOST:PORT]

`check` exits 0 when clean, 1 with findings, 2 on a usage error (argparse's convention).

One module per subcommand, each adding its own parser (`register`) and holding its handler
(`cmd_*`): `check.py` (with its result cache and parallel checkers), `rules.py`, `adapt.py`
(`adapt induce | graduate | run` and `rules review`), `verify.py`, `predict.py`, `optimize.py`,
`bench.py`, `serve.py`; what several share (settings, workspace, rule options) is in
`common.py`. Here: the parser, in the order of `--help`, and `main`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import TritonsmithError, UsageError
from . import bench, check, optimize, predict, rules, serve, verify

# The rules, the report, the workspace and the evaluator are imported where they are used, inside
# the commands: `--help`, `verify` and `serve`'s start do not wait 0.1 s for the rules to import,
# and starting the command line imports neither torch nor triton.

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tritonsmith", description="Triton kernel linter and language server.")
    parser.add_argument("--version", action="version", version=f"tritonsmith {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    check.register(commands)
    rules_commands = rules.register(commands)
    # Here, not at the top: adapt.py imports the adapt package, which importing `tritonsmith.cli`
    # alone (the server's tests, a library user) should not.
    from . import adapt  # `adapt induce`, `rules review`

    adapt.register(commands, rules_commands)
    verify.register(commands)
    predict.register(commands)
    optimize.register(commands)
    bench.register(commands)
    serve.register(commands)
    return parser


def _exit_without_teardown(code: int) -> None:
    """End `check` without the interpreter's teardown: freeing a large file's tree, index and
    findings object by object took 0.17-0.25 s of a 2 s check of 55,000 lines, and nothing is
    left to run by then (forked children are reaped, output is written). mypy does the same."""
    import logging

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    logging.shutdown()
    os._exit(code)


def _terminate_as_interrupt() -> None:
    """SIGTERM (a killed editor, `kill`, a CI timeout) unwinds like Ctrl-C, so every worker pool
    closes and removes its folder; Python's default would end the process on the spot, leaving
    them in the temporary directory."""
    import signal

    owner = os.getpid()

    def interrupt(signum: int, frame: object) -> None:
        if os.getpid() != owner:  # a forked checker (`check --jobs`): end as SIGTERM asks, quietly
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise KeyboardInterrupt

    with contextlib.suppress(ValueError):  # not the main thread
        signal.signal(signal.SIGTERM, interrupt)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if argv is None:  # run as the `tritonsmith` program, not called from someone's code
        from .._runtime import tune_gc

        tune_gc()
        _terminate_as_interrupt()
    try:
        code = int(args.handler(args))
        if argv is None and args.handler is check.cmd_check:
            _exit_without_teardown(code)
        return code
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM: the pools have closed and removed their folders
        print("tritonsmith: interrupted", file=sys.stderr)
        return 130
    except UsageError as error:
        print(f"tritonsmith: error: {error.user_message}", file=sys.stderr)
        return 2
    except TritonsmithError as error:
        print(f"tritonsmith: error: {error.user_message}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 1

