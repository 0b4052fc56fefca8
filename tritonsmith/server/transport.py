"""How the server talks to its client: over stdio, or over one TCP connection.

Both read through the `Framer` (framing.py) and hand each body to pygls' protocol, and both
end the same three ways, each without waiting on anything the client controls:

- the client closes its end (end of stdin, the socket closed): the loop returns;
- the client sends `exit`: pygls raises `SystemExit` out of the loop;
- SIGTERM (an editor stopping its server, `kill`): the main task is cancelled from inside the
  event loop (`loop.add_signal_handler`). The CLI's own SIGTERM handler raises
  `KeyboardInterrupt`, which is right for a command but not here: raised between two steps of the
  loop it can drop a callback, and the loop's clean-up then waits for ever on a task that will
  never be woken (`serve --tcp` hung so, one time in four on a busy machine).

Whichever way, `server.shutdown()` then cancels the searches. Stdin is read by a daemon thread:
a thread blocked in `os.read` must not hold the process open after `exit` or SIGTERM while the
client keeps its end of the pipe open (an executor's thread is joined at exit, and did so).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, BinaryIO

from .framing import Framer, dispatch, error_response

__all__ = ["serve_stdio", "serve_tcp"]

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 16
QUEUED_CHUNKS = 16  # stdin read ahead of the loop: at most 1 MiB, then the reading thread waits


async def read_messages(read: Callable[[], Awaitable[bytes]], stop: threading.Event, protocol: Any,
                        write: Callable[[bytes], None], framer: Framer) -> None:
    """Feed what `read` returns through `framer` to `protocol` until `read` returns b"" (the
    client's end is closed) or `stop` is set (pygls' `shutdown`)."""
    while not stop.is_set():
        data = await read()
        if not data:
            return
        for item in framer.feed(data):
            if isinstance(item, tuple):
                log.warning("LSP framing: %s", item[1])
                write(error_response(*item))
            else:
                dispatch(item, protocol, write)


def _read_in_background(fd: int) -> Callable[[], Awaitable[bytes]]:
    """`fd`'s chunks as they arrive (b"" at its end), read by a daemon thread."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue(QUEUED_CHUNKS)

    def reader() -> None:
        while True:
            try:
                data = os.read(fd, CHUNK_BYTES)
            except OSError:
                data = b""
            try:  # waits while the queue is full; the loop gone (the server stopping) ends the thread
                asyncio.run_coroutine_threadsafe(chunks.put(data), loop).result()
            except (RuntimeError, asyncio.CancelledError, TimeoutError):
                return
            if not data:
                return

    threading.Thread(target=reader, name="tritonsmith-stdin", daemon=True).start()
    return chunks.get


class _StdoutWriter:
    """What pygls writes its messages to."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def close(self) -> None:
        self._stream.close()

    def write(self, data: bytes) -> None:
        self._stream.write(data)
        self._stream.flush()


def _run(main: Callable[[], Coroutine[Any, Any, None]], server: Any) -> None:
    """Run `main` in a fresh event loop until it returns, the client sends `exit`, or SIGTERM
    arrives; then shut the server down."""

    async def until_stopped() -> None:
        task = asyncio.current_task()
        assert task is not None
        # Not available on Windows, nor off the main thread (a test's server): SIGTERM then
        # keeps the process' own handler.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        await main()

    try:
        asyncio.run(until_stopped())
    except asyncio.CancelledError:
        log.info("SIGTERM: the server stops")
    except BrokenPipeError:
        log.error("the client's end of the connection is gone; shutting down")
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C; `exit` (pygls raises SystemExit)
        pass
    finally:
        server.shutdown()


def serve_stdio(server: Any, framer: Framer) -> None:
    """Serve the client on stdin/stdout. Returns when the client closes its end, sends `exit`,
    or SIGTERM arrives."""
    server._stop_event = stop = threading.Event()  # pygls' shutdown sets it
    writer = _StdoutWriter(sys.stdout.buffer)
    server.protocol.set_writer(writer)

    async def main() -> None:
        await read_messages(_read_in_background(sys.stdin.buffer.fileno()), stop, server.protocol,
                            writer.write, framer)

    _run(main, server)


class _SocketWriter:
    def __init__(self, stream: asyncio.StreamWriter) -> None:
        self._stream = stream

    def close(self) -> None:
        self._stream.close()

    def write(self, data: bytes) -> None:
        self._stream.write(data)


def serve_tcp(server: Any, framer: Framer, host: str, port: int) -> None:
    """Listen on `host:port` and serve the first client to connect, as pygls' `start_tcp` does;
    return when it disconnects, sends `exit`, or SIGTERM arrives."""
    server._stop_event = stop = threading.Event()

    async def main() -> None:
        finished = asyncio.Event()

        async def session(reader: asyncio.StreamReader, stream: asyncio.StreamWriter) -> None:
            if finished.is_set() or server.protocol.writer is not None:  # one client at a time
                stream.close()
                return
            writer = _SocketWriter(stream)
            server.protocol.set_writer(writer)
            try:
                await read_messages(lambda: reader.read(CHUNK_BYTES), stop, server.protocol, writer.write, framer)
            except ConnectionError:
                log.error("the client's end of the connection is gone; shutting down")
            finally:
                finished.set()

        listening = await asyncio.start_server(session, host, port)
        log.info("listening on %s", ", ".join(str(s.getsockname()) for s in listening.sockets))
        async with listening:
            await finished.wait()

    _run(main, server)
