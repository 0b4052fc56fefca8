""""Optimize this kernel" end to end through pytest-lsp: the code actions, the command that
returns at once, cancellable progress, the `tritonsmith/searchResult` notification, the patch,
the workspace edit that needs confirmation, cancelling (progress, closing the document), and the
one-time consent before code leaves the machine (docs/lsp-extensions.md)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import fix_codeaction_decoding
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tritonsmith.server.searches import hosted_provider, merge3

pytestmark = pytest.mark.e2e

FIXTURE = Path(__file__).resolve().parents[1] / "search" / "fixtures" / "slow_add.py"
LOG = Path(tempfile.gettempdir()) / "tritonsmith-test-optimize.log"
TITLES = ["Optimize this kernel", "Optimize this kernel by refinement", "Optimize this kernel by regeneration"]
HAS_TRITON = importlib.util.find_spec("triton") is not None
HAS_COMPILER = HAS_TRITON and importlib.util.find_spec("numpy") is not None
needs_compiler = pytest.mark.skipif(not HAS_COMPILER, reason="needs triton and numpy (the interpreter)")
# No API key reaches the server under test: nothing here may use the network.
ENV = {k: v for k, v in os.environ.items() if "API_KEY" not in k}


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "tritonsmith", "serve", "--log-file", str(LOG)], server_env=ENV
    )
)
async def client(lsp_client: LanguageClient, tmp_path_factory, request):
    fix_codeaction_decoding(lsp_client)
    root = tmp_path_factory.mktemp("ws")
    # Settings come from pyproject.toml, read at initialize: in force before the first request.
    # A test changes them with `@pytest.mark.parametrize("client", [{...}], indirect=True)`.
    settings = {"verifyOnSave": "off", "proposer": "offline", "device": "cpu", "budget": 3,
                **getattr(request, "param", {})}
    shows_results = settings.pop("searchResultSupport", False)
    lines = [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
    (root / "pyproject.toml").write_text("[tool.tritonsmith]\n" + "\n".join(lines) + "\n")
    lsp_client.root = root
    lsp_client.set_configuration({}, section="tritonsmith")
    lsp_client.results = []
    lsp_client.steps = []  # tritonsmith/searchProgress
    lsp_client.edits = []
    lsp_client.questions = []
    lsp_client.answers = []  # titles to pick, in order; the first choice when empty

    @lsp_client.feature("tritonsmith/searchResult")
    def search_result(params):
        lsp_client.results.append(_plain(params))

    @lsp_client.feature("tritonsmith/searchProgress")
    def search_progress(params):
        lsp_client.steps.append(_plain(params))

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams):
        lsp_client.edits.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    @lsp_client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def show_message_request(params: types.ShowMessageRequestParams):
        lsp_client.questions.append(params)
        titles = [a.title for a in params.actions or []]
        wanted = lsp_client.answers.pop(0) if lsp_client.answers else titles[0]
        return types.MessageActionItem(title=wanted)

    for method in (types.WORKSPACE_CODE_LENS_REFRESH, types.CLIENT_REGISTER_CAPABILITY):
        lsp_client.feature(method)(lambda params: None)

    caps = client_capabilities("visual-studio-code")  # progress, disabled actions, change annotations
    if shows_results:
        caps.experimental = {"tritonsmith": {"searchResultSupport": True}}
    await lsp_client.initialize_session(types.InitializeParams(capabilities=caps, root_uri=root.as_uri()))
    yield
    await lsp_client.shutdown_session()


def _plain(value):
    """pygls hands a custom notification's params over as named tuples: back to JSON values."""
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _open(client: LanguageClient, name: str, text: str) -> str:
    path = Path(client.root) / name
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    return uri


async def _until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def _actions(client: LanguageClient, uri: str, line: int) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(types.Position(line, 4), types.Position(line, 4)),
        context=types.CodeActionContext(diagnostics=[])))
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


async def _optimize(client: LanguageClient, uri: str, mode: str = "auto", options: dict | None = None) -> str:
    began = time.monotonic()
    search_id = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="tritonsmith.server.optimize", arguments=[uri, "add_kernel", mode] + ([options] if options else [])))
    assert isinstance(search_id, str) and search_id
    assert time.monotonic() - began < 2.0, "the command must return at once"
    return search_id


