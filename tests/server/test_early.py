"""The early phase (server/early.py): the first answers before pygls and lsprotocol load are
the full server's, byte for byte in what they say: the `initialize` result it recorded, and the
diagnostics it publishes for the first file opened."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tritonsmith.server.early import InitializeCache, answer_early, diagnostics_json
from tritonsmith.server.framing import Framer

ROOT = Path(__file__).resolve().parents[2]
MISTAKES = sorted((ROOT / "examples" / "mistakes").glob("*.py"))
# A finding after a character that is one UTF-8 byte pair and one UTF-16 unit on its line:
# the columns differ by encoding.
NON_ASCII = '''import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    s = "é"; offs = tl.arange(0, 10)
    tl.store(x_ptr + offs, offs)
'''


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _initialize(root: Path, capabilities: dict[str, Any] | None = None, options: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"processId": None, "rootUri": root.as_uri(), "capabilities": capabilities or {}}
    if options is not None:
        params["initializationOptions"] = options
    return {"id": 1, "method": "initialize", "params": params}


def _opened(path: Path, text: str | None = None) -> dict[str, Any]:
    return {"uri": path.as_uri(), "languageId": "python", "version": 3,
            "text": path.read_text(encoding="utf-8") if text is None else text}


PULL = {"id": 2, "method": "textDocument/diagnostic"}


class _Collected:
    """A writer for the server that keeps every message it sends, parsed."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))

    def close(self) -> None:
        pass


def _server() -> tuple[Any, _Collected]:
    from tritonsmith.server import create_server

    return create_server(), _Collected()


