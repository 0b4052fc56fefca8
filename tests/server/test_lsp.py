"""End to end through pytest-lsp: a real server process, a real LSP client."""

from __future__ import annotations

import asyncio
import sys
import tempfile
import urllib.parse
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import LAUNCHED_1000, fix_codeaction_decoding
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

pytestmark = pytest.mark.e2e

BAD = '''import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, n, BLOCK):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, tl.float32(x), mask=offs < n)
'''


LOG = Path(tempfile.gettempdir()) / "tritonsmith-test-server.log"


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "tritonsmith", "serve", "--log-file", str(LOG)])
)
async def client(lsp_client: LanguageClient, tmp_path_factory):
    fix_codeaction_decoding(lsp_client)
    root = tmp_path_factory.mktemp("ws")
    (root / "pyproject.toml").write_text("[tool.tritonsmith]\n")
    lsp_client.root = root
    lsp_client.set_configuration({}, section="tritonsmith")

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def code_lens_refresh(params):
        return None

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(params):
        return None

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params):
        return types.ApplyWorkspaceEditResult(applied=True)

    caps = client_capabilities("visual-studio-code")  # push diagnostics, configuration support
    await lsp_client.initialize_session(types.InitializeParams(capabilities=caps, root_uri=root.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, name: str, text: str) -> str:
    path = Path(client.root) / name
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    await _wait_for(client, uri, lambda d: d is not None)
    return uri


async def _wait_for(client: LanguageClient, uri: str, predicate, timeout: float = 10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        diagnostics = client.diagnostics.get(uri)
        if predicate(diagnostics):
            return diagnostics
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out; diagnostics are {client.diagnostics.get(uri)}")


def _codes(diagnostics) -> list[str]:
    return sorted(str(d.code) for d in diagnostics or [])


async def test_open_shows_rule_diagnostics_with_code_link_and_range(client: LanguageClient):
    uri = await _open(client, "bad.py", BAD)
    diagnostics = await _wait_for(client, uri, lambda d: d and len(d) >= 2)
    assert _codes(diagnostics) == ["TS102", "TS109"]
    ts102 = next(d for d in diagnostics if d.code == "TS102")
    assert ts102.source == "tritonsmith"
    # The code links to the rule's page on this machine, written from the rules in force.
    href = ts102.code_description.href
    assert href.startswith("file://") and href.endswith("/TS102.md")
    page = Path(urllib.parse.unquote(urllib.parse.urlparse(href).path)).read_text()
    assert page.splitlines()[1].startswith("# TS102 ") and "## Bad" in page
    assert ts102.range == types.Range(types.Position(6, 24), types.Position(6, 29))  # BLOCK in arange
    assert ts102.related_information and ts102.related_information[0].location.range.start.line == 5


async def test_quick_fix_edit_removes_the_diagnostic(client: LanguageClient):
    uri = await _open(client, "fixme.py", BAD)
    diagnostics = await _wait_for(client, uri, lambda d: d and len(d) >= 2)
    target = next(d for d in diagnostics if d.code == "TS109")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=target.range,
            context=types.CodeActionContext(diagnostics=[target]),
        )
    )
    titles = [a.title for a in actions]
    assert "Ignore TS109 on this line" in titles
    # The lightbulb also offers every mechanical fix in the file (TS102's and TS109's).
    assert "Fix all tritonsmith problems in this file (2)" in titles
    fix = next(a for a in actions if a.is_preferred)
    edits = fix.edit.document_changes[0].edits
    assert edits[0].new_text == "x.to(tl.float32)"
    # Apply the edit as the editor would and send it back.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(range=edits[0].range, text=edits[0].new_text)],
        )
    )
    diagnostics = await _wait_for(client, uri, lambda d: d is not None and "TS109" not in _codes(d))
    assert _codes(diagnostics) == ["TS102"]


async def test_fix_all_source_action(client: LanguageClient):
    uri = await _open(client, "fixall.py", BAD)
    await _wait_for(client, uri, lambda d: d and len(d) >= 2)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(0, 0), types.Position(0, 0)),
            context=types.CodeActionContext(diagnostics=[], only=["source.fixAll"]),
        )
    )
    assert [a.kind for a in actions] == ["source.fixAll.tritonsmith"]
    assert len(actions[0].edit.document_changes[0].edits) == 2


