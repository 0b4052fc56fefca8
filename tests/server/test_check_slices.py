"""A long check runs in slices between messages (issue 17, item 2): an edit drops the check of
the version it replaced, keeping the kernels already checked, and a hover answers from the
kernel under the cursor instead of waiting for the whole file.

The tests control the schedule, not the clock (issue 34): a slice is one kernel (`SLICE_S` = 0),
so how far a check has come when the edit or the hover arrives depends on how often the event
loop ran, never on how fast the machine is."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tritonsmith.rules.matcher import Matcher
from tritonsmith.server.framing import dispatch

KERNEL = '''
@triton.jit
def add_{i}(x_ptr, out_ptr, n, BLOCK):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * {i}, mask=mask)
'''
KERNELS = 80
TEXT = "import triton\nimport triton.language as tl\n" + "".join(KERNEL.format(i=i) for i in range(KERNELS))
URI = "file:///tmp/slices_probe.py"


class Session:
    """The server in this process, fed messages one at a time, its output collected."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from tritonsmith.server import create_server

        monkeypatch.setattr("tritonsmith.server.server.SLICE_S", 0.0)  # one kernel a slice
        self.server = create_server()
        self.sent: list[dict[str, Any]] = []
        self.checked: list[str] = []  # each kernel the rules ran on, in order
        session = self

        class Writer:
            def write(self, data: bytes) -> None:
                session.sent.append(json.loads(data.split(b"\r\n\r\n", 1)[1]))

            def close(self) -> None:
                pass

        self.server.protocol.set_writer(Writer())
        original = Matcher._check_kernel

        def counted(matcher: Matcher, kernel: Any, *args: Any) -> Any:
            self.checked.append(kernel.name)
            return original(matcher, kernel, *args)

        monkeypatch.setattr(Matcher, "_check_kernel", counted)

    def send(self, message: dict[str, Any]) -> None:
        dispatch(json.dumps({"jsonrpc": "2.0", **message}).encode(), self.server.protocol, lambda _: None)

    def published(self) -> list[dict[str, Any]]:
        return [m["params"] for m in self.sent if m.get("method") == "textDocument/publishDiagnostics"]

    def answer(self, msg_id: int) -> dict[str, Any]:
        return next(m for m in self.sent if m.get("id") == msg_id and "method" not in m)

    async def start(self) -> None:
        self.send({"id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}})
        self.send({"method": "initialized", "params": {}})
        await asyncio.sleep(0.2)

    async def open(self) -> None:
        self.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": URI, "languageId": "python", "version": 1, "text": TEXT}}})
        for _ in range(3):  # the first slices, not the whole check
            await asyncio.sleep(0)

    async def until_published(self, version: int, timeout: float = 60) -> dict[str, Any]:
        for _ in range(int(timeout / 0.01)):
            found = [p for p in self.published() if p.get("version") == version]
            if found:
                return found[-1]
            await asyncio.sleep(0.01)
        raise AssertionError(f"no diagnostics for version {version}: {self.published()}")


def test_an_edit_drops_the_stale_check_and_keeps_what_it_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    session = Session(monkeypatch)

    async def run() -> None:
        await session.start()
        await session.open()
        checked_before_edit = len(session.checked)
        assert 0 < checked_before_edit < KERNELS  # the check is under way, in slices
        # Comment out the last kernel's store: version 1 is stale from here on.
        last_row = len(TEXT.splitlines()) - 1
        session.send({"method": "textDocument/didChange", "params": {
            "textDocument": {"uri": URI, "version": 2},
            "contentChanges": [{"range": {"start": {"line": last_row, "character": 4},
                                          "end": {"line": last_row, "character": 4}}, "text": "#"}]}})
        final = await session.until_published(2)
        # Version 1 was never finished. (Version 2 may be published twice: by the check task of
        # version 1, which runs on into version 2, and by version 2's own scheduling.)
        assert {p["version"] for p in session.published()} == {2}
        # Each kernel checked once, the edited one twice at most: nothing redone for the edit.
        assert len(session.checked) <= KERNELS + 1, len(session.checked)
        assert len(final["diagnostics"]) == KERNELS  # BLOCK without tl.constexpr, in each kernel

    try:
        asyncio.run(run())
    finally:
        session.server.shutdown()


def test_a_hover_does_not_wait_for_the_whole_file(monkeypatch: pytest.MonkeyPatch) -> None:
    session = Session(monkeypatch)

    async def run() -> None:
        await session.start()
        await session.open()
        # `tl.arange(0, BLOCK)` in the last kernel: far from what the first slices checked.
        row = next(i for i, line in enumerate(TEXT.splitlines()) if line.startswith(f"def add_{KERNELS - 1}(")) + 2
        column = TEXT.splitlines()[row].index("arange(0, BLOCK") + len("arange(0, ")
        session.send({"id": 5, "method": "textDocument/hover", "params": {
            "textDocument": {"uri": URI}, "position": {"line": row, "character": column + 1}}})
        hover = session.answer(5)["result"]
        assert "TS102" in hover["contents"]["value"]
        assert session.published() == []  # answered before the file's check was done
        assert len(session.checked) < KERNELS
        await session.until_published(1)
        assert len(session.checked) == KERNELS  # the hovered kernel was not checked again

    try:
        asyncio.run(run())
    finally:
        session.server.shutdown()


def test_the_same_settings_again_check_nothing_and_other_settings_check_everything(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A configuration change that changes nothing (the settings a client sends or the server
    pulls right after `initialize`, most often the ones it had) keeps the workspace and its
    results; one that changes the rules checks every kernel again."""
    session = Session(monkeypatch)

    async def run() -> None:
        await session.start()
        await session.open()
        await session.until_published(1)
        workspace = session.server.session.workspace
        session.checked.clear()
        session.send({"method": "workspace/didChangeConfiguration", "params": {"settings": {"tritonsmith": {}}}})
        await asyncio.sleep(0.3)
        assert session.checked == [] and session.server.session.workspace is workspace
        session.send({"method": "workspace/didChangeConfiguration",
                      "params": {"settings": {"tritonsmith": {"ignore": ["TS101"]}}}})
        for _ in range(1000):
            if len(session.checked) == KERNELS:
                break
            await asyncio.sleep(0.01)
        assert len(session.checked) == KERNELS and session.server.session.workspace is not workspace

    try:
        asyncio.run(run())
    finally:
        session.server.shutdown()
