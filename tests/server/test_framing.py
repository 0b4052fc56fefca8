"""The language server survives any byte stream (issue 17, item 1): framing, limits, errors."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from typing import Any

import pytest

from tritonsmith.server.framing import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    Framer,
    dispatch,
)


def frame(message: dict[str, Any] | bytes, *, newline: bytes = b"\r\n", length: int | None = None) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d" % (len(body) if length is None else length) + newline + newline + body


PING = {"jsonrpc": "2.0", "id": 7, "method": "shutdown"}


def bodies(items: list[Any]) -> list[Any]:
    return [json.loads(i) if isinstance(i, bytes) else i[0] for i in items]


def test_crlf_lf_and_any_case_headers_frame_alike() -> None:
    stream = frame(PING) + frame(PING, newline=b"\n") + b"content-length:  %d\r\nContent-Type: x\r\n\r\n" % len(
        json.dumps(PING)) + json.dumps(PING).encode()
    assert bodies(Framer().feed(stream)) == [PING, PING, PING]


def test_a_stream_fed_byte_by_byte_frames_the_same() -> None:
    stream = frame(PING) * 3
    framer, out = Framer(), []
    for byte in stream:
        out += framer.feed(bytes([byte]))
    assert bodies(out) == [PING] * 3


def test_a_message_over_the_limit_is_refused_unread_and_the_next_one_arrives() -> None:
    framer = Framer(max_bytes=1000)
    out = framer.feed(b"Content-Length: 1000000000000\r\n\r\n" + b"x" * 5000)
    assert out == [(INVALID_REQUEST, "a message of 1000000000000 bytes, over the 1000-byte limit (the maxMessageMb "
                                     "setting); skipped")]
    assert len(framer._buffer) < 100  # nothing of the big body is kept
    assert bodies(framer.feed(b"y" * 5000 + frame(PING))) == [PING]


def test_a_header_without_length_and_garbage_are_skipped() -> None:
    framer = Framer()
    out = framer.feed(b"Content-Type: application/json\r\n\r\n" + frame(PING))
    assert out[0][0] == INVALID_REQUEST and "without Content-Length" in out[0][1]
    assert bodies(out[1:]) == [PING]
    assert bodies(Framer().feed(b"garbage " * 20 + b"\r\n" + frame(PING))) == [PING]  # junk lines: ignored
    junk = Framer().feed(b"garbage" * 2000)  # no header in sight: refused once, then skipped
    assert junk == [(INVALID_REQUEST, "no message header in 14000 bytes; skipped")]


def test_a_length_too_small_costs_one_message_not_the_session() -> None:
    framer = Framer()
    out = framer.feed(frame(PING, length=10) + frame(PING) + frame(PING))
    assert out[0] == json.dumps(PING).encode()[:10]  # not JSON: dispatch answers it with a parse error
    assert json.loads(out[-1]) == PING  # the leftover bytes are skipped, the stream is back in step


class _Protocol:
    def __init__(self) -> None:
        self.handled: list[Any] = []

    def structure_message(self, data: dict[str, Any]) -> Any:
        if data.get("method") == "bad" and "params" in data:
            raise ValueError("params do not decode")
        return data

    def handle_message(self, message: Any) -> None:
        self.handled.append(message)


@pytest.mark.parametrize(("body", "code", "msg_id"), [
    (b"{not json", PARSE_ERROR, None),
    (b"[1, 2]", INVALID_REQUEST, None),
    (b'{"id": 3, "method": "x"}', INVALID_REQUEST, 3),
    (b'{"jsonrpc": "2.0", "id": 4, "method": "bad", "params": {}}', INVALID_PARAMS, 4),
])
def test_malformed_bodies_are_answered_per_json_rpc(body: bytes, code: int, msg_id: Any) -> None:
    written: list[bytes] = []
    protocol = _Protocol()
    dispatch(body, protocol, written.append)
    [reply] = written
    answer = json.loads(reply.split(b"\r\n\r\n", 1)[1])
    assert answer["error"]["code"] == code and answer["id"] == msg_id
    assert protocol.handled == []


def _server(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "tritonsmith", "serve", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _read_message(proc: subprocess.Popen[bytes], timeout: float = 30) -> dict[str, Any]:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    header = b""
    while not header.endswith(b"\r\n\r\n"):
        assert time.monotonic() < deadline
        header += proc.stdout.read(1)
    length = int(header.split(b":")[1].split(b"\r\n")[0])
    return json.loads(proc.stdout.read(length))


def _until_id(proc: subprocess.Popen[bytes], msg_id: Any) -> dict[str, Any]:
    while True:
        message = _read_message(proc)
        if "id" in message and "method" not in message and message["id"] == msg_id:
            return message


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None,
                                                                           "capabilities": {}}}


def test_the_server_answers_a_huge_length_and_keeps_serving() -> None:
    proc = _server()
    assert proc.stdin is not None
    try:
        proc.stdin.write(b"Content-Length: 1000000000000\r\n\r\n" + b"x" * 1000 + b"\r\n" + frame(INITIALIZE))
        proc.stdin.flush()
        refused = _read_message(proc)
        assert refused["id"] is None and refused["error"]["code"] == INVALID_REQUEST
        assert "capabilities" in _until_id(proc, 1)["result"]
        proc.stdin.write(frame(b"{oops") + frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        proc.stdin.flush()
        assert _read_message(proc)["error"]["code"] == PARSE_ERROR
        assert _until_id(proc, 2)["result"] is None
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.close()
        assert proc.wait(30) == 0  # exit after shutdown
    finally:
        proc.kill()
        proc.wait()


def test_exit_without_shutdown_ends_with_status_1() -> None:
    proc = _server()
    assert proc.stdin is not None
    try:
        proc.stdin.write(frame(INITIALIZE))
        proc.stdin.flush()
        _until_id(proc, 1)
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.close()
        assert proc.wait(30) == 1
    finally:
        proc.kill()
        proc.wait()


def test_notifications_leave_no_future_behind() -> None:
    """pygls 2.1 keeps every notification handler's future for good (about 2 KB per edit)."""
    from tritonsmith.server import create_server

    server = create_server()
    sent: list[bytes] = []

    class Writer:
        def write(self, data: bytes) -> None:
            sent.append(data)

        def close(self) -> None:
            pass

    server.protocol.set_writer(Writer())
    uri = "file:///tmp/leak_probe.py"
    messages = [INITIALIZE, {"jsonrpc": "2.0", "method": "initialized", "params": {}},
                {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
                    "uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}}}]
    messages += [{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri, "version": v}, "contentChanges": [{"text": f"x = {v}\n"}]}}
        for v in range(2, 302)]

    async def run() -> int:
        for message in messages:
            dispatch(json.dumps(message).encode(), server.protocol, sent.append)
            await asyncio.sleep(0)
        await asyncio.sleep(1.0)
        return len(server.protocol._request_futures)

    try:
        assert asyncio.run(run()) <= 2  # what may still be running, not one per notification
    finally:
        server.shutdown()


