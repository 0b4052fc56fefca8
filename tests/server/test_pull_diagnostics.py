"""Pull diagnostics as VS Code uses them (issue 34, item 7): a compile that confirms a static
finding changes only the diagnostic's source, and a pull with the previous result id must see
that as a change; a rules reload keeps the compile's findings for kernels whose text did not
change; the state database written into `.tritonsmith/` at each save is no rules change."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import pytest_lsp
from lsp_helpers import LAUNCHED_1000, fix_codeaction_decoding
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

LOG = Path(tempfile.gettempdir()) / "tritonsmith-test-pull.log"


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "tritonsmith", "serve", "--log-file", str(LOG)])
)
async def client(lsp_client: LanguageClient, tmp_path_factory):
    fix_codeaction_decoding(lsp_client)
    root = tmp_path_factory.mktemp("ws")
    (root / "pyproject.toml").write_text("[tool.tritonsmith]\n")
    lsp_client.root = root
    lsp_client.set_configuration({}, section="tritonsmith")
    for method in (types.WORKSPACE_CODE_LENS_REFRESH, types.CLIENT_REGISTER_CAPABILITY):
        lsp_client.feature(method)(lambda params: None)

    caps = client_capabilities("visual-studio-code")
    caps.text_document.diagnostic = types.DiagnosticClientCapabilities(related_document_support=False)
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    await lsp_client.initialize_session(types.InitializeParams(capabilities=caps, root_uri=root.as_uri()))
    yield
    await lsp_client.shutdown_session()


def _ts101(items: list[types.Diagnostic]) -> list[str | None]:
    """The sources of the TS101 error (at the arange; the launch value's is a hint)."""
    return [d.source for d in items if d.code == "TS101" and d.severity == types.DiagnosticSeverity.Error]


async def _pull(client: LanguageClient, uri: str, previous: str | None) -> types.DocumentDiagnosticReport:
    """A pull; the client reads the answer as a Related...Report (`kind` "full" or "unchanged")."""
    return await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=previous))


async def _until_full(client: LanguageClient, uri: str, previous: str | None,
                      timeout: float = 180) -> types.RelatedFullDocumentDiagnosticReport:
    for _ in range(int(timeout / 0.25)):
        report = await _pull(client, uri, previous)
        if isinstance(report, types.RelatedFullDocumentDiagnosticReport):
            return report
        await asyncio.sleep(0.25)
    fresh = await _pull(client, uri, None)
    raise AssertionError(f"the pull stayed unchanged for {timeout} s; without a result id: {fresh}")


async def _refreshed(client: LanguageClient, after: int, timeout: float = 180) -> None:
    for _ in range(int(timeout / 0.05)):
        if client.diagnostic_refresh_count > after:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no workspace/diagnostic/refresh came")


@pytest.mark.compiler
async def test_a_compile_confirming_a_finding_is_a_change_and_a_reload_keeps_it(client: LanguageClient):
    pytest.importorskip("triton")
    path = Path(client.root) / "launched.py"
    path.write_text(LAUNCHED_1000)
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=LAUNCHED_1000)))
    first = await _pull(client, uri, None)
    assert _ts101(first.items) == ["tritonsmith"]
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    # Pulled as VS Code does, with the last result id: the compile's confirmation must come as
    # a new report (the same range, code and message, now from the rule and the compiler), not
    # as "unchanged" for ever.
    confirmed = await _until_full(client, uri, first.result_id)
    assert _ts101(confirmed.items) == ["tritonsmith, tritonsmith-verify"]
    # A rules reload (pyproject.toml written) re-checks the document: the kernel's text did not
    # change, so the compile's finding stays.
    refreshes = client.diagnostic_refresh_count
    (Path(client.root) / "pyproject.toml").write_text("[tool.tritonsmith]\nselect = []\n")
    await _refreshed(client, refreshes, timeout=10)
    reloaded = await _pull(client, uri, confirmed.result_id)
    items = reloaded.items if isinstance(reloaded, types.RelatedFullDocumentDiagnosticReport) else confirmed.items
    assert _ts101(items) == ["tritonsmith, tritonsmith-verify"]


def test_the_state_database_written_at_a_save_is_no_rules_change(tmp_path: Path) -> None:
    """The save job writes `.tritonsmith/state.db`; the root's watch sees the folder
    "modified". Only a pack (`*.toml`) or the folder coming or going reloads the rules."""
    from watchdog.events import (
        DirCreatedEvent,
        DirModifiedEvent,
        FileCreatedEvent,
        FileModifiedEvent,
    )

    from tritonsmith.server.features.watch import _Handler

    changes: list[str] = []
    handler = _Handler(SimpleNamespace(changed=lambda: changes.append("changed")))  # type: ignore[arg-type]
    folder = tmp_path / ".tritonsmith"
    for quiet in (DirModifiedEvent(str(folder)), FileModifiedEvent(str(folder / "state.db")),
                  FileCreatedEvent(str(folder / "state.db-journal"))):
        handler.on_any_event(quiet)
    assert changes == []
    handler.on_any_event(DirCreatedEvent(str(folder)))
    handler.on_any_event(FileModifiedEvent(str(folder / "rules.toml")))
    handler.on_any_event(FileModifiedEvent(str(tmp_path / "pyproject.toml")))
    assert changes == ["changed"] * 3