def _search_progress(client: LanguageClient) -> tuple[str, list] | None:
    for token, values in client.progress_reports.items():
        if values and isinstance(values[0], types.WorkDoneProgressBegin) and values[0].title.startswith("Optimizing"):
            return token, values
    return None


def _ended(client: LanguageClient) -> types.WorkDoneProgressEnd | None:
    found = _search_progress(client)
    if found and isinstance(found[1][-1], types.WorkDoneProgressEnd):
        return found[1][-1]
    return None


def _children(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


# -- pure parts -------------------------------------------------------------------------------


def test_merge3_keeps_both_sides_and_refuses_conflicts():
    base = "a\nb\nc\nd\ne\n"
    assert merge3(base, "# top\na\nb\nc\nd\ne\n", "a\nb\nc\nD\ne\n") == "# top\na\nb\nc\nD\ne\n"
    assert merge3(base, "a\nB\nc\nd\ne\n", "a\nb2\nc\nd\ne\n") is None
    assert merge3(base, "a\nB\nc\nd\ne\n", "a\nB\nc\nd\ne\n") == "a\nB\nc\nd\ne\n"


def test_only_off_machine_providers_need_consent():
    assert hosted_provider("anthropic", "") == "Anthropic"
    assert hosted_provider("openai", "http://localhost:8000/v1") is None
    assert hosted_provider("openai", "http://127.0.0.1:11434/v1") is None
    assert hosted_provider("openai", "https://api.example.com/v1") == "https://api.example.com"
    assert hosted_provider("offline", "") is None


# -- code actions -----------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_TRITON, reason="searching needs triton in the server's environment")
async def test_code_actions_offer_the_three_searches_on_a_kernel_with_a_harness(client: LanguageClient):
    text = FIXTURE.read_text()
    uri = _open(client, "slow_add.py", text)
    actions = await _actions(client, uri, _line_of(text, "tl.program_id"))
    optimize = [a for a in actions if a.kind == "refactor.rewrite.optimize.tritonsmith"]
    assert [a.title for a in optimize] == TITLES
    assert [list(a.command.arguments) for a in optimize] == [[uri, "add_kernel", m] for m in ("auto", "refine", "regenerate")]
    assert all(a.command.command == "tritonsmith.server.optimize" and a.disabled is None for a in optimize)
    # Outside a kernel (the launcher), nothing to optimise.
    outside = await _actions(client, uri, _line_of(text, "torch.empty_like"))
    assert not [a for a in outside if a.kind == "refactor.rewrite.optimize.tritonsmith"]


async def test_without_a_spec_the_action_is_disabled_with_the_reason(client: LanguageClient):
    text = FIXTURE.read_text().split("# Verification harness")[0]
    uri = _open(client, "no_harness.py", text)
    actions = await _actions(client, uri, _line_of(text, "tl.program_id"))
    optimize = [a for a in actions if a.kind == "refactor.rewrite.optimize.tritonsmith"]
    assert [a.title for a in optimize] == ["Optimize this kernel"]
    assert optimize[0].disabled is not None and optimize[0].command is None
    if HAS_TRITON:
        assert optimize[0].disabled.reason.startswith("add a verification harness first")


# -- searches ---------------------------------------------------------------------------------


@pytest.mark.compiler
@needs_compiler
async def test_optimize_reports_progress_and_offers_the_faster_kernel_for_review(client: LanguageClient):
    text = FIXTURE.read_text()
    uri = _open(client, "slow_add.py", text)
    search_id = await _optimize(client, uri)
    await _until(lambda: client.edits, 120, "workspace/applyEdit")
    token, values = _search_progress(client)
    begin, *reports, end = values
    assert begin.cancellable and begin.title == "Optimizing add_kernel"
    messages = [r.message for r in reports]
    steps_done = [m for m in messages if "confirming" not in m]
    assert [m.split(" · ")[0] for m in steps_done] == ["step 0/3", "step 1/3", "step 2/3", "step 3/3"], messages
    assert "best so far" in steps_done[-1] and "unconfirmed" in steps_done[-1] and "predicted H100 SXM time" in steps_done[-1]
    confirming = messages[len(steps_done):]  # then the winner is re-timed against the original
    assert confirming and all(m.startswith("step 3/3 · confirming #") for m in confirming), messages
    assert reports[-1].percentage == 100
    assert isinstance(end, types.WorkDoneProgressEnd) and end.message.startswith("done: ")
    # Without a GPU the search ranks and claims by the predicted time, says it is an estimate
    # and what is known of its error, and names the objective once.
    assert "(a model's estimate, not yet calibrated against a GPU) faster (predicted H100 SXM time)" in end.message
    assert end.message.count("predicted H100 SXM time") == 1

    [result] = client.results
    assert result["searchId"] == search_id and result["uri"] == uri and result["kernel"] == "add_kernel"
    assert result["original"] == text and "BLOCK_SIZE=16" not in result["best"]
    assert result["speedup"] > 1 and result["spread"][0] > 1 and result["measuredOn"] == "interpreter"
    assert result["measured"] == "predicted H100 SXM time"
    confirmation = result["confirmation"]  # both predicted again: a point, claimed above the margin
    assert confirmation["claimed"] and confirmation["low"] == result["spread"][0] > 1 + confirmation["noiseFloor"]
    assert confirmation["measured"] == "predicted H100 SXM time" and confirmation["low"] == confirmation["high"]
    assert result["result"] == confirmation["text"] and "a model's estimate" in result["result"]
    assert result["stopped"] == "budget" and result["costUsd"] == 0
    tree = result["tree"]
    assert len(tree) == 4 and tree[0]["kind"] == "root" and tree[0]["parent"] is None
    assert {n["outcome"] for n in tree} <= {"correct", "wrong", "not_compiled"}
    assert any(n["id"] == result["bestId"] and n["speedup"] == result["screeningSpeedup"] for n in tree)

    patch = Path(client.root) / ".tritonsmith" / f"{search_id}.patch"
    assert patch.read_text().startswith("--- a/slow_add.py")
    assert [d.uri for d in client.shown_documents] == [patch.as_uri()]

    [params] = client.edits
    [change] = params.edit.document_changes
    assert change.text_document.uri == uri and change.text_document.version == 1
    [edit] = change.edits
    assert edit.range.start == types.Position(0, 0) and edit.range.end == types.Position(len(text.splitlines()), 0)
    assert params.edit.change_annotations[edit.annotation_id].needs_confirmation
    assert edit.new_text == result["best"] and "BLOCK_SIZE=16" not in edit.new_text
    assert result["improved"] is True

    # The live tree: one tritonsmith/searchProgress per evaluated node, the node alone.
    steps = client.steps
    assert [s["step"] for s in steps] == [0, 1, 2, 3] and all(s["steps"] == 3 for s in steps)
    assert {s["searchId"] for s in steps} == {search_id} and {s["journalId"] for s in steps} == {result["journalId"]}
    assert all(s["uri"] == uri and s["kernel"] == "add_kernel" for s in steps)
    by_id = {n["id"]: n for n in tree}
    assert sorted(s["node"]["id"] for s in steps) == sorted(by_id)
    for step in steps:
        node = step["node"]
        assert set(node) == {"id", "parent", "kind", "outcome", "speedup"}
        assert {k: by_id[node["id"]][k] for k in node} == node

    # The journal, for views: listSearches, searchTree, searchNode.
    journal_id = result["journalId"]
    listed = await _command(client, "tritonsmith.server.listSearches")
    [entry] = [e for e in listed if e["id"] == journal_id]
    assert entry["kernel"] == "add_kernel" and entry["nodes"] == 4 and entry["status"]
    assert Path(entry["path"]) == Path(client.root, "slow_add.py").resolve()
    assert entry["bestSpeedup"] == pytest.approx(result["speedup"])  # the confirmed figure
    assert [e["id"] for e in await _command(client, "tritonsmith.server.listSearches", uri)] == [journal_id]
    assert await _command(client, "tritonsmith.server.listSearches", Path(client.root, "other.py").as_uri()) == []
    past = await _command(client, "tritonsmith.server.searchTree", journal_id)
    assert past["tree"] == tree and past["original"] == text and past["bestId"] == result["bestId"]
    assert past["best"] == result["best"] and past["kernel"] == "add_kernel" and past["edit"] is None
    assert past["improved"] and past["confirmation"] == result["confirmation"] and past["spread"] == result["spread"]
    node = await _command(client, "tritonsmith.server.searchNode", journal_id, result["bestId"])
    # The result is the node without the edits the prediction could not see (equivalence.py).
    from tritonsmith.search.equivalence import without_unmeasured

    assert without_unmeasured(text, node["source"], "predicted") == result["best"] and node["outcome"] == "correct"
    assert node["speedup"] == result["screeningSpeedup"]
    assert node["kind"] in ("refine", "regenerate") and "message" in node
    # What the step changed, against its parent (or the original): a unified diff, no file names.
    assert node["diffAgainst"] in {n["id"] for n in tree} and node["diff"].startswith("@@")
    assert any(line.startswith("+") for line in node["diff"].splitlines())
    root = await _command(client, "tritonsmith.server.searchNode", journal_id, 0)
    assert root["source"] == text and root["kind"] == "root" and "diff" not in root
    assert await _command(client, "tritonsmith.server.searchNode", journal_id, 99) is None
    assert await _command(client, "tritonsmith.server.searchTree", "s-nope") is None


async def _command(client: LanguageClient, command: str, *arguments):
    return _plain(await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=list(arguments))))