def _full_server(initialize: dict[str, Any], opened: dict[str, Any], *,
                 pushes: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """The full server's initialize result and, in this process, its first publish for `opened`
    (for a client that pulls: its answer to the first pull)."""
    from tritonsmith.server.framing import dispatch

    server, writer = _server()
    sent = writer.sent
    messages = [initialize, {"method": "textDocument/didOpen", "params": {"textDocument": opened}}]
    if not pushes:
        messages.append({**PULL, "params": {"textDocument": {"uri": opened["uri"]}}})

    def answer() -> dict[str, Any] | None:
        if pushes:
            return next((m["params"] for m in sent if m.get("method") == "textDocument/publishDiagnostics"), None)
        return next((m["result"] for m in sent if m.get("id") == PULL["id"]), None)

    async def run() -> None:
        server.protocol.set_writer(writer)
        for message in messages:
            dispatch(json.dumps({"jsonrpc": "2.0", **message}).encode(), server.protocol, writer.write)
        for _ in range(4000):
            if answer() is not None:
                return
            await asyncio.sleep(0.005)
        raise AssertionError("no diagnostics")

    asyncio.run(run())
    found = answer()
    assert found is not None
    return next(m["result"] for m in sent if m.get("id") == 1), found


@pytest.mark.parametrize("path", MISTAKES, ids=lambda p: p.name)
def test_the_early_diagnostics_are_the_full_servers(path: Path, tmp_path: Path) -> None:
    initialize = _initialize(path.parent)
    opened = _opened(path)
    result, published = _full_server(initialize, opened)
    assert published["diagnostics"], "a file of mistakes must have findings"
    encoding = result["capabilities"].get("positionEncoding", "utf-16")
    assert diagnostics_json(initialize["params"], opened, encoding) == published


@pytest.mark.parametrize("encodings", [[], ["utf-8"], ["utf-32", "utf-16"]])
def test_positions_follow_the_negotiated_encoding(tmp_path: Path, encodings: list[str]) -> None:
    path = tmp_path / "k.py"
    path.write_text(NON_ASCII, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.tritonsmith]\nignore = ["TS201"]\n')  # settings are read too
    initialize = _initialize(tmp_path, {"general": {"positionEncodings": encodings}} if encodings else {},
                             options={"tritonsmith": {"select": ["TS"]}})
    opened = _opened(path)
    result, published = _full_server(initialize, opened)
    encoding = result["capabilities"].get("positionEncoding", "utf-16")
    assert published["diagnostics"]
    assert diagnostics_json(initialize["params"], opened, encoding) == published


def _primed(tmp_path: Path, initialize: dict[str, Any], opened: dict[str, Any], *,
            pushes: bool = True) -> tuple[InitializeCache, dict[str, Any]]:
    """A cache holding the full server's answer to `initialize`, and the full server's first
    diagnostics for `opened` (published, or its answer to the first pull)."""
    cache = InitializeCache(tmp_path / "cache.json")
    result, first = _full_server(initialize, opened, pushes=pushes)
    cache.put(initialize["params"], result)
    return cache, first


def _chunks(*messages: dict[str, Any], size: int = 1000) -> Any:
    """The messages as a pipe delivers them: in chunks of `size` bytes, across message ends."""
    stream = b"".join(_frame(m) for m in messages)
    data = [stream[i:i + size] for i in range(0, len(stream), size)]

    def next_chunk(timeout: float | None) -> bytes | None:
        return data.pop(0) if data else None  # then silence: the early phase hands over

    return next_chunk


def test_a_cache_miss_answers_nothing_and_keeps_every_message(tmp_path: Path) -> None:
    cache = InitializeCache(tmp_path / "cache.json")
    initialize = _initialize(tmp_path)
    written: list[bytes] = []
    messages = [initialize, {"method": "initialized", "params": {}}]
    early = answer_early(_chunks(*messages), Framer(), written.append, cache, wait_s=0.01)
    assert not early.answered and written == []
    assert early.initialize == {"jsonrpc": "2.0", **initialize}
    # Everything read goes to the full server, in order (what a chunk held past the miss too).
    assert [json.loads(b) for b in early.bodies] == [{"jsonrpc": "2.0", **m} for m in messages][:len(early.bodies)]


def test_a_hit_answers_and_publishes_then_hands_over_at_anything_else(tmp_path: Path) -> None:
    path = MISTAKES[0]
    initialize = _initialize(path.parent)
    cache, published = _primed(tmp_path, initialize, _opened(path))
    result = cache.get(initialize["params"])
    written: list[bytes] = []
    opened = {"method": "textDocument/didOpen", "params": {"textDocument": _opened(path)}}
    hover = {"id": 2, "method": "textDocument/hover", "params": {}}
    messages = [initialize, {"method": "initialized", "params": {}}, opened, hover]
    early = answer_early(_chunks(*messages), Framer(), written.append, cache, wait_s=0.01)
    assert early.answered == {1}  # not the hover: the full server answers it, as everything read
    assert [json.loads(b) for b in early.bodies] == [{"jsonrpc": "2.0", **m} for m in messages][:len(early.bodies)]
    assert len(early.bodies) >= 3
    sent = [json.loads(w.split(b"\r\n\r\n", 1)[1]) for w in written]
    assert sent == [{"jsonrpc": "2.0", "id": 1, "result": result},
                    {"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": published}]


def test_a_pulling_clients_first_pull_is_answered_with_the_full_servers_items(tmp_path: Path) -> None:
    path = MISTAKES[0]
    initialize = _initialize(path.parent, {"textDocument": {"diagnostic": {}}})
    opened = _opened(path)
    cache, report = _primed(tmp_path, initialize, opened, pushes=False)
    written: list[bytes] = []
    pull = {**PULL, "params": {"textDocument": {"uri": opened["uri"]}}}
    early = answer_early(_chunks(initialize, {"method": "textDocument/didOpen", "params": {"textDocument": opened}},
                                 pull), Framer(), written.append, cache, wait_s=0.01)
    sent = [json.loads(w.split(b"\r\n\r\n", 1)[1]) for w in written]
    assert [m.get("id") for m in sent] == [1, 2] and early.answered == {1, 2}  # no push: it pulls
    assert report["kind"] == "full" and report["items"]
    assert sent[1]["result"]["kind"] == "full" and sent[1]["result"]["items"] == report["items"]


def test_the_key_changes_with_the_client_and_its_options(tmp_path: Path) -> None:
    cache = InitializeCache(tmp_path / "cache.json")
    base = _initialize(tmp_path)["params"]
    keys = {cache.key(base), cache.key({**base, "capabilities": {"general": {"positionEncodings": ["utf-8"]}}}),
            cache.key({**base, "initializationOptions": {"tritonsmith": {"select": ["TS1"]}}})}
    assert len(keys) == 3
    assert cache.key({**base, "rootUri": "file:///elsewhere", "processId": 7}) == cache.key(base)


@pytest.mark.e2e
def test_a_second_start_answers_early_with_what_the_full_server_said(tmp_path: Path) -> None:
    """Two starts with the same user cache: the first's answers come from the full server (and
    fill the cache), the second's first answers from the early phase; they are the same, the full
    server's own publish follows the early one unchanged, and nothing is answered twice."""
    path = MISTAKES[0]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    runs = []
    for _ in range(2):
        server = subprocess.Popen([sys.executable, "-m", "tritonsmith", "serve"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(_frame(_initialize(path.parent)) + _frame({"method": "initialized", "params": {}})
                           + _frame({"method": "textDocument/didOpen", "params": {"textDocument": _opened(path)}}))
        server.stdin.flush()
        received: list[dict[str, Any]] = []
        deadline = time.monotonic() + 60
        publishes = 2 if runs else 1  # the second start: the early publish, then the full server's
        while sum(m.get("method") == "textDocument/publishDiagnostics" for m in received) < publishes:
            assert time.monotonic() < deadline, received
            header = b""
            while b"\r\n\r\n" not in header:
                header += server.stdout.read(1)
            length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
            received.append(json.loads(server.stdout.read(length)))
        server.stdin.write(_frame({"id": 9, "method": "shutdown"}) + _frame({"method": "exit"}))
        server.stdin.flush()
        assert server.wait(timeout=20) == 0
        runs.append(received)
    first, second = runs
    answers = [[m for m in run if m.get("id") == 1] for run in runs]
    assert len(answers[0]) == 1 and answers[1] == answers[0]
    publishes = [[m["params"] for m in run if m.get("method") == "textDocument/publishDiagnostics"] for run in runs]
    assert publishes[0][0]["diagnostics"] and publishes[1] == [publishes[0][0]] * 2


def test_a_failure_in_the_early_phase_leaves_everything_to_the_full_server(tmp_path: Path) -> None:
    path = MISTAKES[0]
    initialize = _initialize(path.parent)
    cache, _ = _primed(tmp_path, initialize, _opened(path))
    chunks = [_frame(initialize)]

    def next_chunk(timeout: float | None) -> bytes | None:
        if chunks:
            return chunks.pop(0)
        raise RuntimeError("a bug")

    written: list[bytes] = []
    early = answer_early(next_chunk, Framer(), written.append, cache, wait_s=0.01)
    assert early.answered == {1} and len(early.bodies) == 1 and len(written) == 1


def test_a_large_files_syntax_level_findings_come_first_then_all_of_them(tmp_path: Path) -> None:
    """Past `SYNTAX_FIRST_BYTES`, the checks that need no types publish first (a subset of the
    full server's diagnostics, each the same), then the full set, which is the full server's."""
    from tritonsmith.server.early import SYNTAX_FIRST_BYTES

    typed = (ROOT / "bench" / "type_probes" / "math_on_int__sqrt_i32.py").read_text().split("import triton.language as tl", 1)[1]
    text = (ROOT / "examples" / "mistakes" / "softmax.py").read_text() + typed
    text += "\n" + "# padding\n" * (SYNTAX_FIRST_BYTES // 10)
    path = tmp_path / "large.py"
    path.write_text(text, encoding="utf-8")
    initialize = _initialize(tmp_path)
    cache, full = _primed(tmp_path, initialize, _opened(path))
    written: list[bytes] = []
    opened = {"method": "textDocument/didOpen", "params": {"textDocument": _opened(path)}}
    answer_early(_chunks(initialize, {"method": "initialized", "params": {}}, opened), Framer(), written.append,
                 cache, wait_s=0.01)
    published = [m["params"] for m in (json.loads(w.split(b"\r\n\r\n", 1)[1]) for w in written)
                 if m.get("method") == "textDocument/publishDiagnostics"]
    assert len(published) == 2 and published[-1] == full
    first, last = ([d["code"] for d in p["diagnostics"]] for p in published)
    assert sorted(first) == ["TS101", "TS101", "TS102"] and sorted(last) == ["TS101", "TS101", "TS102", "TS704"]
    assert all(d in published[-1]["diagnostics"] for d in published[0]["diagnostics"])
    # One answer (a pull's) is the full set at once.
    assert diagnostics_json(initialize["params"], _opened(path), "utf-16") == full


def test_a_client_sending_only_what_the_early_phase_passes_over_is_handed_over(tmp_path: Path) -> None:
    """Thousands of `$/setTrace` after `initialize`: the early phase stops reading at
    `EARLY_MESSAGES` and hands every message it read to the full server, in order."""
    from tritonsmith.server.early import EARLY_MESSAGES

    path = MISTAKES[0]
    initialize = _initialize(path.parent)
    cache, _ = _primed(tmp_path, initialize, _opened(path))
    traces = [{"method": "$/setTrace", "params": {"value": "off"}} for _ in range(5000)]
    next_chunk = _chunks(initialize, *traces)
    written: list[bytes] = []
    early = answer_early(next_chunk, Framer(), written.append, cache, wait_s=10.0)
    assert early.answered == {1}
    assert EARLY_MESSAGES < len(early.bodies) <= EARLY_MESSAGES + 40  # what the last chunk held too
    assert [json.loads(b) for b in early.bodies] == [{"jsonrpc": "2.0", **m} for m in [initialize, *traces]][:len(early.bodies)]
    assert next_chunk(0)  # the rest is still unread: the full server reads it


def _handed_over(early: Any) -> tuple[Any, list[dict[str, Any]], int]:
    """A full server given what the early phase read and built, as `serve_stdio` gives it: the
    server, what it sent, and how many kernels it checked itself."""
    from tritonsmith.rules.matcher import Matcher
    from tritonsmith.server.framing import dispatch

    server, writer = _server()
    server.session.adopt_early(early.checked)
    sent = writer.sent
    checked = [0]
    check_kernel = Matcher._check_kernel

    def counted(self: Matcher, *args: Any, **kwargs: Any) -> Any:
        checked[0] += 1
        return check_kernel(self, *args, **kwargs)

    async def run() -> None:
        server.protocol.set_writer(writer)
        for body in early.bodies:
            dispatch(body, server.protocol, writer.write)
        server.session.check_open_documents()
        for _ in range(400):
            if any(m.get("method") == "textDocument/publishDiagnostics" for m in sent):
                return
            await asyncio.sleep(0.005)

    Matcher._check_kernel = counted  # type: ignore[method-assign]
    try:
        asyncio.run(run())
    finally:
        Matcher._check_kernel = check_kernel  # type: ignore[method-assign]
    return server, sent, checked[0]


def test_the_full_server_takes_up_the_early_check_instead_of_checking_again(tmp_path: Path) -> None:
    """The document, its index, its findings and the workspace the early phase built are the
    full server's: no kernel is checked twice, and it publishes what the early phase did."""
    path = ROOT / "examples" / "mistakes" / "softmax.py"
    initialize = _initialize(path.parent)
    cache, full = _primed(tmp_path, initialize, _opened(path))
    opened = {"method": "textDocument/didOpen", "params": {"textDocument": _opened(path)}}
    early = answer_early(_chunks(initialize, {"method": "initialized", "params": {}}, opened), Framer(),
                         [].append, cache, wait_s=0.01)
    assert early.checked is not None and early.checked.findings
    server, sent, checked = _handed_over(early)
    state = server.session.documents[path.as_uri()]
    assert checked == 0 and not state.dirty
    assert state.document is early.checked.document and server.session.workspace is early.checked.workspace
    assert [m["params"] for m in sent if m.get("method") == "textDocument/publishDiagnostics"] == [full]
    # The next edit starts from the early check too: only the edited kernel is checked again.
    from lsprotocol import types

    row = next(i for i, line in enumerate(_opened(path)["text"].splitlines()) if "tl.load" in line)
    server.session.change(path.as_uri(), 4, [types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(row, 0), types.Position(row, 0)), text=" ")])
    server.session.change(path.as_uri(), 5, [types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(row, 0), types.Position(row, 1)), text="")])
    server.session.ensure_checked(state)
    assert state.rebased is not None and [f.code for f in state.findings] == [d["code"] for d in full["diagnostics"]]


