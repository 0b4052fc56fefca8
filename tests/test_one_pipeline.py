"""One verification pipeline (evaluator/pipeline.py): `tritonsmith verify`, the server's save job
and a search's evaluator give the same verdict on the same file. Each file is checked by all
three, for real: the command line in a subprocess, the server through a real LSP client
(pytest-lsp), the search's `CandidateEvaluator` in-process.

The files: a legitimate kernel (verified), an attack the run catches (the answer computed in
NumPy: FAILED at stage "work") and an attack the static checks catch (a branch on `x.is_cpu`:
NOT VERIFIED at stage "branch")."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

pytestmark = [pytest.mark.e2e, pytest.mark.compiler, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ADVERSARY = HERE / "evaluator" / "fixtures" / "adversary"
FILES = {  # file -> (standing, stage) every caller must report
    "ok01_gemm_epilogue.py": ("verified", "done"),
    "a03_numpy.py": ("FAILED", "work"),
    "a28_senses_is_cpu.py": ("NOT VERIFIED", "branch"),
}
LOG = Path(tempfile.gettempdir()) / "tritonsmith-test-one-pipeline.log"


def _from_the_command_line(path: Path) -> tuple[str, str]:
    done = subprocess.run([sys.executable, "-m", "tritonsmith", "verify", str(path), "--format", "json",
                           "--no-predict"], capture_output=True, text=True, timeout=600, cwd=path.parent)
    verdict = json.loads(done.stdout)["verification"][0]
    standing = verdict["message"].split(" · ", 1)[0]
    return standing, verdict["stage"]


def _from_a_search(path: Path) -> tuple[str, str]:
    from tritonsmith.evaluator.verify import detect_specs
    from tritonsmith.search.evaluate import CandidateEvaluator
    from tritonsmith.search.model import Task

    source = path.read_text()
    spec = detect_specs(path, source)[0]
    task = Task(path=str(path), kernel="", source=source, spec="kernelbench", device="interpreter", objective="time")
    with CandidateEvaluator(task, spec) as evaluator:
        evaluation = evaluator.evaluate(source)
    return evaluation.standing, evaluation.stage


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "tritonsmith", "serve", "--log-file", str(LOG)])
)
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    (root / "pyproject.toml").write_text("[tool.tritonsmith]\n")
    for name in FILES:
        shutil.copy(ADVERSARY / name, root / name)
    lsp_client.root = root

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


async def _from_the_server(client: LanguageClient, path: Path) -> tuple[str, str]:
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=path.read_text())))
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 600
    while loop.time() < deadline:
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
        for lens in lenses or []:
            title = lens.command.title if lens.command is not None else ""
            for standing in ("verified", "FAILED", "NOT VERIFIED"):
                if title.startswith(standing + " · "):  # "FAILED · interpreter · work: ..."
                    parts = title.split(" · ")
                    return standing, "done" if standing == "verified" else parts[2].split(":", 1)[0]
        await asyncio.sleep(0.5)
    raise AssertionError(f"no verdict lens for {path.name}")


async def test_the_command_line_the_server_and_a_search_give_the_same_verdict(client: LanguageClient):
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    root = Path(client.root)
    for name, expected in FILES.items():
        path = root / name
        served = await _from_the_server(client, path)
        command_line = await asyncio.to_thread(_from_the_command_line, path)
        searched = await asyncio.to_thread(_from_a_search, path)
        assert command_line == served == searched == expected, (name, command_line, served, searched)
