"""The "Create verification harness" code action, end to end through pytest-lsp: a real server
process, a real client (docs/harness.md)."""

from __future__ import annotations

import asyncio
import sys
import tempfile
import typing
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import fix_codeaction_decoding
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

pytestmark = pytest.mark.e2e

TITLE = "Create verification harness"

# No `import torch`: the action adds it.
LAUNCHER = '''import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * row_stride + offs, mask=offs < n_cols, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * row_stride + offs, num / tl.sum(num, axis=0), mask=offs < n_cols)


def softmax(x, out):
    rows, cols = x.shape
    softmax_kernel[(rows,)](out, x, cols, x.stride(0), BLOCK=1024)
    return out


def helper(x):
    return x
'''

EXPECTED = '''import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * row_stride + offs, mask=offs < n_cols, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * row_stride + offs, num / tl.sum(num, axis=0), mask=offs < n_cols)


def softmax(x, out):
    rows, cols = x.shape
    softmax_kernel[(rows,)](out, x, cols, x.stride(0), BLOCK=1024)
    return out


# Verification harness for softmax() (docs/harness.md): fill in softmax_reference.
SOFTMAX_ROWS = 1024
SOFTMAX_COLS = 1024
SOFTMAX_N = 1024


def softmax_inputs():
    """One trial's arguments for softmax(), drawn fresh under each trial's seed."""
    return [
        torch.randn(SOFTMAX_ROWS, SOFTMAX_COLS, device="cuda"),
        torch.randn(SOFTMAX_N, device="cuda"),
    ]


def softmax_reference(x, out):
    """What softmax(x, out) must return, in plain PyTorch.

    Compared with what softmax() returns, output by output: a tensor element by element within
    its dtype's tolerance (atol = rtol = 1e-4 for float32, 1e-2 for float16 and bfloat16), with
    the same shape and dtype; an int, bool or str must be equal, a float within the float32
    tolerance.
    """
    raise NotImplementedError("write what softmax(x, out) must return, in PyTorch")


def helper(x):
    return x
'''


LOG = Path(tempfile.gettempdir()) / "tritonsmith-test-harness-action.log"


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

    caps = client_capabilities("visual-studio-code")
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
    deadline = asyncio.get_running_loop().time() + 10
    while client.diagnostics.get(uri) is None:  # the first check has run
        assert asyncio.get_running_loop().time() < deadline, "no diagnostics published"
        await asyncio.sleep(0.02)
    return uri


async def _actions(
    client: LanguageClient, uri: str, line: int, only: list[str] | None = None
) -> list[types.CodeAction]:
    position = types.Position(line, 4)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(position, position),
            context=types.CodeActionContext(diagnostics=[], only=only),
        )
    )
    return [a for a in actions or [] if isinstance(a, types.CodeAction)]


def _apply(text: str, edits: typing.Sequence[types.TextEdit]) -> str:
    """Apply LSP text edits (ASCII text: characters are columns), last first, as an editor does."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: types.Position) -> int:
        return starts[min(position.line, len(lines))] + position.character

    ordered = sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True)
    for edit in ordered:
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


async def test_action_on_the_launcher_writes_the_harness(client: LanguageClient):
    uri = await _open(client, "softmax.py", LAUNCHER)
    def_line = LAUNCHER.splitlines().index("def softmax(x, out):")
    for line in (def_line, def_line + 2):  # its def line and its body
        actions = [a for a in await _actions(client, uri, line) if a.title == TITLE]
        assert len(actions) == 1
        assert actions[0].kind == types.CodeActionKind.RefactorRewrite  # shown in the lightbulb
    edits = actions[0].edit.document_changes[0].edits
    assert _apply(LAUNCHER, edits) == EXPECTED

    # Not on the kernel, nor on a function that launches nothing.
    kernel_line = LAUNCHER.splitlines().index("    row = tl.program_id(0)")
    helper_line = LAUNCHER.splitlines().index("def helper(x):")
    for line in (kernel_line, helper_line):
        assert TITLE not in [a.title for a in await _actions(client, uri, line)]

    # Once applied, the launcher has a harness: no more action.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=EXPECTED)],
        )
    )
    assert TITLE not in [a.title for a in await _actions(client, uri, def_line + 1)]


async def test_source_action_anywhere_in_the_file(client: LanguageClient):
    uri = await _open(client, "source.py", LAUNCHER)
    actions = await _actions(client, uri, 0, only=[types.CodeActionKind.Source])
    (action,) = [a for a in actions if a.title == TITLE]
    assert action.kind == "source.createHarness.tritonsmith"
    assert _apply(LAUNCHER, action.edit.document_changes[0].edits) == EXPECTED
    # Asked for fix-all only, it stays out.
    assert await _actions(client, uri, 0, only=["source.fixAll"]) == []
