"""One bad save never blocks verify-on-save (issue 12, item 3): a save whose candidate hangs is
superseded by the next save, whose verdict arrives without waiting for the hang limit. A real
server process and a real LSP client (pytest-lsp)."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import fix_codeaction_decoding
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

pytestmark = [pytest.mark.e2e, pytest.mark.compiler]

LOG = Path(tempfile.gettempdir()) / "tritonsmith-test-save-faults.log"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kernelbench_relu.py"
HANG_LIMIT_S = 120  # the workspace's verifyTimeout: far longer than the test waits
AUTOSAVE_IDLE_S = 3  # the workspace's verifyAfterAutosave


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "tritonsmith", "serve", "--log-file", str(LOG)])
)
async def client(lsp_client: LanguageClient, tmp_path_factory):
    fix_codeaction_decoding(lsp_client)
    root = tmp_path_factory.mktemp("ws")
    (root / "pyproject.toml").write_text("[tool.tritonsmith]\n")
    lsp_client.root = root
    lsp_client.set_configuration({"verifyTimeout": HANG_LIMIT_S, "verifyAfterAutosave": AUTOSAVE_IDLE_S},
                                 section="tritonsmith")

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def code_lens_refresh(params):
        return None

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params):
        return None

    caps = client_capabilities("visual-studio-code")
    await lsp_client.initialize_session(types.InitializeParams(capabilities=caps, root_uri=root.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def _verdict_lenses(client: LanguageClient, uri: str, timeout: float) -> list[str]:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
        titles = [lens.command.title for lens in lenses or [] if lens.command is not None]
        verdicts = [t for t in titles if t.startswith(("verified · ", "FAILED · "))]
        if verdicts:
            return verdicts
        await asyncio.sleep(0.2)
    return []


async def test_a_newer_save_supersedes_a_hung_verification(client: LanguageClient):
    pytest.importorskip("triton")
    pytest.importorskip("numpy")  # the Triton interpreter needs it
    good = EXAMPLE.read_text()
    hung = good.replace("        return relu(x)", "        while True:\n            pass\n        return relu(x)")
    assert hung != good
    path = Path(client.root) / "relu_problem.py"
    path.write_text(hung)
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=hung)))
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    # The first save compiles, starts both workers and runs the reference, then the candidate
    # loops; nothing can be published for it before the 120 s hang limit.
    assert await _verdict_lenses(client, uri, timeout=15) == []
    path.write_text(good)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=good)]))
    saved_at = asyncio.get_running_loop().time()
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    verdicts = await _verdict_lenses(client, uri, timeout=100)
    waited = asyncio.get_running_loop().time() - saved_at
    assert verdicts and verdicts[0].startswith("verified · interpreter"), verdicts
    assert waited < 90, waited  # the hung job's worker was killed, not waited for (120 s + setup)


async def _lens_titles(client: LanguageClient, uri: str) -> list[str]:
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    return [lens.command.title for lens in lenses or [] if lens.command is not None]


async def test_an_autosave_compiles_and_verifies_only_once_the_editor_is_idle(client: LanguageClient):
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    text = EXAMPLE.read_text()
    path = Path(client.root) / "relu_autosave.py"
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))

    def autosave() -> None:
        client.text_document_will_save(types.WillSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri), reason=types.TextDocumentSaveReason.AfterDelay))
        client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))

    # An autosave followed by an edit within the idle delay: it compiles, and never verifies.
    autosave()
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text + "\n")]))
    deadline = asyncio.get_running_loop().time() + 60
    while not any(t.startswith("compiled") for t in await _lens_titles(client, uri)):
        assert asyncio.get_running_loop().time() < deadline, await _lens_titles(client, uri)
        await asyncio.sleep(0.2)
    assert await _verdict_lenses(client, uri, timeout=AUTOSAVE_IDLE_S + 8) == []
    # An autosave left alone: verified once the editor has been idle for the delay.
    path.write_text(text + "\n")
    saved_at = asyncio.get_running_loop().time()
    autosave()
    verdicts = await _verdict_lenses(client, uri, timeout=120)
    assert verdicts and verdicts[0].startswith("verified · interpreter"), verdicts
    assert asyncio.get_running_loop().time() - saved_at >= AUTOSAVE_IDLE_S
