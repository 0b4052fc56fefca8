"""The Anthropic proposer end to end through the real `anthropic` SDK, its HTTP transport replaced
by responses written for these tests (the messages API's JSON shapes); no network, no real sleep."""

from __future__ import annotations

import json
import logging

import pytest

anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

from tritonsmith.errors import ConfigError  # noqa: E402
from tritonsmith.search import prompts  # noqa: E402
from tritonsmith.search.model import (  # noqa: E402
    Evaluation,
    Outcome,
    PoolEntry,
    ProposalError,
    StepContext,
    Task,
)
from tritonsmith.search.proposers import AnthropicProposer  # noqa: E402
from tritonsmith.search.proposers._llm import MissingAPIKeyError, ProposerStopped  # noqa: E402
from tritonsmith.search.proposers.anthropic_proposer import PRICES, price_for  # noqa: E402

KEY = "sk-ant-api03-test-NOT-A-REAL-KEY-7f3a9c"
MODEL = "claude-sonnet-4-6"

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

TASK = Task(path="kernels/add.py", kernel="add_kernel", source=SOURCE, spec="harness:add",
            device="gpu", target="sm_90", target_facts="NVIDIA H200, 132 SMs")
CORRECT = Evaluation(Outcome.CORRECT, speedup=1.0, time_ms=0.0200)
WRONG = Evaluation(Outcome.WRONG, message="max abs error 0.5 at out[1023]")
PITFALL = "You cannot call `tl.float32` as a function."
CONTEXT = StepContext(task=TASK, chain=((SOURCE, CORRECT),), pool=(PoolEntry(SOURCE, CORRECT),),
                      pitfalls=(PITFALL,))

REVISER_TEXT = ("1. Launch 1024-wide blocks: a quarter of the programs, same traffic.\n"
                "2. Give masked loads `other=0.0`.")
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
PROPOSER_TEXT = f"Plan: 2048-wide blocks with 8 warps.\n\n```python\n{NEW_FILE}```\n"


def message(text: str, *, stop_reason: str = "end_turn", input_tokens: int = 412,
            output_tokens: int = 188, cache_creation: int = 0, cache_read: int = 2950) -> dict:
    """A messages API response body as the API sends it."""
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": text}] if text else [],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": cache_creation,
            "cache_read_input_tokens": cache_read,
            "service_tier": "standard",
        },
    }


def ok(text: str, **kwargs) -> httpx2.Response:
    return httpx2.Response(200, json=message(text, **kwargs), headers={"request-id": "req_011"})


def api_error(status: int, kind: str, text: str, headers: dict | None = None) -> httpx2.Response:
    body = {"type": "error", "error": {"type": kind, "message": text}, "request_id": "req_012"}
    return httpx2.Response(status, json=body, headers=headers or {})