async def test_hover_shows_rule_statement(client: LanguageClient):
    uri = await _open(client, "hover.py", BAD)
    diagnostics = await _wait_for(client, uri, lambda d: d and len(d) >= 2)
    target = next(d for d in diagnostics if d.code == "TS102")
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=target.range.start)
    )
    assert "You cannot use a kernel parameter" in hover.contents.value
    assert "## Good" in hover.contents.value
    # The diagnostic's own message is the editor's to show, not repeated; categories are words.
    assert target.message not in hover.contents.value
    assert "- Category: shapes and constexpr" in hover.contents.value


OVERLAP = '''import triton
import triton.language as tl


@triton.jit
def k(x_ptr, BLOCK):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)


def run(x):
    k[(1,)](x, BLOCK=100)
'''


async def test_hover_shows_every_rule_reported_at_the_cursor(client: LanguageClient):
    uri = await _open(client, "overlap.py", OVERLAP)
    diagnostics = await _wait_for(client, uri, lambda d: d and {"TS101", "TS102"} <= set(_codes(d)))
    ts102 = next(d for d in diagnostics if d.code == "TS102")  # `BLOCK` inside the TS101 range
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=ts102.range.start))
    value = hover.contents.value
    assert value.count("### TS101 ") == 1 and value.count("### TS102 ") == 1


async def test_configuration_change_ignores_a_rule(client: LanguageClient):
    uri = await _open(client, "config.py", BAD)
    await _wait_for(client, uri, lambda d: d and len(d) >= 2)
    client.set_configuration({"ignore": ["TS109"]}, section="tritonsmith")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))
    diagnostics = await _wait_for(client, uri, lambda d: d is not None and _codes(d) == ["TS102"])
    assert _codes(diagnostics) == ["TS102"]


async def test_editing_a_workspace_pack_rechecks_open_documents(client: LanguageClient):
    uri = await _open(client, "pack.py", BAD)
    await _wait_for(client, uri, lambda d: d and len(d) >= 2)
    pack = Path(client.root) / ".tritonsmith" / "rules.toml"
    pack.parent.mkdir(exist_ok=True)
    # Override TS109's severity: the rule memory is data a team can change.
    from dataclasses import replace

    from tritonsmith.rules import Severity, load_rules, pack_paths
    from tritonsmith.rules.pack import dump_pack

    ts109 = load_rules(pack_paths(None, include_user=False)).get("TS109")
    pack.write_text(dump_pack([replace(ts109, severity=Severity.WARNING)]))
    diagnostics = await _wait_for(
        client, uri,
        lambda d: d is not None and any(x.code == "TS109" and x.severity == types.DiagnosticSeverity.Warning for x in d),
        timeout=10,
    )
    assert any(x.code == "TS109" for x in diagnostics)
    # A malformed pack: the error is shown, and the builtin rules keep working.
    pack.write_text("[[rules]\ncode = \n")
    message = None
    for _ in range(200):
        message = next((m for m in client.messages if "rules.toml" in m.message), None)
        if message is not None:
            break
        await asyncio.sleep(0.05)
    assert message is not None and message.type == types.MessageType.Error
    diagnostics = await _wait_for(client, uri, lambda d: d is not None and len(d) >= 2)
    assert _codes(diagnostics) == ["TS102", "TS109"]


async def test_server_survives_a_malformed_request(client: LanguageClient):
    uri = await _open(client, "survive.py", BAD)
    # Bytes the typed client would refuse to send: a hover whose params are nonsense.
    client.protocol._send_data({"jsonrpc": "2.0", "id": 424242, "method": "textDocument/hover",
                                "params": {"textDocument": {}, "position": "x"}})
    await asyncio.sleep(0.5)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(6, 25))
    )
    assert hover is not None and "TS102" in hover.contents.value


MATMUL_CONFIGS = '''import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}, num_warps=4),
        triton.Config({"BLOCK": 64}, num_warps=6),
    ],
    key=["n"],
)
@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, x * 2, mask=offs < n)
'''


