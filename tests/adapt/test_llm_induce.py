"""LLM rule induction through the real `anthropic` SDK, its HTTP transport replaced by responses
written for these tests (the messages API's JSON shapes): extraction, "no guidance", the cheap
merges (signature, lexical) that make no call, the judge for close calls only, and the generality
filter."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

from tritonsmith.adapt.llm_induce import (  # noqa: E402
    EXTRACT_SYSTEM,
    JUDGE_SYSTEM,
    NO_GUIDANCE,
    anthropic_model,
    induce_with_llm,
    jaccard,
    parse_judgement,
    parse_rule,
)
from tritonsmith.rules import Rule, Severity  # noqa: E402
from tritonsmith.state import FailureLog, kernel_hash, load_learned  # noqa: E402
from tritonsmith.state.learned import update_learned  # noqa: E402

KEY = "sk-ant-api03-test-NOT-A-REAL-KEY-7f3a9c"
MODEL = "claude-sonnet-4-6"
DTYPE_CALL = "at 6:8:\n    y = tl.float32(x)\n        ^\nTypeError(\"'dtype' object is not callable\")"
ZEROS_SHAPE = "at 4:10:\n    acc = tl.zeros((n,), dtype=tl.float32)\n          ^\nValueError('Shape element 0 must have type `constexpr[int]`')"


def message(text: str) -> dict:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "model": MODEL,
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 310, "output_tokens": 24, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "service_tier": "standard"},
    }


class Server:
    """A fake messages API answering requests in order; it fails the test on an unexpected call."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.requests: list[dict] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        assert self.texts, f"unexpected call: {body['messages'][0]['content'][:200]}"
        return httpx2.Response(200, json=message(self.texts.pop(0)), headers={"request-id": "req_011"})

    def systems(self) -> list[str]:
        return [body["system"][0]["text"] for body in self.requests]

    def users(self) -> list[str]:
        return [body["messages"][0]["content"] for body in self.requests]


