"""Broken kernels are caught with the right diagnostic on the right range, as the editor and
`tritonsmith verify` show them (through `evaluator.reports`): a wrong result, an out-of-bounds
access, a compile error inside a @triton.jit helper, and a Config whose shared memory exceeds
sm_80's limit. The fixtures are in fixtures/broken/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritonsmith.analysis import Document
from tritonsmith.evaluator.pool import WorkerPool
from tritonsmith.evaluator.reports import (
    KernelReport,
    compile_file,
    correctness_blockers,
    verdict_findings,
)
from tritonsmith.evaluator.verify import Verdict, detect_specs, verify_spec
from tritonsmith.rules import Finding, Severity
from tritonsmith.settings import Settings
from tritonsmith.workspace import Workspace

pytestmark = [pytest.mark.compiler]

BROKEN = Path(__file__).parent / "fixtures" / "broken"


def _needs_interpreter() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    pytest.importorskip("numpy", reason="Triton's interpreter needs numpy")


@pytest.fixture(scope="module")
def compile_pool() -> Iterator[WorkerPool]:
    with WorkerPool(1) as pool:
        yield pool


def _verify(name: str, pools: tuple[WorkerPool, WorkerPool]) -> tuple[Verdict, list[Finding]]:
    path = BROKEN / name
    [spec] = detect_specs(path)
    verdict = verify_spec(spec, mode="interpreter", pools=pools, timeout_s=60)
    return verdict, verdict_findings(Document(path.read_text()), verdict)


def _compile(name: str, pool: WorkerPool, target: str) -> KernelReport:
    [report] = compile_file(pool, (BROKEN / name).read_text(), path=name, targets=[target])
    return report


def _range(finding: Finding) -> tuple[tuple[int, int], tuple[int, int]]:
    """0-based (row, column) of the start and the end, as the editor gets them."""
    return finding.span.start, finding.span.end


def test_a_wrong_result_fails_the_comparison_on_the_launchers_name(
        interpreter_pools: tuple[WorkerPool, WorkerPool]) -> None:
    _needs_interpreter()
    verdict, findings = _verify("wrong_result.py", interpreter_pools)
    assert not verdict.ok and verdict.stage == "compare", verdict.summary()
    assert re.match(r"trial 1 \(seed \d+\): output: max abs error .* at index \(\d+,\)", verdict.message)
    [finding] = findings
    assert finding.code == "verification-failed" and finding.severity == Severity.ERROR
    assert finding.message.startswith("add failed verification (interpreter, compare): trial 1")
    assert _range(finding) == ((16, 4), (16, 7))  # `add` in `def add(x, y)`


def test_an_out_of_bounds_access_is_caught_before_it_touches_the_workers_memory(
        interpreter_pools: tuple[WorkerPool, WorkerPool]) -> None:
    """Under Triton's interpreter an unmasked load or store is a raw access to the worker's heap:
    unchecked, the worker died (SIGSEGV or SIGABRT), hung on the heap it corrupted, or went on
    with garbage, from run to run. The bounds check (evaluator/bounds.py) stops the first load
    outside every tensor the launch was given, every time, with what and where; the reference
    never ran."""
    _needs_interpreter()
    for _ in range(2):  # the same verdict each run (a crash was a matter of heap layout)
        verdict, findings = _verify("out_of_bounds.py", interpreter_pools)
        assert not verdict.ok and verdict.stage == "candidate", verdict.summary()
        assert re.fullmatch(
            r"triton\.runtime\.errors\.InterpreterError: load out of bounds in program \(0, 0, 0\): \d+ of its "
            r"4096 lanes \(4-byte elements\) outside every tensor the kernel was given; the first at byte 4000 of "
            r"x_ptr's 4000-byte storage \(element 1000\); check the mask \(at .*out_of_bounds\.py:12, in scale_kernel\)",
            verdict.message), verdict.message
        assert "main.reference" not in verdict.details
        [finding] = findings
        assert finding.code == "verification-failed"
        assert finding.message.startswith("scale failed verification (interpreter, candidate): ")
        assert _range(finding) == ((15, 4), (15, 9))  # `scale` in `def scale(x)`
    # The static check saw it coming, on the store.
    static = Workspace(None, Settings()).check_source((BROKEN / "out_of_bounds.py").read_text())
    assert [(f.code, f.span.start[0]) for f in static] == [("TS508", 12)]


def test_a_crash_in_native_code_is_not_blamed_on_the_masks(
        interpreter_pools: tuple[WorkerPool, WorkerPool]) -> None:
    """With every load and store bounds-checked, a crashed worker under the interpreter is native
    code the candidate reached (here NumPy's as_strided), and the verdict says that instead."""
    _needs_interpreter()
    verdict, _ = _verify("native_crash.py", interpreter_pools)
    assert not verdict.ok and verdict.stage == "candidate", verdict.summary()
    assert re.fullmatch(r"worker killed by SIG(SEGV|BUS|ABRT) while running verify_candidate job \(the interpreter's "
                        r"loads and stores are bounds-checked, so the crash came from native code the candidate "
                        r"reached: NumPy, ctypes, an extension\)", verdict.message), verdict.message


def test_a_compile_error_in_a_helper_is_reported_at_the_helpers_line(compile_pool: WorkerPool) -> None:
    pytest.importorskip("triton")
    report = _compile("helper_error.py", compile_pool, "sm_90")
    assert report.kernel == "gelu_kernel" and not report.ok
    [finding] = report.findings
    assert finding.code == "TS101" and finding.severity == Severity.ERROR  # the rule the error matches
    assert "arange's range must be a power of 2" in finding.message
    assert _range(finding) == ((11, 12), (11, 29))  # `tl.arange(0, 100)` in _gelu_tile
    # The worker knows the call site in the kernel...
    [entry] = report.results
    assert entry["error"]["function"] == "_gelu_tile"
    assert [r["range"] for r in entry["error"]["related"]] == [{"start": [20, 8], "end": [20, 21]}]


def test_a_compile_error_in_a_helper_points_at_the_call_site(compile_pool: WorkerPool) -> None:
    pytest.importorskip("triton")
    [finding] = _compile("helper_error.py", compile_pool, "sm_90").findings
    assert [(r.span.start, r.span.end) for r in finding.related] == [((20, 8), (20, 21))]  # `_gelu_tile(x)`
    assert "gelu_kernel" in finding.related[0].message


def test_a_config_over_sm80_shared_memory_is_a_warning_on_that_config(compile_pool: WorkerPool) -> None:
    """Triton's autotuner skips a Config that fails with OutOfResources and runs another: the
    kernel still launches, so this is a warning on that Config, and the check still runs."""
    pytest.importorskip("triton")
    report = _compile("shared_memory.py", compile_pool, "sm_80")
    assert report.ok and correctness_blockers([report]) == []
    [finding] = report.findings
    assert finding.code == "shared-memory-exceeded" and finding.severity == Severity.WARNING
    assert "autotuner skips it at run time" in finding.message
    assert finding.message.startswith("Config #2 needs ") and "sm_80 allows 166912 per block" in finding.message
    assert _range(finding) == ((11, 8), (11, 97))  # the second triton.Config(...)
    by_config = {e["config"]: e["resources"] for e in report.results}
    assert not by_config["Config #1"]["exceeds_shared"] and by_config["Config #2"]["exceeds_shared"]