@pytest.mark.compiler
async def test_save_compiles_for_the_target_and_reports_per_config(client: LanguageClient):
    pytest.importorskip("triton")
    uri = await _open(client, "configs.py", MATMUL_CONFIGS)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    diagnostics = await _wait_for(
        client, uri, lambda d: d is not None and any("tritonsmith-verify" in (x.source or "") for x in d), timeout=120
    )
    # Config #2 (num_warps=6) fails to compile: reported on that Config, matched to TS901, which
    # the static rule reports there too: one entry naming both sources, not two.
    compiled = [d for d in diagnostics if "tritonsmith-verify" in (d.source or "")]
    assert [(d.code, d.source) for d in compiled] == [("TS901", "tritonsmith, tritonsmith-verify")]
    assert [d.code for d in diagnostics].count("TS901") == 1
    assert compiled[0].range.start.line == 7
    assert "num_warps must be a power of 2" in compiled[0].message
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert len(lenses) == 1 and lenses[0].range.start.line == 4  # above the decorators
    # A short title with the reason; the whole error and each config's resources on hover.
    title, tooltip = lenses[0].command.title, lenses[0].command.tooltip or ""
    assert title.startswith("compile failed: ") and "num_warps must be a power of 2" in title and len(title) <= 100, title
    assert "num_warps must be a power of 2 (sm_90 · Config #2)" in tooltip
    assert "sm_90 · Config #1:" in tooltip and "regs" in tooltip and "KB smem" in tooltip

    def change(version: int, line: int, start: int, end: int, new_text: str) -> None:
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(line, start), types.Position(line, end)), text=new_text)]))

    # Typing above the kernel moves the compiler's finding with it (no save).
    change(2, 0, 0, 0, "# two lines\n# above\n")
    moved = await _wait_for(client, uri, lambda d: d is not None and any(x.code == "TS901" and x.range.start.line == 9
                                                                          for x in d))
    assert [x.source for x in moved if x.code == "TS901"] == ["tritonsmith, tritonsmith-verify"]
    # Typing the fix clears it before any save: the kernel it was computed on is gone.
    line = MATMUL_CONFIGS.splitlines()[7]
    column = line.index("num_warps=6") + len("num_warps=")
    change(3, 9, column, column + 1, "8")
    fixed = await _wait_for(client, uri, lambda d: d is not None and "TS901" not in _codes(d))
    assert not any("tritonsmith-verify" in (x.source or "") for x in fixed)


@pytest.mark.compiler
async def test_a_pause_in_typing_compiles_the_edited_kernel_again_without_a_save(client: LanguageClient):
    """Issue 16, item 1: after a save, an edited kernel is compiled again from the unsaved text
    once typing pauses (compileWhileTypingMs, 500 ms by default): the compiler confirms the new
    mistake without a save."""
    pytest.importorskip("triton")
    uri = await _open(client, "typing.py", MATMUL_CONFIGS)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    await _wait_for(client, uri, lambda d: d is not None and any("tritonsmith-verify" in (x.source or "") for x in d),
                    timeout=120)
    # num_warps=6 becomes num_warps=3: a different text, so the saved compile finding is hidden
    # and only the rule reports it at first; the compile after the pause confirms it.
    line = MATMUL_CONFIGS.splitlines()[7]
    column = line.index("num_warps=6") + len("num_warps=")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(7, column), types.Position(7, column + 1)), text="3")]))
    await _wait_for(client, uri, lambda d: d is not None and [x.source for x in d if x.code == "TS901"] == ["tritonsmith"])
    confirmed = await _wait_for(client, uri, lambda d: d is not None and [x.source for x in d if x.code == "TS901"]
                                == ["tritonsmith, tritonsmith-verify"], timeout=120)
    assert [x.range.start.line for x in confirmed if x.code == "TS901"] == [7]
    assert "num_warps=6" in (Path(client.root) / "typing.py").read_text()  # never saved



