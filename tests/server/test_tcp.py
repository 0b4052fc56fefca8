"""`tritonsmith serve --tcp HOST:PORT` answers LSP over a socket."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.e2e


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read_message(conn: socket.socket) -> dict:
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        buffer += conn.recv(4096)
    header, _, rest = buffer.partition(b"\r\n\r\n")
    length = int(next(line for line in header.split(b"\r\n") if line.lower().startswith(b"content-length")).split(b":")[1])
    while len(rest) < length:
        rest += conn.recv(4096)
    return json.loads(rest[:length])


def test_serve_over_tcp(tmp_path):
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tritonsmith", "serve", "--tcp", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        with conn:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}}).encode()
            conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            reply = _read_message(conn)
        assert reply["id"] == 1
        assert reply["result"]["serverInfo"]["name"] == "tritonsmith"
        assert reply["result"]["capabilities"]["codeActionProvider"]
    finally:
        server.terminate()
        server.wait(timeout=10)