def model(server: Server):
    client = anthropic.Anthropic(api_key=KEY, http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    return anthropic_model(model=MODEL, client=client)


def fail(log: FailureLog, kernel: str, message_: str, *, path: str = "a.py", variant: int = 0,
         snippet: str = "    y = tl.float32(x)", stage: str = "compile") -> int:
    return log.record(path=path, kernel=kernel, stage=stage, message=message_, rules=[], target="sm_90",
                      snippet=snippet, kernel_hash=kernel_hash(f"{kernel} {variant}"), triton_version="3.6.0")


def learned_rule(code: str, statement: str, *, template: str, count: int = 1) -> Rule:
    return Rule(code=code, name=f"rule-{code.lower()}", title=statement.rstrip("."), statement=statement,
                severity=Severity.WARNING, category="TypeError", provenance="learned with an LLM from the failure log",
                count=count, status="pending", template=template, kernels=("k0",), failures=(999,),
                first_seen="2026-01-01T00:00:00Z", last_seen="2026-01-01T00:00:00Z")


def test_each_failure_becomes_one_you_cannot_rule_and_repeats_cost_no_call(tmp_path: Path):
    log = FailureLog(tmp_path)
    ids = [fail(log, "k1", DTYPE_CALL), fail(log, "k1", DTYPE_CALL, variant=1),
           fail(log, "k2", DTYPE_CALL, path="b.py")]
    fail(log, "k3", "output 0 differs from the reference: max_difference 0.5", stage="verify:compare")
    server = Server("The log says a dtype object was called.\nYou cannot call `tl.float32` as a function.")
    report = induce_with_llm(tmp_path, model(server))
    # One extraction call; the two other failures share its signature and cost nothing.
    assert (report.extraction_calls, report.judge_calls, report.signature_merges) == (1, 0, 2)
    assert server.systems() == [EXTRACT_SYSTEM]
    assert "y = tl.float32(x)" in server.users()[0] and "'dtype' object is not callable" in server.users()[0]
    assert "max_difference" not in " ".join(server.users())  # numeric mismatches are not sent
    [learned] = report.learned
    rule = learned.rule
    assert (rule.code, rule.statement, rule.status, rule.count, len(rule.kernels)) == (
        "TSL001", "You cannot call `tl.float32` as a function.", "active", 3, 2)
    assert rule.name == "call-tl-float32-function" and rule.severity is Severity.WARNING
    assert rule.provenance == "learned with an LLM from the failure log: 3 failures in 2 kernels"
    assert list(rule.failures) == ids and rule.bad == "    y = tl.float32(x)"
    assert [r.code for r in load_learned(tmp_path)] == ["TSL001"]
    # Everything is claimed: a second run sends nothing.
    assert induce_with_llm(tmp_path, model(Server())).extraction_calls == 0


def test_no_guidance_is_discarded_once(tmp_path: Path):
    log = FailureLog(tmp_path)
    failure = fail(log, "k1", "RuntimeError: CUDA error: unspecified launch failure", stage="search:candidate")
    report = induce_with_llm(tmp_path, model(Server("no guidance")))
    assert (report.learned, report.discarded) == ([], [failure])
    assert load_learned(tmp_path) == []
    assert [f["induced"] for f in log.failures()] == [NO_GUIDANCE]
    assert induce_with_llm(tmp_path, model(Server())).extraction_calls == 0


def test_a_lexical_duplicate_merges_without_a_judge_call(tmp_path: Path):
    existing = learned_rule("TSL001", "You cannot call `tl.float32` as a function inside a Triton kernel.",
                            template="TypeError: <name> object is not callable", count=2)
    update_learned(tmp_path, lambda rules: [existing])
    log = FailureLog(tmp_path)
    fail(log, "k2", DTYPE_CALL, path="b.py")
    server = Server("You cannot call tl.float32 as a function inside the Triton kernel.")
    report = induce_with_llm(tmp_path, model(server))
    assert (report.extraction_calls, report.judge_calls, report.lexical_merges) == (1, 0, 1)
    assert len(server.requests) == 1
    [rule] = load_learned(tmp_path)
    assert (rule.code, rule.statement, rule.count, len(rule.kernels)) == ("TSL001", existing.statement, 3, 2)
    assert rule.status == "active"  # three failures in two kernels now


def test_a_close_call_goes_to_the_judge_and_merges(tmp_path: Path):
    existing = learned_rule("TSL001", "You cannot pass a runtime value as the shape of `tl.zeros`.",
                            template="ValueError: Shape element <n> must be constexpr")
    unrelated = learned_rule("TSL002", "You cannot call `tl.float32` as a function.",
                             template="TypeError: <name> object is not callable")
    update_learned(tmp_path, lambda rules: [existing, unrelated])
    new = "You cannot pass a non-constexpr value as the shape of `tl.zeros`."
    assert 0.5 <= jaccard(new, existing.statement) < 0.9 and jaccard(new, unrelated.statement) < 0.5
    log = FailureLog(tmp_path)
    fail(log, "k2", ZEROS_SHAPE, path="b.py", snippet="    acc = tl.zeros((n,), dtype=tl.float32)")
    verdict = {"is_duplicate": True, "matched_index": 1, "confidence": 0.86,
               "reason": "Both forbid a shape of tl.zeros that is not a compile-time constant."}
    server = Server(new, json.dumps(verdict))
    report = induce_with_llm(tmp_path, model(server))
    assert (report.extraction_calls, report.judge_calls, report.judged_merges) == (1, 1, 1)
    assert server.systems() == [EXTRACT_SYSTEM, JUDGE_SYSTEM]
    judge = server.users()[1]
    # Only the close rule is listed, 1-based, and the new one after it.
    assert f"1. {existing.statement}" in judge and unrelated.statement not in judge and new in judge
    rules = {r.code: r for r in load_learned(tmp_path)}
    assert sorted(rules) == ["TSL001", "TSL002"]
    assert rules["TSL001"].count == 2 and rules["TSL002"].count == 1


def test_a_distinct_rule_is_appended_without_a_judge_call(tmp_path: Path):
    existing = learned_rule("TSL001", "You cannot call `tl.float32` as a function.",
                            template="TypeError: <name> object is not callable")
    update_learned(tmp_path, lambda rules: [existing])
    log = FailureLog(tmp_path)
    fail(log, "k2", ZEROS_SHAPE, path="b.py")
    server = Server("You cannot pass a non-constexpr value as the shape of `tl.zeros`.")
    report = induce_with_llm(tmp_path, model(server))
    assert (report.extraction_calls, report.judge_calls) == (1, 0)
    [learned] = report.learned
    assert (learned.new, learned.rule.code, learned.rule.status) == (True, "TSL002", "pending")
    assert learned.rule.hold == "seen 1 times; needs 3"
    assert learned.rule.template == "ValueError: Shape element <n> must have type `constexpr[<value>]`"
    assert [r.code for r in load_learned(tmp_path)] == ["TSL001", "TSL002"]


def test_the_generality_filter_holds_a_rule_that_names_a_line(tmp_path: Path):
    log = FailureLog(tmp_path)
    syntax = "at 223:4:\n    else:\n    ^\nUnsupportedLanguageConstruct('unsupported AST node type: If')"
    for kernel, path in (("k1", "a.py"), ("k1", "a.py"), ("k2", "b.py")):
        fail(log, kernel, syntax, path=path, variant=len(log.failures()), snippet="    else:")
    report = induce_with_llm(tmp_path, model(Server("You cannot have an `else:` at line 223.")))
    [learned] = report.learned
    rule = learned.rule
    assert (rule.count, len(rule.kernels)) == (3, 2)  # past the thresholds, and yet:
    assert (rule.status, rule.hold) == ("pending", "not general: names a line number (at line 223)")


def test_judge_answers_are_read_strictly():
    answer = '```json\n{"is_duplicate": true, "matched_index": 2, "confidence": 0.7, "reason": "same"}\n```'
    assert parse_judgement(answer, 3) == (1, 0.7, "same")
    assert parse_judgement('{"is_duplicate": true, "matched_index": 2, "confidence": 0.5, "reason": "r"}', 3)[0] is None
    assert parse_judgement('{"is_duplicate": true, "matched_index": 9, "confidence": 0.9, "reason": "r"}', 3)[0] is None
    assert parse_judgement("they look alike", 3) == (None, 0.0, "unreadable answer")


def test_extraction_answers_are_one_you_cannot_sentence_or_nothing():
    assert parse_rule("Reasoning...\nYou cannot call `tl.float32` as a function") == \
        "You cannot call `tl.float32` as a function."
    assert parse_rule("No guidance.") is None
    assert parse_rule("Use tl.cast instead.") is None
    assert parse_rule("You cannot call `x.to()` in a loop. Use a cast instead.") is None  # a fix came along
    assert parse_rule("You cannot index a tensor with `x[0]`.") == "You cannot index a tensor with `x[0]`."


def test_a_rule_another_learner_wrote_meanwhile_is_joined_not_duplicated(tmp_path: Path):
    from tritonsmith.adapt import llm_induce

    log = FailureLog(tmp_path)
    fail(log, "k1", DTYPE_CALL)
    statement = "You cannot call `tl.float32` as a function."
    plan = llm_induce._plan

    def plan_then_race(*args, **kwargs):
        targets = plan(*args, **kwargs)
        # Another process learns the same statement while the calls were running.
        update_learned(tmp_path, lambda rules: [replace(learned_rule("TSL001", statement, template="other"))])
        return targets

    llm_induce._plan = plan_then_race
    try:
        report = induce_with_llm(tmp_path, model(Server(statement)))
    finally:
        llm_induce._plan = plan
    [learned] = report.learned
    assert (learned.new, learned.rule.code, learned.rule.count) == (False, "TSL001", 2)
    assert [r.code for r in load_learned(tmp_path)] == ["TSL001"]