@pytest.mark.compiler
async def test_typing_at_the_launch_hides_the_compile_finding_and_a_pause_compiles_it_again(client: LanguageClient):
    """The compiler's TS101 was computed with BLOCK=1000 from the launch: typing there (the
    kernel's own text unchanged) hides it at once, and the compile after the pause in typing
    reports the new value's error without a save."""
    pytest.importorskip("triton")
    uri = await _open(client, "launched.py", LAUNCHED_1000)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    saved = await _wait_for(client, uri, lambda d: d is not None and any(
        x.code == "TS101" and x.source == "tritonsmith, tritonsmith-verify" for x in d), timeout=120)
    # One mistake: the error at the arange (rule and compiler), a hint at the launch value.
    assert sorted((x.range.start.line, x.severity) for x in saved if x.code == "TS101") == [
        (6, types.DiagnosticSeverity.Error), (11, types.DiagnosticSeverity.Hint)]
    line = LAUNCHED_1000.splitlines()[11]
    column = line.index("1000")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(11, column), types.Position(11, column + 4)), text="100")]))
    hidden = await _wait_for(client, uri, lambda d: d is not None and any("(0..100)" in x.message for x in d))
    assert not any("tritonsmith-verify" in (x.source or "") for x in hidden)
    confirmed = await _wait_for(client, uri, lambda d: d is not None and any(
        x.source == "tritonsmith, tritonsmith-verify" and "(0..100)" in x.message for x in d), timeout=120)
    assert [x.range.start.line for x in confirmed if "tritonsmith-verify" in (x.source or "")] == [6]
    assert "BLOCK=1000" in (Path(client.root) / "launched.py").read_text()  # never saved
    # Closed and opened again with the text last compiled: its compile finding is back at once.
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))
    await _wait_for(client, uri, lambda d: d is not None and len(d) == 0)  # cleared on close
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=LAUNCHED_1000.replace("BLOCK=1000", "BLOCK=100"))))
    reopened = await _wait_for(client, uri, lambda d: d is not None and len(d) > 0)
    assert any(x.source == "tritonsmith, tritonsmith-verify" and "(0..100)" in x.message for x in reopened)
    assert [x.range.start.line for x in reopened if "tritonsmith-verify" in (x.source or "")] == [6]


TILE_OVER_SHARED = """import triton
import triton.language as tl


@triton.jit
def tile_kernel(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.dot(a, b))


def tile(a, b, c):
    tile_kernel[(1,)](a, b, c, BM=64, BN=64, BK=512)
"""


@pytest.mark.compiler
async def test_a_backend_finding_is_compiled_again_in_full_while_typing(client: LanguageClient):
    """Shared memory over the limit is found by the compiler's backend, which a frontend-only
    compile never runs. A kernel whose last full compile found something is compiled in full
    after a pause in typing: its fix shows in the lens and the mistake typed back is reported
    again, both without a save."""
    pytest.importorskip("triton")
    uri = await _open(client, "tile.py", TILE_OVER_SHARED)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))

    def over_shared(d: list[types.Diagnostic] | None) -> bool:
        return d is not None and any(x.code == "shared-memory-exceeded" and "tritonsmith-verify" in (x.source or "")
                                     for x in d)

    await _wait_for(client, uri, over_shared, timeout=120)

    async def lens() -> str:
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
        return next(x.command.title for x in lenses or [] if x.range.start.line == 4)

    assert (await lens()).startswith("compile failed")
    row = TILE_OVER_SHARED.splitlines().index("    tile_kernel[(1,)](a, b, c, BM=64, BN=64, BK=512)")
    column = TILE_OVER_SHARED.splitlines()[row].index("512")

    def block_k(version: int, old: str, new: str) -> None:
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(row, column), types.Position(row, column + len(old))), text=new)]))

    block_k(2, "512", "256")  # half the tiles: 128 KB of shared memory
    # The lens stays, marked as describing the text before the edit, until the compile after
    # the pause in typing (never blank).
    assert (await lens()).startswith("edited since · compile failed")
    await _wait_for(client, uri, lambda d: d is not None and not over_shared(d))
    deadline = asyncio.get_running_loop().time() + 120
    while not (title := await lens()).startswith("compiled") and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.2)
    assert title.startswith("compiled · sm_90") and "128 KB smem" in title
    block_k(3, "256", "512")  # and back: the backend's finding returns without a save
    await _wait_for(client, uri, over_shared, timeout=120)
    assert "BK=512" in (Path(client.root) / "tile.py").read_text()
    assert (await lens()).startswith("compile failed")


