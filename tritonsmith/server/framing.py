"""Reading LSP messages off a byte stream, whatever the client sends.

pygls' own loop (`pygls.io_.run_async`) trusts its client: `Content-Length: 1000000000000`
makes it allocate that much and die, a header without `Content-Length` or with LF-only line ends
leaves it waiting for ever, and a body that is not JSON is logged with a traceback but never
answered. `Framer` and `dispatch` replace it (transport.py reads the stream), with the same hand-over
to the protocol:

- Headers end with CRLF or LF; names are case-insensitive; anything else in the header block is
  ignored. A header block without a usable `Content-Length` is skipped and logged.
- A body over `max_bytes` is never read into memory: it is answered with a JSON-RPC error
  (`id: null`), and the stream is resynchronised at the next `Content-Length: N` header (one
  ends with a raw line break, which a JSON body cannot hold).
- A body that is not JSON gets a parse error (-32700), one that is not a JSON-RPC message an
  invalid-request error (-32600), a request whose parameters do not decode an invalid-params
  error (-32602) with its id. Each is logged once, in one line.
- Bytes that are neither headers nor body (a length too small leaves some) are skipped up to the
  next `Content-Length: N` header.

Nothing is lost that can be kept: each error costs the message it is about, never the session.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "Framer", "dispatch", "error_response"]

log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest message read by default (the `maxMessageMb` setting changes it): a whole file of
tens of megabytes fits, a length that is a bug or an attack does not."""

MAX_HEADER_BYTES = 8192
# A Content-Length header with its line break: a raw line break never occurs inside a JSON body
# (strings escape it), so a match is a header even in the middle of bytes being skipped.
_CONTENT_LENGTH = re.compile(rb"(?i)content-length[ \t]*:[ \t]*([0-9]+)[ \t]*\r?\n")
_HEADER_END = re.compile(rb"\r?\n\r?\n")

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


class Framer:
    """Splits a byte stream into message bodies; `feed` bytes in, `messages` out.

    A pure state machine (no I/O), so that every framing case can be tested byte by byte.
    Problems are returned as `(code, text)` errors next to the bodies, in stream order.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._buffer = bytearray()
        self._body_length: int | None = None  # reading a body of this many bytes
        self._skipping = False  # dropping bytes up to the next Content-Length header

    def feed(self, data: bytes) -> list[bytes | tuple[int, str]]:
        self._buffer += data
        out: list[bytes | tuple[int, str]] = []
        while True:
            if self._skipping and not self._resync():
                return out
            if self._body_length is not None:
                if len(self._buffer) < self._body_length:
                    return out
                out.append(bytes(self._buffer[: self._body_length]))
                del self._buffer[: self._body_length]
                self._body_length = None
                continue
            end = _HEADER_END.search(self._buffer)
            if end is None:
                if len(self._buffer) > MAX_HEADER_BYTES:
                    out.append((INVALID_REQUEST, f"no message header in {len(self._buffer)} bytes; skipped"))
                    self._skipping = True
                    continue
                return out
            header = bytes(self._buffer[: end.start()]) + b"\n"
            del self._buffer[: end.end()]
            if not header.strip():
                continue  # blank lines between messages
            # The last one: bytes before it are the rest of something broken.
            found = next(reversed(list(_CONTENT_LENGTH.finditer(header))), None)
            if found is None:
                out.append((INVALID_REQUEST, f"a message header without Content-Length ({_show(header)}); skipped"))
                continue
            length = int(found.group(1))
            if length > self.max_bytes:
                out.append((INVALID_REQUEST, f"a message of {length} bytes, over the {self.max_bytes}-byte limit "
                                             "(the maxMessageMb setting); skipped"))
                self._skipping = True
                continue
            self._body_length = length

    def _resync(self) -> bool:
        """Drop bytes up to the next `Content-Length: N` header; True once found."""
        found = _CONTENT_LENGTH.search(self._buffer)
        if found is None:
            keep = 64  # a header split across two reads
            del self._buffer[: max(0, len(self._buffer) - keep)]
            return False
        del self._buffer[: found.start()]
        self._skipping = False
        return True


def _show(data: bytes) -> str:
    return repr(data[:80])[2:-1] + ("..." if len(data) > 80 else "")


def error_response(code: int, message: str, msg_id: Any = None) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def dispatch(body: bytes, protocol: Any, write: Callable[[bytes], None]) -> None:
    """Hand one body to the pygls protocol, answering what it cannot take. A well-formed
    message is parsed once; the raw JSON is read again only to answer a broken one."""
    try:
        message = json.loads(body, object_hook=protocol.structure_message)
    except json.JSONDecodeError as error:
        log.warning("a message that is not JSON (%s): %s; answered with a parse error", error, _show(body))
        write(error_response(PARSE_ERROR, f"parse error: {error}"))
        return
    except Exception as error:  # a JSON-RPC message whose params do not decode into the method's types
        raw = json.loads(body)
        if not _is_request_or_notification(raw):
            _invalid(raw, body, write)
            return
        try:
            # A position past the protocol's range (negative, 2**31 or more) is clamped, not the
            # edit dropped: a dropped edit leaves the server's text out of step for good.
            message = json.loads(json.dumps(_clamp_positions(raw)), object_hook=protocol.structure_message)
            log.warning("%s: positions out of range clamped", raw.get("method", "a message"))
        except Exception:
            log.warning("%s with parameters that do not decode: %s", raw.get("method", "a message"), error)
            if "id" in raw and "method" in raw:  # a request: it waits for an answer
                write(error_response(INVALID_PARAMS, f"invalid params for {raw['method']}: {error}", raw["id"]))
            return
    # pygls leaves a value it cannot read as a message (no "jsonrpc" key, not an object) as it is.
    if isinstance(message, (dict, list, str, int, float, bool)) or message is None or \
            getattr(message, "jsonrpc", None) != "2.0" or not (getattr(message, "method", None) or hasattr(message, "id")):
        _invalid(json.loads(body), body, write)
        return
    try:
        protocol.handle_message(message)
    except Exception:
        log.exception("could not handle %s", getattr(message, "method", "a response"))


def _is_request_or_notification(raw: Any) -> bool:
    return isinstance(raw, dict) and raw.get("jsonrpc") == "2.0" and ("method" in raw or "id" in raw)


def _invalid(raw: Any, body: bytes, write: Callable[[bytes], None]) -> None:
    log.warning("not a JSON-RPC 2.0 message: %s; answered with an invalid-request error", _show(body))
    write(error_response(INVALID_REQUEST, "invalid request: not a JSON-RPC 2.0 message",
                         raw.get("id") if isinstance(raw, dict) else None))


MAX_POSITION = 2**31 - 1


def _clamp_positions(value: Any) -> Any:
    """`value` with every `line` and `character` integer clamped to 0..2**31-1 (the document
    clamps them further, to its own lines)."""
    if isinstance(value, dict):
        return {k: (min(max(v, 0), MAX_POSITION) if k in ("line", "character") and isinstance(v, int)
                    else _clamp_positions(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_clamp_positions(v) for v in value]
    return value