@pytest.mark.compiler
@needs_compiler
@pytest.mark.parametrize("client", [{"proposer": "anthropic"}], indirect=True)
async def test_a_proposer_for_one_search_overrides_the_setting_and_no_improvement_still_sends_the_tree(
        client: LanguageClient):
    # The original fails its own harness: the search ends after one node, without improvement.
    text = FIXTURE.read_text().replace("x + y, mask=mask", "x - y, mask=mask")
    uri = _open(client, "broken_add.py", text)
    search_id = await _optimize(client, uri, "refine", {"proposer": "offline"})
    await _until(lambda: client.results, 60, "tritonsmith/searchResult")
    assert not client.questions, "an offline search asks no consent, whatever the setting"
    assert not (Path(client.root) / ".tritonsmith" / "consent.json").exists()
    [result] = client.results
    assert result["searchId"] == search_id and result["improved"] is False and result["edit"] is None
    assert result["stopped"] == "original-fails" and result["costUsd"] == 0
    assert [n["id"] for n in result["tree"]] == [0] and result["tree"][0]["outcome"] != "correct"
    assert [s["node"]["id"] for s in client.steps] == [0]
    await asyncio.sleep(0.3)
    assert not client.edits and not client.shown_documents, "no edit for a search without improvement"
    # An unknown proposer starts nothing.
    refused = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="tritonsmith.server.optimize", arguments=[uri, "add_kernel", "auto", {"proposer": "nope"}]))
    assert refused is None