@pytest.mark.compiler
async def test_save_verifies_a_kernelbench_problem_against_its_reference(client: LanguageClient):
    pytest.importorskip("triton")
    pytest.importorskip("numpy")  # the Triton interpreter needs it
    example = (Path(__file__).resolve().parents[2] / "examples" / "kernelbench_relu.py").read_text()
    # A wrong candidate: the kernel doubles instead of clamping.
    broken = example.replace("tl.maximum(x, 0.0)", "x * 2.0")
    assert broken != example
    uri = await _open(client, "relu_problem.py", broken)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    diagnostics = await _wait_for(
        client, uri, lambda d: d is not None and any(x.code == "verification-failed" for x in d), timeout=180
    )
    failed = next(x for x in diagnostics if x.code == "verification-failed")
    assert failed.source == "tritonsmith-verify"
    assert "interpreter" in failed.message and "trial" in failed.message
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert any(lens.command.title.startswith("FAILED · interpreter") for lens in lenses)


@pytest.mark.compiler
async def test_save_verifies_a_harnessed_launcher_with_a_lens_and_details_on_hover(client: LanguageClient):
    pytest.importorskip("triton")
    pytest.importorskip("numpy")  # the Triton interpreter needs it
    example = (Path(__file__).resolve().parents[2] / "examples" / "vector_add.py").read_text()
    uri = await _open(client, "vector_add.py", example)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    launcher_row = next(i for i, line in enumerate(example.splitlines()) if line.startswith("def add("))
    deadline = asyncio.get_running_loop().time() + 180
    verified = []
    while not verified and asyncio.get_running_loop().time() < deadline:
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
        verified = [lens for lens in lenses or [] if lens.command.title.startswith("verified · interpreter")]
        await asyncio.sleep(0.2)
    assert verified and verified[0].range.start.line == launcher_row
    assert verified[0].command.title == "verified · interpreter · 3 trials"  # short; the rest on hover
    details = verified[0].command.tooltip or ""
    assert "· also at N_ELEMENTS=" in details  # the odd-size trial ran
    # Without a GPU: the predicted H100 SXM time, on the verdict and next to the kernel's resources.
    assert "predicted H100 SXM time" in details
    kernel_lens = [lens for lens in lenses if lens.command.title.startswith("compiled")]
    assert kernel_lens and "regs" in kernel_lens[0].command.title and " predicted" in kernel_lens[0].command.title
    assert "predicted H100 SXM time " in (kernel_lens[0].command.tooltip or "")
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(launcher_row, 5)))
    assert hover is not None and "add: verified (interpreter)" in hover.contents.value
    assert "not timed" in hover.contents.value


async def test_a_learned_rule_in_the_workspace_pack_goes_live_and_off_without_a_restart(client: LanguageClient):
    from dataclasses import replace

    from tritonsmith.cli import main
    from tritonsmith.rules import Severity, load_rules, pack_paths
    from tritonsmith.state.learned import update_learned

    uri = await _open(client, "learned.py", BAD)
    await _wait_for(client, uri, lambda d: d and len(d) >= 2)
    root = Path(client.root)
    # A learned rule as induction and review write it (format 2, with provenance), whose check
    # is one a graduated rule could name.
    ts109 = load_rules(pack_paths(None, include_user=False)).get("TS109")
    learned = replace(ts109, code="TSL001", name="learned-dtype-call", severity=Severity.WARNING, status="active",
                      template="TypeError: 'dtype' object is not callable", count=3, kernels=("a", "b"),
                      failures=(1, 2, 3), first_seen="2026-01-01T00:00:00Z", last_seen="2026-01-02T00:00:00Z")
    update_learned(root, lambda rules: [*rules, learned])
    assert "format = 2" in (root / ".tritonsmith" / "rules.toml").read_text()
    diagnostics = await _wait_for(client, uri, lambda d: d is not None and "TSL001" in _codes(d))
    assert _codes(diagnostics) == ["TS102", "TS109", "TSL001"]
    # Rejected in review: out of force at once, still in the pack.
    assert main(["rules", "review", str(root), "--reject", "TSL001"]) == 0
    diagnostics = await _wait_for(client, uri, lambda d: d is not None and "TSL001" not in _codes(d))
    assert _codes(diagnostics) == ["TS102", "TS109"]
    assert 'status = "rejected"' in (root / ".tritonsmith" / "rules.toml").read_text()


