"""A learned rule is live: its signature labels compile errors (the workspace's learned pack is
matched on the server's side of `compile_file`), and failures are logged with snippet, hash and
Triton version."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tritonsmith.adapt.induce import induce
from tritonsmith.evaluator.protocol import Result
from tritonsmith.evaluator.reports import compile_file
from tritonsmith.rules import Rule, Severity, match_rules
from tritonsmith.rules.pack import write_pack_atomic
from tritonsmith.state import FailureLog, active_learned, kernel_hash, record_compile
from tritonsmith.state.learned import learned_path

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, tl.{missing}(x), mask=offs < n)


def launch(x):
    {name}[(1,)](x, x.numel(), BLOCK=128)
'''
MESSAGE = "AttributeError(\"module 'triton.language' has no attribute '{missing}'\")"


class FakePool:
    """Answers every compile job as a worker would for a kernel that fails at line 9."""

    size = 1

    def __init__(self, missing: str = "softplus_fast") -> None:
        self.missing = missing

    def run(self, job: Any, cancel_event: Any = None) -> Result:
        error = {"type": "AttributeError", "message": MESSAGE.format(missing=self.missing), "rules": [],
                 "range": {"start": [8, 27], "end": [8, 43]}, "related": [], "text": ""}
        entry = {"target": "sm_90", "config": "launch at line 13", "ok": False, "error": error, "resources": None}
        return Result(ok=True, kind="compile", payload={"ok": False, "triton_version": "3.9.0", "results": [entry],
                                                         "skipped": []})


def learned_rule(status: str = "active") -> Rule:
    return Rule(code="TSL001", name="no-such-attribute", title="t", category="AttributeError",
                statement="You cannot use a name triton.language does not have.", severity=Severity.WARNING,
                signatures=(r"module 'triton\.language' has no attribute",), status=status,
                template="AttributeError: module 'triton.language' has no attribute <name>")


def test_match_rules_uses_the_rules_it_is_given():
    message = "AttributeError: module 'triton.language' has no attribute 'softplus_fast'"
    assert match_rules(message) == []  # no builtin rule knows it
    assert match_rules(message, rules=[learned_rule()]) == ["TSL001"]
    assert match_rules(message, rules=[learned_rule("pending")]) == []


@pytest.mark.parametrize(("status", "codes"), [("active", ["TSL001"]), ("pending", []), ("rejected", [])])
def test_the_workspace_learned_pack_labels_compile_errors(tmp_path: Path, status: str, codes: list[str]):
    write_pack_atomic(learned_path(tmp_path), [learned_rule(status)])
    source = KERNEL.format(name="scale_kernel", missing="softplus_fast")
    log = FailureLog(tmp_path)
    # The caller labels errors with the workspace's active learned rules and records the failures.
    reports = compile_file(FakePool(), source, path=str(tmp_path / "k.py"), targets=["sm_90"],
                           rules=active_learned(tmp_path))
    assert log.failures() == []  # the evaluator writes no state
    record_compile(log, str(tmp_path / "k.py"), source, reports)
    [report] = reports
    assert report.findings[0].code == (codes[0] if codes else "compile-error")
    [failure] = log.failures()
    assert failure["rules"] == codes
    assert failure["snippet"] == "    tl.store(x_ptr + offs, tl.softplus_fast(x), mask=offs < n)"
    definition = source[source.index("@triton.jit"):source.index("\n\n\ndef launch")]
    assert failure["kernel_hash"] == kernel_hash(definition)
    assert failure["triton_version"] == "3.9.0" and failure["target"] == "sm_90"
    assert failure["signature"] == "AttributeError: module 'triton.language' has no attribute <name>"


@pytest.mark.compiler
def test_failures_become_a_rule_that_labels_the_next_compile_error(tmp_path: Path):
    pytest.importorskip("triton")
    from tritonsmith.evaluator.pool import WorkerPool

    log = FailureLog(tmp_path)
    pool = WorkerPool(1)
    try:
        for name, missing, file in (("a_kernel", "softplus_fast", "a.py"), ("a_kernel", "gelu_fast", "a.py"),
                                    ("b_kernel", "mish_fast", "b.py")):
            source = KERNEL.format(name=name, missing=missing)
            reports = compile_file(pool, source, path=str(tmp_path / file), targets=["sm_90"],
                                   rules=active_learned(tmp_path))
            record_compile(log, str(tmp_path / file), source, reports)
            [report] = reports
            assert report.findings[0].code == "compile-error"
        [learned] = induce(tmp_path)
        rule = learned.rule
        assert (rule.code, rule.status, rule.count, len(rule.kernels)) == ("TSL001", "active", 3, 2)
        assert re.search(rule.signatures[0], "module 'triton.language' has no attribute 'swish_fast'")
        # A new kernel, a new name: the compile error now carries the learned rule's code.
        source = KERNEL.format(name="c_kernel", missing="swish_fast")
        reports = compile_file(pool, source, path=str(tmp_path / "c.py"), targets=["sm_90"],
                               rules=active_learned(tmp_path))
        record_compile(log, str(tmp_path / "c.py"), source, reports)
        [report] = reports
        assert report.findings[0].code == "TSL001"
        assert log.failures(limit=1)[0]["rules"] == ["TSL001"]
    finally:
        pool.close()
