"""Graduation: a learned rule's matcher is accepted only if it flags every failing example and no
known-good code; an accepted one runs as a static check (a warning until review accepts it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tritonsmith.adapt.graduate import GRADUATE_SYSTEM, graduate, known_good, verify_query
from tritonsmith.adapt.induce import induce
from tritonsmith.cli import main
from tritonsmith.rules import Severity
from tritonsmith.rules.checks.query import QUERY_CHECK
from tritonsmith.settings import Settings
from tritonsmith.state import FailureLog, kernel_hash, load_learned
from tritonsmith.workspace import Workspace

ARANGE_FLOAT = "at 2:11:\n    offs = tl.arange(0, 128.0)\n           ^\nTypeError(\"arange's arguments must be of type tl.constexpr\")"
ITEM = "at 5:8:\n    s = tl.sum(x).item()\n        ^\nAttributeError(\"'tensor' object has no attribute 'item'\")"

USER_FILE = '''import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, 64.0)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, x * 2, mask=offs < n)
'''


def learn(root: Path, message: str, snippets: list[str]) -> str:
    """Record one failure per snippet (in two kernels) and induce a learned rule; its code."""
    log = FailureLog(root)
    for i, snippet in enumerate(snippets):
        log.record(path=f"k{i % 2}.py", kernel=f"k{i % 2}", stage="compile", message=message, rules=[],
                   snippet=snippet, kernel_hash=kernel_hash(snippet), triton_version="3.6.0")
    log.close()
    [learned] = induce(root)
    assert learned.rule.status == "active"
    return learned.rule.code


def findings(root: Path, source: str, code: str):
    return [f for f in Workspace(root, Settings(), include_user_packs=False).check_source(source) if f.code == code]


def test_a_derived_matcher_is_information_until_review_makes_it_a_warning_then_an_error(tmp_path: Path):
    code = learn(tmp_path, ARANGE_FLOAT, ["    offs = tl.arange(0, 128.0)", "    idx = tl.arange(0, 64.0) + pid",
                                          "    r = tl.arange(0, 32.0)[:, None]"])
    result = graduate(tmp_path, code)
    assert result.accepted and result.origin == "derived"
    # No failure was recorded with its file: no typed matcher is tried.
    assert result.tried[0][0] == "typed" and "file and error position" in result.tried[0][2].reason
    # The most specific derived candidate (an integer first argument) also fires on good code: refused.
    first = next(verdict for origin, _, verdict in result.tried if origin == "derived")
    assert not first.accepted and first.reason.startswith("fires on known-good code")
    assert result.tried[-1][2].accepted and "(float)" in result.query
    rule = result.rule
    assert (rule.check, rule.query, rule.severity) == (QUERY_CHECK, result.query, Severity.INFORMATION)
    assert 'check = "query"' in (tmp_path / ".tritonsmith" / "rules.toml").read_text()
    # A live check: the user's kernel is flagged at the call, correct code is not.
    [finding] = findings(tmp_path, USER_FILE, code)
    assert finding.severity is Severity.INFORMATION and finding.span.start == (6, 11)
    assert finding.message.startswith("You cannot write Triton kernel code that fails to compile")
    assert findings(tmp_path, USER_FILE.replace("64.0", "64"), code) == []
    # Accepted in review: a warning; accepted again: an error.
    assert main(["rules", "review", str(tmp_path), "--accept", code]) == 0
    assert [f.severity for f in findings(tmp_path, USER_FILE, code)] == [Severity.WARNING]
    assert main(["rules", "review", str(tmp_path), "--accept", code]) == 0
    assert [f.severity for f in findings(tmp_path, USER_FILE, code)] == [Severity.ERROR]


def test_a_matcher_that_also_fires_on_good_code_is_refused(tmp_path: Path):
    code = learn(tmp_path, ITEM, ["    x = tl.load(p)\n    s = tl.sum(x).item()", "    t = tl.sum(v).item()",
                                  "    m = tl.sum(a, axis=0).item()"])
    rule = load_learned(tmp_path)[0]
    everything = '((call function: (_) @fn) @flag (#ts-qualified? @fn "triton.language.sum"))'
    verdict = verify_query(rule, everything, [f"import triton.language as tl\n@triton.jit\ndef k(x):\n{s}\n"
                                              for s in ("    s = tl.sum(x).item()",)], known_good())
    assert not verdict.accepted and verdict.reason.startswith("fires on known-good code:")
    # Offline, nothing the examples share is specific enough: no matcher, the pack is unchanged.
    before = (tmp_path / ".tritonsmith" / "rules.toml").read_text()
    result = graduate(tmp_path, code, proposals=[everything])
    assert not result.accepted and result.tried and all(not v.accepted for _, _, v in result.tried)
    assert result.tried[0][0] == "given" and "fires on known-good code" in result.tried[0][2].reason
    assert (tmp_path / ".tritonsmith" / "rules.toml").read_text() == before


class Recorded:
    """A model answering from recorded texts through the real Anthropic SDK (no network)."""

    def __init__(self, *texts: str) -> None:
        anthropic = pytest.importorskip("anthropic")
        httpx2 = pytest.importorskip("httpx2")
        from tritonsmith.adapt.llm_induce import anthropic_model

        self.texts = list(texts)
        self.requests: list[dict] = []

        def handler(request):
            self.requests.append(json.loads(request.content))
            body = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
                    "content": [{"type": "text", "text": self.texts.pop(0)}], "stop_reason": "end_turn",
                    "stop_sequence": None, "usage": {"input_tokens": 900, "output_tokens": 80}}
            return httpx2.Response(200, json=body)

        client = anthropic.Anthropic(api_key="sk-ant-test-NOT-A-KEY",
                                     http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
        self.model = anthropic_model(client=client)


ITEM_QUERY = '((call function: (attribute attribute: (identifier) @method)) @flag (#eq? @method "item"))'


def test_an_llm_proposed_query_is_accepted(tmp_path: Path):
    code = learn(tmp_path, ITEM, ["    s = tl.sum(x).item()", "    t = tl.sum(v).item()", "    m = tl.max(a).item()"])
    recorded = Recorded(json.dumps({"query": ITEM_QUERY, "reason": "calls of a tensor's .item()"}))
    result = graduate(tmp_path, code, model=recorded.model)
    assert result.accepted and (result.origin, result.query) == ("llm", ITEM_QUERY)
    [request] = recorded.requests
    assert request["system"][0]["text"] == GRADUATE_SYSTEM
    assert "s = tl.sum(x).item()" in request["messages"][0]["content"]
    source = USER_FILE.replace("    x = tl.load(x_ptr + offs, mask=offs < n)\n",
                               "    x = tl.load(x_ptr + offs, mask=offs < n)\n    top = tl.max(x).item()\n")
    [finding] = findings(tmp_path, source, code)
    assert finding.span.start == (8, 10)


@pytest.mark.parametrize(("answer", "reason"), [
    ('{"query": "((call function: (_) @fn) @flag (#exec! @fn \\"rm -rf /\\"))"}', "malformed query: unknown predicate #exec!"),
    ('{"query": "((call function: (identifier) @flag)"}', "malformed query: not a tree-sitter-python query"),
    ('{"query": "(call function: (identifier) @fn)"}', "malformed query: the query captures no @flag node"),
    ("no matcher", "the model proposed no matcher"),
])
def test_a_malformed_proposal_is_refused_with_a_reason(tmp_path: Path, answer: str, reason: str):
    code = learn(tmp_path, ITEM, ["    s = tl.sum(x).item()", "    t = tl.sum(v).item()", "    m = tl.max(a).item()"])
    before = (tmp_path / ".tritonsmith" / "rules.toml").read_text()
    result = graduate(tmp_path, code, model=Recorded(answer).model)
    assert not result.accepted
    origin, _, verdict = result.tried[-1]
    assert origin == "llm" and verdict.reason.startswith(reason)
    assert (tmp_path / ".tritonsmith" / "rules.toml").read_text() == before


def test_a_pack_with_a_bad_query_keeps_every_other_rule_working(tmp_path: Path):
    code = learn(tmp_path, ARANGE_FLOAT, ["    offs = tl.arange(0, 128.0)", "    idx = tl.arange(0, 64.0)",
                                          "    r = tl.arange(0, 32.0)"])
    pack = tmp_path / ".tritonsmith" / "rules.toml"
    text = pack.read_text().replace(f'code = "{code}"', f'code = "{code}"\ncheck = "query"\nquery = "((call"')
    pack.write_text(text)
    workspace = Workspace(tmp_path, Settings(), include_user_packs=False)
    assert workspace.pack_errors == [] and workspace.rules.get(code) is not None
    codes = {f.code for f in workspace.check_source(USER_FILE.replace("x * 2", "tl.float32(x)"))}
    assert code not in codes and "TS109" in codes  # the builtin rules still run
