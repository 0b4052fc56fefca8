"""The server's two transports (transport.py): LSP over stdio and over one TCP connection, and
every way a session ends — the client closes its end, sends `exit`, or the process gets SIGTERM
— ends the process promptly, whatever the client does with its end meanwhile."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.e2e

SERVE = [sys.executable, "-m", "tritonsmith", "serve"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _frame(message: dict) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _initialize(root) -> bytes:
    return _frame({"id": 1, "method": "initialize",
                   "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}})


def _read_message(read) -> dict:
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        buffer += read(4096)
    header, _, rest = buffer.partition(b"\r\n\r\n")
    length = int(next(line for line in header.split(b"\r\n") if line.lower().startswith(b"content-length")).split(b":")[1])
    while len(rest) < length:
        rest += read(4096)
    return json.loads(rest[:length])


def _connect(port: int) -> socket.socket:
    deadline = time.monotonic() + 20
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=10)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _ends_within(server: subprocess.Popen, seconds: float) -> int:
    try:
        return server.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
        pytest.fail(f"the server was still running {seconds} s later")


def test_serve_over_tcp(tmp_path):
    port = _free_port()
    server = subprocess.Popen([*SERVE, "--tcp", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with _connect(port) as conn:
            conn.sendall(_initialize(tmp_path))
            reply = _read_message(conn.recv)
            assert reply["id"] == 1
            assert reply["result"]["serverInfo"]["name"] == "tritonsmith"
            assert reply["result"]["capabilities"]["codeActionProvider"]
            # A message the framing must answer, not pygls' loop (which would wait for ever):
            conn.sendall(b"Content-Length: 5\r\n\r\nnope!")
            assert _read_message(conn.recv)["error"]["code"] == -32700
        # The client closed its end: the session is over and so is the process.
        assert _ends_within(server, 20) == 0
    finally:
        server.kill()


@pytest.mark.parametrize("attempt", range(4))  # the hang this guards against came one time in four
def test_sigterm_ends_a_tcp_server_with_its_client_still_connected(tmp_path, attempt):
    port = _free_port()
    server = subprocess.Popen([*SERVE, "--tcp", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with _connect(port) as conn:
            conn.sendall(_initialize(tmp_path))
            assert _read_message(conn.recv)["id"] == 1
            server.send_signal(signal.SIGTERM)
            assert _ends_within(server, 10) == 0
    finally:
        server.kill()


def _stdio_server(tmp_path) -> subprocess.Popen:
    server = subprocess.Popen(SERVE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(_initialize(tmp_path))
    server.stdin.flush()
    assert _read_message(server.stdout.read1)["id"] == 1
    return server


@pytest.mark.parametrize("attempt", range(2))
def test_sigterm_ends_a_stdio_server_whose_client_keeps_stdin_open(tmp_path, attempt):
    server = _stdio_server(tmp_path)
    try:
        server.send_signal(signal.SIGTERM)
        assert _ends_within(server, 10) == 0
    finally:
        server.kill()


def test_exit_ends_a_stdio_server_whose_client_keeps_stdin_open(tmp_path):
    server = _stdio_server(tmp_path)
    try:
        server.stdin.write(_frame({"id": 2, "method": "shutdown"}))
        server.stdin.flush()
        assert _read_message(server.stdout.read1)["id"] == 2
        server.stdin.write(_frame({"method": "exit"}))
        server.stdin.flush()
        assert _ends_within(server, 10) == 0
    finally:
        server.kill()


def test_exit_without_shutdown_ends_the_process_with_status_1(tmp_path):
    server = _stdio_server(tmp_path)
    try:
        server.stdin.write(_frame({"method": "exit"}))
        server.stdin.flush()
        assert _ends_within(server, 10) == 1
    finally:
        server.kill()
