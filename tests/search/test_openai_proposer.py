"""The OpenAI-compatible proposer (vLLM, Ollama, gateways) through httpx with a MockTransport
answering chat-completions requests as such servers do; no network, no real sleep."""

from __future__ import annotations

import json
import logging

import pytest

httpx = pytest.importorskip("httpx")

from tritonsmith.search.model import (  # noqa: E402
    Evaluation,
    Outcome,
    PoolEntry,
    ProposalError,
    StepContext,
    Task,
)
from tritonsmith.search.proposers import OpenAICompatibleProposer  # noqa: E402
from tritonsmith.search.proposers._llm import Price, ProposerStopped  # noqa: E402

BASE_URL = "http://localhost:8000/v1"
MODEL = "Qwen/Qwen2.5-Coder-32B-Instruct"
KEY = "sk-local-test-NOT-A-REAL-KEY-91be"

SOURCE = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    return out
'''
TASK = Task(path="kernels/add.py", kernel="add_kernel", source=SOURCE, spec="harness:add", device="gpu")
CORRECT = Evaluation(Outcome.CORRECT, speedup=1.0, time_ms=0.02)
CONTEXT = StepContext(task=TASK, chain=((SOURCE, CORRECT),), pool=(PoolEntry(SOURCE, CORRECT),),
                      pitfalls=("You cannot call `tl.float32` as a function.",))
TUNER_TEXT = """\
<reasoning_1>Fewer, wider programs.</reasoning_1>
<old_str_1>
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
</old_str_1>
<new_str_1>
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
</new_str_1>
"""
NEW_FILE = SOURCE.replace("256", "2048")
PROPOSER_TEXT = f"Plan: 2048-wide blocks.\n\n```python\n{NEW_FILE}```"


def completion(text: str | None, *, finish_reason: str = "stop", prompt_tokens: int = 3100,
               completion_tokens: int = 420, cached: int = 0, refusal: str | None = None) -> dict:
    """A chat-completions response body as vLLM sends it."""
    return {
        "id": "chatcmpl-8f2b1c0e9a",
        "object": "chat.completion",
        "created": 1767225600,
        "model": MODEL,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": refusal, "tool_calls": []},
            "logprobs": None,
            "finish_reason": finish_reason,
        }],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens,
                  "prompt_tokens_details": {"cached_tokens": cached}},
    }


def ok(text: str | None, **kwargs) -> httpx.Response:
    return httpx.Response(200, json=completion(text, **kwargs))


def error(status: int, text: str, headers: dict | None = None) -> httpx.Response:
    body = {"object": "error", "message": text, "type": "BadRequestError", "code": status}
    return httpx.Response(status, json={"error": body}, headers=headers or {})


class Server:
    def __init__(self, *replies) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def bodies(self) -> list[dict]:
        return [json.loads(request.content) for request in self.requests]


def proposer(server: Server, **kwargs) -> tuple[OpenAICompatibleProposer, list[float]]:
    sleeps: list[float] = []
    client = httpx.Client(transport=httpx.MockTransport(server))
    kwargs.setdefault("backoff_base_s", 1.0)
    prop = OpenAICompatibleProposer(BASE_URL + "/", MODEL, client=client, sleep=sleeps.append, **kwargs)
    return prop, sleeps


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_regenerate_posts_a_chat_completion_and_returns_the_file():
    server = Server(ok(PROPOSER_TEXT))
    prop, _ = proposer(server, temperature=0.7)
    assert prop.regenerate(CONTEXT) == NEW_FILE
    (request,) = server.requests
    assert str(request.url) == f"{BASE_URL}/chat/completions"
    assert "authorization" not in request.headers  # a local server needs no key
    body = json.loads(request.content)
    assert body["model"] == MODEL and body["temperature"] == 0.7 and body["max_tokens"] == 16_384
    system, user = body["messages"]
    assert system["role"] == "system" and "## Common Pitfalls" in system["content"]
    assert "## Task" in system["content"] and "## Kernel Pool" in user["content"]


def test_refine_applies_the_edits_after_a_reviser_call():
    server = Server(ok("1. Use BLOCK=1024."), ok(TUNER_TEXT))
    prop, _ = proposer(server)
    source, edits = prop.refine(CONTEXT)
    assert "BLOCK=1024)" in source and len(edits) == 1
    assert "1. Use BLOCK=1024." in server.bodies()[1]["messages"][1]["content"]


def test_thinking_is_stripped_before_parsing():
    text = f"<think>Maybe ```python\nx = 1\n``` is enough... no.</think>\n{PROPOSER_TEXT}"
    prop, _ = proposer(Server(ok(text)))
    assert prop.regenerate(CONTEXT) == NEW_FILE


def test_cost_is_zero_without_a_price_and_counted_with_one():
    prop, _ = proposer(Server(ok(PROPOSER_TEXT)))
    prop.regenerate(CONTEXT)
    assert prop.cost_usd == 0.0 and prop.usage.input_tokens == 3100

    server = Server(ok(PROPOSER_TEXT, prompt_tokens=3000, completion_tokens=1000, cached=2000))
    prop, _ = proposer(server, price=Price(input=1.0, output=4.0, cache_read=0.5))
    prop.regenerate(CONTEXT)
    assert prop.cost_usd == pytest.approx((1000 * 1.0 + 1000 * 4.0 + 2000 * 0.5) / 1e6)
    assert prop.usage.cache_read_tokens == 2000


def test_spending_cap_refuses_before_sending():
    server = Server(ok(PROPOSER_TEXT, prompt_tokens=1_000_000, completion_tokens=0), ok(PROPOSER_TEXT))
    prop, _ = proposer(server, price=Price(input=1.0, output=1.0), spending_cap_usd=0.5)
    prop.regenerate(CONTEXT)
    with pytest.raises(ProposerStopped, match=r"spending cap of \$0\.50 reached \(\$1\.00 spent\)"):
        prop.regenerate(CONTEXT)
    assert len(server.requests) == 1


def test_rate_limit_and_server_errors_are_retried_with_growing_backoff():
    server = Server(error(429, "rate limited"), error(503, "model is loading"), ok(PROPOSER_TEXT))
    prop, sleeps = proposer(server)
    assert prop.regenerate(CONTEXT) == NEW_FILE
    assert len(server.requests) == 3 and sleeps[0] < sleeps[1]


def test_timeout_and_refused_connection_are_retried():
    server = Server(httpx.ReadTimeout("timed out"), httpx.ConnectError("[Errno 111] Connection refused"),
                    ok(PROPOSER_TEXT))
    prop, sleeps = proposer(server)
    assert prop.regenerate(CONTEXT) == NEW_FILE
    assert len(sleeps) == 2


def test_retries_exhausted_names_the_server():
    server = Server(*(httpx.ConnectError("refused") for _ in range(3)))
    prop, sleeps = proposer(server, max_retries=2)
    with pytest.raises(ProposalError, match=r"localhost:8000/v1.*gave up after 3 attempts"):
        prop.regenerate(CONTEXT)
    assert len(sleeps) == 2


def test_wrong_base_url_stops_with_a_hint():
    prop, _ = proposer(Server(httpx.Response(404, text="404 page not found")))
    with pytest.raises(ProposerStopped, match="check the base URL"):
        prop.regenerate(CONTEXT)


def test_refusal_and_content_filter_are_proposal_errors():
    prop, _ = proposer(Server(ok(None, refusal="I can't help with that."),
                              ok("", finish_reason="content_filter")))
    for _ in range(2):
        with pytest.raises(ProposalError, match="refused the proposer request"):
            prop.regenerate(CONTEXT)


def test_malformed_and_cut_off_answers():
    prop, _ = proposer(Server(ok("Sure, here are some ideas."),
                              ok("```python\nimport triton\n", finish_reason="length"),
                              httpx.Response(200, text="<html>gateway</html>")), reviser=False)
    with pytest.raises(ProposalError, match="no <old_str_1>"):
        prop.refine(CONTEXT)
    with pytest.raises(ProposalError, match="cut off at max_tokens"):
        prop.regenerate(CONTEXT)
    with pytest.raises(ProposalError, match="not a chat completion"):
        prop.regenerate(CONTEXT)


def test_key_is_sent_as_bearer_and_never_shown(caplog, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server = Server(error(401, f"Invalid API key {KEY}"), error(500, f"upstream rejected {KEY}"),
                    error(500, f"upstream rejected {KEY}"))
    prop, _ = proposer(server, max_retries=1)
    messages = []
    with caplog.at_level(logging.DEBUG):
        for _ in range(2):
            with pytest.raises(ProposalError) as info:
                prop.regenerate(CONTEXT)
            messages.append(str(info.value))
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert "rejected the API key (401" in messages[0] and "server error (500)" in messages[1]
    assert all(KEY not in m for m in messages)
    assert KEY not in caplog.text