def _notify(method: str, params: dict[str, Any]) -> bytes:
    return frame({"jsonrpc": "2.0", "method": method, "params": params})


def test_a_burst_of_edits_is_checked_once_and_odd_input_is_survived(tmp_path: Any) -> None:
    """Issue 17, items 2 and 4: edits queued together are applied before one check; an edit to a
    document that is not open is logged, not shown as a server error; an edit with positions
    out of range is clamped and applied, so the text stays the client's."""
    proc = _server()
    assert proc.stdin is not None
    uri = (tmp_path / "burst.py").as_uri()
    kernel = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr):\n    x = 1\n"
    try:
        proc.stdin.write(frame(INITIALIZE) + _notify("initialized", {}))
        proc.stdin.flush()
        _until_id(proc, 1)
        burst = _notify("textDocument/didChange", {"textDocument": {"uri": uri + "x", "version": 2},
                                                   "contentChanges": [{"text": "x"}]})
        burst += _notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                   "text": kernel}})
        for version in range(2, 202):
            burst += _notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                        "contentChanges": [{"range": {
                                                            "start": {"line": 6, "character": 8},
                                                            "end": {"line": 6, "character": 9}},
                                                            "text": str(version % 10)}]})
        burst += _notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 202}, "contentChanges": [
            {"range": {"start": {"line": -1, "character": -5}, "end": {"line": 0, "character": 0}}, "text": "#\n"},
            {"range": {"start": {"line": 2**31 + 5, "character": 0}, "end": {"line": 2**32, "character": 2**40}},
             "text": "y = 2\n"}]})
        proc.stdin.write(burst)
        proc.stdin.flush()
        publishes, errors = [], []
        while True:
            message = _read_message(proc, timeout=60)
            if message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri:
                publishes.append(message["params"].get("version"))
                if message["params"].get("version") == 202:
                    break
            if message.get("method") == "window/showMessage" and message["params"]["type"] == 1:
                errors.append(message["params"]["message"])
        assert len(publishes) <= 5, publishes  # not one check per edit
        assert errors == []
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 9, "method": "textDocument/hover", "params": {
            "textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}}))
        proc.stdin.flush()
        assert "error" not in _until_id(proc, 9)
    finally:
        proc.kill()
        proc.wait()