def test_other_settings_in_the_full_server_check_the_document_again(tmp_path: Path) -> None:
    """What the early check built with other rules is not taken up: here the editor's options
    `initialize` sends select one rule, and the early phase answered with a cached result for
    the same options, so the two can only differ if the workspace's pyproject changed between."""
    path = tmp_path / "softmax.py"
    path.write_text((ROOT / "examples" / "mistakes" / "softmax.py").read_text(), encoding="utf-8")
    initialize = _initialize(tmp_path)
    cache, _ = _primed(tmp_path, initialize, _opened(path))
    opened = {"method": "textDocument/didOpen", "params": {"textDocument": _opened(path)}}
    early = answer_early(_chunks(initialize, {"method": "initialized", "params": {}}, opened), Framer(),
                         [].append, cache, wait_s=0.01)
    assert early.checked is not None
    (tmp_path / "pyproject.toml").write_text('[tool.tritonsmith]\nselect = ["TS102"]\n', encoding="utf-8")
    server, sent, checked = _handed_over(early)
    assert checked > 0 and server.session.workspace is not early.checked.workspace
    published = [m["params"] for m in sent if m.get("method") == "textDocument/publishDiagnostics"]
    assert published and {d["code"] for d in published[-1]["diagnostics"]} == {"TS102"}