@pytest.mark.compiler
@needs_compiler
@pytest.mark.parametrize("client", [{"objective": "interpreter", "budget": 1}], indirect=True)
async def test_the_objective_setting_ranks_a_search_without_a_gpu_by_interpreter_time(client: LanguageClient):
    uri = _open(client, "slow_add.py", FIXTURE.read_text())
    await _optimize(client, uri, "refine")
    await _until(lambda: client.results, 120, "tritonsmith/searchResult")
    [result] = client.results
    assert result["measuredOn"] == "interpreter" and result["measured"] == "interpreter time"
    assert "predicted" not in (result["result"] or "")


@pytest.mark.compiler
@needs_compiler
@pytest.mark.parametrize("client", [{"budget": 50}], indirect=True)
async def test_cancelling_the_progress_stops_the_search_and_its_workers(client: LanguageClient):
    uri = _open(client, "slow_add.py", FIXTURE.read_text())
    await _optimize(client, uri)
    token, _ = await _until(lambda: _search_progress(client), 30, "the search's progress")
    await _until(lambda: len(_search_progress(client)[1]) >= 2, 60, "the first step")
    cancelled = time.monotonic()
    client.protocol.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token))
    end = await _until(lambda: _ended(client), 30, "the end of the progress")
    assert end.message.startswith("cancelled"), end.message
    assert time.monotonic() - cancelled < 15
    assert not client.results and not client.edits
    if Path("/proc").is_dir():
        pid = client._server.pid
        await _until(lambda: not _children(pid) or None, 10, "the workers to exit")