async def test_a_graduated_learned_rule_warns_in_an_open_document_without_a_restart(client: LanguageClient):
    from tritonsmith.rules import Rule, Severity
    from tritonsmith.state.learned import update_learned

    text = BAD.replace("x = tl.load(x_ptr + offs, mask=offs < n)", "x = tl.load(x_ptr + offs, mask=offs < n)\n    top = tl.max(x).item()")
    uri = await _open(client, "graduated.py", text)
    await _wait_for(client, uri, lambda d: d and len(d) >= 2)
    # A learned rule with the matcher graduation accepted, as `tritonsmith adapt graduate` writes it.
    rule = Rule(code="TSL007", name="tensor-item", title="'tensor' object has no attribute 'item'",
                statement="You cannot call `.item()` on a tensor inside a Triton kernel.", severity=Severity.WARNING,
                category="AttributeError", check="query",
                query='((call function: (attribute attribute: (identifier) @m)) @flag (#eq? @m "item"))',
                provenance="learned with an LLM from the failure log: 3 failures in 2 kernels", count=3,
                status="active", template="AttributeError: <name> object has no attribute 'item'", kernels=("a", "b"),
                failures=(1, 2, 3), bad="    s = tl.sum(x).item()")
    update_learned(Path(client.root), lambda rules: [*rules, rule])
    diagnostics = await _wait_for(client, uri, lambda d: d is not None and "TSL007" in _codes(d))
    [learned] = [d for d in diagnostics if d.code == "TSL007"]
    assert learned.severity == types.DiagnosticSeverity.Warning
    assert learned.range.start == types.Position(line=8, character=10)
    assert learned.message.startswith("You cannot call `.item()` on a tensor")


TYPED = '''import torch
import triton
import triton.language as tl


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptr + rm[:, None] * BLOCK_K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BLOCK_N + rn[None, :])
    acc = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BLOCK_N + rn[None, :], acc)


def mm():
    a = torch.empty(64, 32, dtype=torch.float16, device="cuda")
    b = torch.empty(32, 128, dtype=torch.float16, device="cuda")
    c = torch.empty(64, 128, dtype=torch.float32, device="cuda")
    mm_kernel[(1,)](a, b, c, BLOCK_M=64, BLOCK_N=128, BLOCK_K=32)
    mm_kernel[(1,)](a, b, c, BLOCK_M=32, BLOCK_N=128, BLOCK_K=32)
'''


async def test_hover_on_a_name_shows_its_type_per_launch(client: LanguageClient):
    uri = await _open(client, "typed.py", TYPED)
    await _wait_for(client, uri, lambda d: d is not None)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(12, 5))
    )
    assert hover is not None
    assert "acc: fp32[BLOCK_M=64, BLOCK_N=128]  # launch at line 21" in hover.contents.value
    assert "acc: fp32[BLOCK_M=32, BLOCK_N=128]  # launch at line 22" in hover.contents.value
    pointer = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(10, 17))
    )
    assert pointer is not None and "a_ptr: *fp16" in pointer.contents.value


async def test_inlay_hints_show_assignment_types_when_the_setting_is_on(client: LanguageClient):
    uri = await _open(client, "inlay.py", TYPED)
    await _wait_for(client, uri, lambda d: d is not None)
    params = types.InlayHintParams(text_document=types.TextDocumentIdentifier(uri=uri),
                                   range=types.Range(types.Position(0, 0), types.Position(30, 0)))
    assert not await client.text_document_inlay_hint_async(params)  # off by default
    client.set_configuration({"inlayHints": True}, section="tritonsmith")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))
    for _ in range(50):
        hints = await client.text_document_inlay_hint_async(params)
        if hints:
            break
        await asyncio.sleep(0.1)
    shown = {(h.position.line, h.label) for h in hints or []}
    assert (12, ": fp32[BLOCK_M=64, BLOCK_N=128]") in shown  # `acc = tl.dot(a, b)`, first launch
    assert (7, ": i32[BLOCK_M=64]") in shown  # `rm = tl.arange(0, BLOCK_M)`
    client.set_configuration({"inlayHints": False}, section="tritonsmith")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))