RATE_LIMITED = api_error(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
OVERLOADED = api_error(529, "overloaded_error", "Overloaded")


class Server:
    """A fake API: answers requests in order from `replies` (a response, or an exception to raise)."""

    def __init__(self, *replies) -> None:
        self.replies = list(replies)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(request)
        return reply

    def bodies(self) -> list[dict]:
        return [json.loads(request.content) for request in self.requests]


def proposer(server: Server, **kwargs) -> tuple[AnthropicProposer, list[float]]:
    sleeps: list[float] = []
    client = anthropic.Anthropic(api_key=KEY, http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    kwargs.setdefault("backoff_base_s", 1.0)
    return AnthropicProposer(model=MODEL, client=client, sleep=sleeps.append, **kwargs), sleeps


# -- well-formed answers ---------------------------------------------------------------------

def test_refine_asks_the_reviser_then_applies_the_tuners_edits_to_the_last_kernel():
    server = Server(ok(REVISER_TEXT), ok(TUNER_TEXT))
    prop, _ = proposer(server)
    source, edits = prop.refine(CONTEXT)
    assert source == SOURCE.replace("cdiv(n, 256),)](x, y, out, n, BLOCK=256)",
                                    "cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)")
    assert [e.reasoning for e in edits] == ["Fewer, wider programs."]
    reviser, tuner = server.bodies()
    assert "1-3 most important improvements" in reviser["messages"][0]["content"]
    assert reviser["max_tokens"] == 1024
    assert REVISER_TEXT in tuner["messages"][0]["content"]  # the advice reaches the tuner
    assert tuner["model"] == MODEL and tuner["max_tokens"] == 16_384
    assert KEY in (server.requests[0].headers.get("x-api-key", "") + server.requests[0].headers.get("authorization", ""))


def test_refine_of_an_all_wrong_chain_skips_the_reviser_for_fix_or_improve():
    server = Server(ok(TUNER_TEXT))
    prop, _ = proposer(server)
    prop.refine(StepContext(task=TASK, chain=((SOURCE, WRONG),)))
    (tuner,) = server.bodies()
    assert prompts.FIX_OR_IMPROVE in tuner["messages"][0]["content"]


def test_refine_without_reviser_makes_one_call():
    server = Server(ok(TUNER_TEXT))
    prop, _ = proposer(server, reviser=False)
    prop.refine(CONTEXT)
    assert len(server.requests) == 1


def test_regenerate_returns_the_new_file_written_against_the_pool():
    server = Server(ok(PROPOSER_TEXT))
    prop, _ = proposer(server)
    assert prop.regenerate(CONTEXT) == NEW_FILE
    (body,) = server.bodies()
    assert "## Kernel Pool" in body["messages"][0]["content"]


def test_the_guardians_repair_sends_the_violations_and_takes_back_a_whole_file():
    server = Server(ok(PROPOSER_TEXT), ok(PROPOSER_TEXT))
    prop, _ = proposer(server)
    prop.regenerate(CONTEXT)
    violations = ["line 9: TS101 tl.arange range 100 (0..100) is not a power of 2"]
    assert prop.repair(SOURCE, violations) == NEW_FILE
    repair = server.bodies()[1]["messages"][0]["content"]
    assert "## Repair" in repair and violations[0] in repair and SOURCE.splitlines()[5] in repair


def test_the_guardian_wires_the_llm_repair():
    from tritonsmith.search.guardian import RuleGuardian
    from tritonsmith.settings import Settings
    from tritonsmith.workspace import Workspace

    server = Server(ok(PROPOSER_TEXT), ok(PROPOSER_TEXT))
    prop, _ = proposer(server)
    prop.regenerate(CONTEXT)
    broken = SOURCE.replace("tl.arange(0, BLOCK)", "tl.arange(0, 100)")
    repaired, note = RuleGuardian(Workspace(None, Settings()), prop.repair).check(broken)
    assert note == "repaired by the proposer" and repaired == NEW_FILE


def test_a_temperature_reaches_the_request_body():
    server = Server(ok(PROPOSER_TEXT))
    prop, _ = proposer(server, temperature=0.7)
    prop.regenerate(CONTEXT)
    (body,) = server.bodies()
    assert body["temperature"] == 0.7


def test_stable_system_blocks_carry_cache_control():
    server = Server(ok(PROPOSER_TEXT))
    prop, _ = proposer(server)
    prop.regenerate(CONTEXT)
    (body,) = server.bodies()
    system = body["system"]
    assert [block["cache_control"] for block in system] == [{"type": "ephemeral"}] * 2
    assert "Triton" in system[0]["text"]
    assert prompts.PITFALLS_HEADING in system[1]["text"] and PITFALL in system[1]["text"]
    assert "## Task" in system[1]["text"]
    assert "Kernel Pool" not in json.dumps(system)  # the per-step part stays out of the cache


def test_tokens_and_cost_are_counted_per_proposer():
    server = Server(ok(PROPOSER_TEXT, input_tokens=1000, output_tokens=2000, cache_creation=4000, cache_read=0),
                    ok(PROPOSER_TEXT, input_tokens=1000, output_tokens=2000, cache_creation=0, cache_read=4000))
    prop, _ = proposer(server)
    prop.regenerate(CONTEXT)
    prop.regenerate(CONTEXT)
    usage = prop.usage
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (2, 2000, 4000)
    assert (usage.cache_creation_tokens, usage.cache_read_tokens) == (4000, 4000)
    # Sonnet 4.x: $3 in, $15 out, $3.75 cache write, $0.30 cache read per million tokens.
    expected = (2000 * 3 + 4000 * 15 + 4000 * 3.75 + 4000 * 0.30) / 1e6
    assert prop.cost_usd == pytest.approx(expected)
    assert "$0.08" in usage.summary()


def test_price_table_matches_families_by_longest_prefix():
    assert price_for("claude-sonnet-4-6") is PRICES["claude-sonnet-4"]
    assert price_for("claude-opus-4-1-20250805") is PRICES["claude-opus-4"]
    assert price_for("claude-opus-4-5-20251101") is PRICES["claude-opus-4-5"]
    assert price_for("claude-sonnet-5-5") is PRICES["claude-sonnet-5-5"]
    assert price_for("my-finetune") is None


def test_default_model_is_known_to_the_sdk_and_not_deprecated():
    import typing

    from anthropic._data import DEPRECATED_MODELS
    from anthropic.types import Model

    from tritonsmith.search.proposers.anthropic_proposer import DEFAULT_MODEL

    known = typing.get_args(typing.get_args(Model)[0])
    assert DEFAULT_MODEL in known and DEFAULT_MODEL not in DEPRECATED_MODELS


def test_unknown_model_costs_nothing_with_a_warning(caplog):
    server = Server(ok(PROPOSER_TEXT))
    client = anthropic.Anthropic(api_key=KEY, http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    with caplog.at_level(logging.WARNING):
        prop = AnthropicProposer(model="claude-custom-finetune", client=client)
    assert "no price known" in caplog.text
    prop.regenerate(CONTEXT)
    assert prop.cost_usd == 0.0


# -- malformed answers and refusals ----------------------------------------------------------

def test_malformed_tuner_answer_is_a_proposal_error():
    server = Server(ok("Use a larger BLOCK; that should help with occupancy."))
    prop, _ = proposer(server, reviser=False)
    with pytest.raises(ProposalError, match="no <old_str_1>/<new_str_1> edit blocks"):
        prop.refine(CONTEXT)
    assert prop.usage.calls == 1  # a useless answer still costs


def test_edit_that_does_not_apply_is_a_proposal_error():
    answer = "<old_str_1>BLOCK=128</old_str_1><new_str_1>BLOCK=64</new_str_1>"
    prop, _ = proposer(Server(ok(answer)), reviser=False)
    with pytest.raises(ProposalError, match="edit 1: the old text does not occur"):
        prop.refine(CONTEXT)


def test_answer_cut_off_at_max_tokens_says_so():
    prop, _ = proposer(Server(ok("Plan: ...\n```python\nimport triton\n", stop_reason="max_tokens")))
    with pytest.raises(ProposalError, match=r"cut off at max_tokens \(16384\)"):
        prop.regenerate(CONTEXT)


def test_refusal_is_a_proposal_error():
    prop, _ = proposer(Server(ok("", stop_reason="refusal", output_tokens=0)))
    with pytest.raises(ProposalError, match="Anthropic refused the proposer request"):
        prop.regenerate(CONTEXT)


def test_refusal_in_prose_is_a_malformed_answer():
    prop, _ = proposer(Server(ok("I can't help with modifying this code.")))
    with pytest.raises(ProposalError, match="no ```python block"):
        prop.regenerate(CONTEXT)


# -- retries ---------------------------------------------------------------------------------

def test_rate_limit_is_retried_with_growing_backoff():
    server = Server(RATE_LIMITED, RATE_LIMITED, ok(PROPOSER_TEXT))
    prop, sleeps = proposer(server)
    assert prop.regenerate(CONTEXT) == NEW_FILE
    assert len(server.requests) == 3
    assert 0.5 <= sleeps[0] <= 1.0 <= sleeps[1] <= 2.0 and sleeps[1] > sleeps[0]


def test_retry_after_header_sets_the_pause():
    limited = api_error(429, "rate_limit_error", "slow down", headers={"retry-after": "7"})
    prop, sleeps = proposer(Server(limited, ok(PROPOSER_TEXT)))
    prop.regenerate(CONTEXT)
    assert sleeps == [7.0]


def test_overload_529_is_retried():
    server = Server(OVERLOADED, ok(PROPOSER_TEXT))
    prop, sleeps = proposer(server)
    assert prop.regenerate(CONTEXT) == NEW_FILE
    assert len(sleeps) == 1


def test_server_error_500_is_retried():
    server = Server(api_error(500, "api_error", "Internal server error"), ok(PROPOSER_TEXT))
    prop, sleeps = proposer(server)
    assert prop.regenerate(CONTEXT) == NEW_FILE and len(sleeps) == 1


def test_timeout_is_retried(caplog):
    server = Server(httpx2.ReadTimeout("The read operation timed out"), ok(PROPOSER_TEXT))
    prop, sleeps = proposer(server, timeout_s=30)
    with caplog.at_level(logging.WARNING):
        assert prop.regenerate(CONTEXT) == NEW_FILE
    assert len(server.requests) == 2 and len(sleeps) == 1
    assert "no answer within 30 s; retry 1 of 4" in caplog.text


def test_retries_exhausted_is_a_proposal_error():
    server = Server(OVERLOADED, OVERLOADED, OVERLOADED)
    prop, sleeps = proposer(server, max_retries=2)
    with pytest.raises(ProposalError, match=r"overloaded \(529\): Overloaded; gave up after 3 attempts"):
        prop.regenerate(CONTEXT)
    assert len(server.requests) == 3 and len(sleeps) == 2
    assert prop.cost_usd == 0.0


def test_bad_request_is_not_retried():
    server = Server(api_error(400, "invalid_request_error", "max_tokens: 999999 > 64000"))
    prop, sleeps = proposer(server)
    with pytest.raises(ProposalError, match=r"Anthropic API error \(400\): max_tokens"):
        prop.regenerate(CONTEXT)
    assert sleeps == [] and len(server.requests) == 1


# -- the spending cap ------------------------------------------------------------------------

def test_spending_cap_refuses_the_next_call_before_sending_it():
    # 2,000 in + 1,000 out + 5,000 cache writes on Sonnet: $0.03975, over a $0.03 cap.
    server = Server(ok(PROPOSER_TEXT, input_tokens=2000, output_tokens=1000, cache_creation=5000, cache_read=0),
                    ok(PROPOSER_TEXT))
    prop, _ = proposer(server, spending_cap_usd=0.03)
    prop.regenerate(CONTEXT)
    with pytest.raises(ProposerStopped, match=r"spending cap of \$0\.03 reached \(\$0\.04 spent\)"):
        prop.regenerate(CONTEXT)
    assert len(server.requests) == 1


def test_spending_cap_is_checked_between_reviser_and_tuner():
    server = Server(ok(REVISER_TEXT, input_tokens=10_000, output_tokens=0, cache_read=0), ok(TUNER_TEXT))
    prop, _ = proposer(server, spending_cap_usd=0.01)
    with pytest.raises(ProposalError, match="spending cap"):
        prop.refine(CONTEXT)
    assert len(server.requests) == 1


# -- keys ------------------------------------------------------------------------------------

def test_no_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError) as info:
        AnthropicProposer(model=MODEL)
    assert str(info.value) == ("no Anthropic API key: set ANTHROPIC_API_KEY "
                               "(in VS Code: Tritonsmith: Set API key)")
    assert isinstance(info.value, ConfigError) and isinstance(info.value, ProposalError)


def test_key_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    prop = AnthropicProposer(model=MODEL)
    assert prop.name == f"anthropic:{MODEL}"


def test_the_key_never_appears_in_errors_or_logs(caplog):
    echo = api_error(401, "authentication_error", f"invalid x-api-key {KEY}")
    server = Server(echo, RATE_LIMITED, api_error(500, "api_error", f"upstream saw {KEY}"),
                    api_error(500, "api_error", f"upstream saw {KEY}"))
    prop, _ = proposer(server, max_retries=1)
    messages = []
    with caplog.at_level(logging.DEBUG):
        for _ in range(2):
            with pytest.raises(ProposalError) as info:
                prop.regenerate(CONTEXT)
            messages.append(str(info.value))
            assert info.value.__cause__ is None  # no SDK error (request headers) chained
    assert "rejected the API key (401" in messages[0] and isinstance(info.value, ProposalError)
    assert "server error (500)" in messages[1]
    assert all(KEY not in m for m in messages), messages
    assert KEY not in caplog.text
