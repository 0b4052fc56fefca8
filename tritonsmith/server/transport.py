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

Over stdio, the early phase (early.py) answers the first messages before the full server is
built, which then gets every message read so far. Whichever way a session ends,
`server.shutdown()` then cancels the searches. Stdin is read by a daemon thread:
a thread blocked in `os.read` must not hold the process open after `exit` or SIGTERM while the
client keeps its end of the pipe open (an executor's thread is joined at exit, and did so).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import queue
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, BinaryIO

from .framing import Framer, dispatch, error_response

if TYPE_CHECKING:
    from .early import Early, InitializeCache

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


class _StdinReader:
    """stdin's chunks (b"" at its end), read by a daemon thread: handed out one by one while no
    event loop runs (`next_chunk`, for the early phase), then to the loop (`attach`)."""

    def __init__(self, fd: int) -> None:
        self._sync: queue.Queue[bytes] = queue.Queue()
        self._lock = threading.Lock()
        self._deliver: Callable[[bytes], None] | None = None
        self._ended = False
        threading.Thread(target=self._read, args=(fd,), name="tritonsmith-stdin", daemon=True).start()

    def _read(self, fd: int) -> None:
        while True:
            try:
                data = os.read(fd, CHUNK_BYTES)
            except OSError:
                data = b""
            with self._lock:
                deliver = self._deliver
                if deliver is None:
                    self._sync.put(data)
            if deliver is not None:
                try:  # waits while the loop's queue is full; the loop gone (the server stopping) ends the thread
                    deliver(data)
                except (RuntimeError, asyncio.CancelledError, concurrent.futures.CancelledError):
                    return
            if not data:
                return

    def next_chunk(self, timeout: float | None) -> bytes | None:
        try:
            data = self._sync.get(timeout=timeout)
        except queue.Empty:
            return None
        self._ended = self._ended or not data
        return data

    def attach(self) -> Callable[[], Awaitable[bytes]]:
        """From now on the chunks go to the running loop: what `read_messages` awaits."""
        loop = asyncio.get_running_loop()
        with self._lock:
            # What the early phase left unread goes first, whatever its size (it is read
            # already); past it, a client sending faster than the loop reads waits on the pipe.
            backlog = [b""] if self._ended else []
            while True:
                try:
                    backlog.append(self._sync.get_nowait())
                except queue.Empty:
                    break
            chunks: asyncio.Queue[bytes] = asyncio.Queue(max(QUEUED_CHUNKS, len(backlog)))
            for data in backlog:
                chunks.put_nowait(data)
            self._deliver = lambda data: asyncio.run_coroutine_threadsafe(chunks.put(data), loop).result()
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


class _HandOver:
    """The writer the full server gets after the early phase (early.py): its answers to the
    requests the early phase answered are dropped; when the early phase could not answer
    `initialize` (a cache miss), the full server's answer goes out and is kept for the next
    start. Every other message passes untouched."""

    # The answers sought come among the first messages the full server writes (it is handed the
    # early phase's requests before anything else); past this many, stop parsing what goes out.
    WATCHED = 64

    def __init__(self, out: _StdoutWriter, early: Early, cache: InitializeCache) -> None:
        self._out, self._cache = out, cache
        self._drop = set(early.answered)
        self._record = early.initialize if early.initialize is not None and not early.answered else None
        self._left = self.WATCHED

    def close(self) -> None:
        self._out.close()

    def write(self, data: bytes) -> None:
        if self._left and (self._drop or self._record is not None):
            self._left -= 1
            try:
                message = json.loads(data.split(b"\r\n\r\n", 1)[1])
            except (IndexError, ValueError):
                message = None
            if isinstance(message, dict) and "method" not in message:
                if message.get("id") in self._drop:
                    self._drop.discard(message.get("id"))
                    return
                if self._record is not None and message.get("id") == self._record["id"]:
                    if isinstance(message.get("result"), dict):
                        self._cache.put(self._record.get("params") or {}, message["result"])
                    self._record = None
        self._out.write(data)


def serve_stdio(make_server: Callable[[], Any]) -> Any | None:
    """Serve the client on stdin/stdout: the early phase (early.py), then the server
    `make_server` builds, which is handed every message read so far. Returns that server when
    the client closes its end, sends `exit`, or SIGTERM arrives; None when SIGTERM came before
    it was built."""
    from .early import InitializeCache, answer_early

    reader = _StdinReader(sys.stdin.buffer.fileno())
    framer = Framer()
    out = _StdoutWriter(sys.stdout.buffer)
    cache = InitializeCache()
    try:
        early = answer_early(reader.next_chunk, framer, out.write, cache)
    except KeyboardInterrupt:  # SIGTERM or Ctrl-C before the full server exists: nothing to stop
        return None
    server = make_server()
    server.session.adopt_early(early.checked)
    early.checked = None  # the session holds it until it takes it up; `main` below lives as long as the server
    framer.max_bytes = server.framer.max_bytes
    server.framer = framer  # it holds what was read past the early phase's last message
    server._stop_event = stop = threading.Event()  # pygls' shutdown sets it
    server.protocol.set_writer(_HandOver(out, early, cache))

    async def main() -> None:
        for body in early.bodies:
            dispatch(body, server.protocol, out.write)
        early.bodies.clear()  # a large file's didOpen among them: not kept for the whole session
        if early.answered:  # the client has early answers and may act on them now
            server.session.check_open_documents()
        await read_messages(reader.attach(), stop, server.protocol, out.write, framer)

    _run(main, server)
    return server


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