@pytest.mark.compiler
@needs_compiler
@pytest.mark.parametrize("client", [{"budget": 50}], indirect=True)
async def test_closing_the_document_cancels_its_search(client: LanguageClient):
    uri = _open(client, "slow_add.py", FIXTURE.read_text())
    await _optimize(client, uri)
    await _until(lambda: _search_progress(client), 30, "the search's progress")
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))
    end = await _until(lambda: _ended(client), 30, "the end of the progress")
    assert end.message.startswith("cancelled"), end.message
    assert not client.results and not client.edits


@pytest.mark.parametrize("client", [{"proposer": "anthropic"}], indirect=True)
async def test_a_hosted_model_asks_once_per_workspace(client: LanguageClient):
    uri = _open(client, "slow_add.py", FIXTURE.read_text())
    client.answers = ["Allow for this workspace"]
    await _optimize(client, uri)
    # No key in the server's environment: allowed, but the search cannot start.
    await _until(lambda: any("ANTHROPIC_API_KEY" in m.message for m in client.messages), 30, "the missing key")
    [question] = client.questions
    assert question.message == "tritonsmith: Send this kernel (add_kernel) to Anthropic for optimisation?"
    assert [a.title for a in question.actions] == ["Allow for this workspace", "Use offline proposer", "Cancel"]
    consent = json.loads((Path(client.root) / ".tritonsmith" / "consent.json").read_text())
    assert "Anthropic" in consent["allowed"]
    await _optimize(client, uri)
    await _until(lambda: sum("ANTHROPIC_API_KEY" in m.message for m in client.messages) == 2, 30, "a second try")
    assert len(client.questions) == 1  # asked once


@pytest.mark.compiler
@needs_compiler
@pytest.mark.parametrize("client", [{"proposer": "anthropic"}], indirect=True)
async def test_offline_instead_and_a_buffer_changed_meanwhile_is_rebased(client: LanguageClient):
    text = FIXTURE.read_text()
    uri = _open(client, "slow_add.py", text)
    client.answers = ["Use offline proposer", "Rebase"]
    await _optimize(client, uri)
    await _until(lambda: _search_progress(client), 30, "the search's progress")
    assert not (Path(client.root) / ".tritonsmith" / "consent.json").exists()
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(0, 0), types.Position(0, 0)), text="# edited meanwhile\n")]))
    await _until(lambda: client.edits, 120, "workspace/applyEdit")
    assert [q.actions[1].title for q in client.questions] == ["Use offline proposer", "Rebase"]
    assert client.results and client.results[0]["original"] == text  # the diff is against the buffer at start
    [params] = client.edits
    [change] = params.edit.document_changes
    assert change.text_document.version == 2
    [edit] = change.edits
    assert edit.new_text.startswith("# edited meanwhile\n") and "BLOCK_SIZE=16" not in edit.new_text


@pytest.mark.compiler
@needs_compiler
@pytest.mark.parametrize("client", [{"searchResultSupport": True}], indirect=True)
async def test_a_client_that_shows_results_itself_applies_them_through_the_command(client: LanguageClient):
    text = FIXTURE.read_text()
    uri = _open(client, "slow_add.py", text)
    search_id = await _optimize(client, uri)
    await _until(lambda: client.results, 120, "tritonsmith/searchResult")
    [result] = client.results
    assert result["edit"]["documentChanges"][0]["edits"][0]["newText"] == result["best"]
    await asyncio.sleep(0.3)
    assert not client.edits and not client.shown_documents  # the client reviews it in its own view
    applied = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="tritonsmith.server.applySearchResult", arguments=[search_id]))
    assert applied is True
    [params] = client.edits
    [edit] = params.edit.document_changes[0].edits
    assert edit.new_text == result["best"] and params.edit.change_annotations is None  # confirmed already
