"""Every example with a spec (a harness or a KernelBench problem) is clean, compiles for sm_90
and verifies on the CPU under Triton's interpreter, extra sizes included.

The lint demos with deliberate mistakes live in examples/mistakes/ and have no spec. The pools
are shared by the module's tests (each worker imports torch once): the examples are correct
code, which leaves nothing behind in a worker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tritonsmith.evaluator.pool import WorkerPool
from tritonsmith.evaluator.reports import compile_file
from tritonsmith.evaluator.verify import detect_specs, verify_spec
from tritonsmith.settings import Settings
from tritonsmith.workspace import Workspace

pytestmark = [pytest.mark.compiler]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SPECS = sorted(p.name for p in EXAMPLES.glob("*.py") if detect_specs(p))

def _needs_interpreter() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    pytest.importorskip("numpy", reason="Triton's interpreter needs numpy")


def test_the_examples_with_a_spec_are_the_expected_ones() -> None:
    assert SPECS == ["kernelbench_fused.py", "kernelbench_relu.py", "layer_norm.py", "matmul.py",
                     "softmax.py", "vector_add.py"]
    assert not any(detect_specs(p) for p in (EXAMPLES / "mistakes").glob("*.py"))


@pytest.mark.parametrize("name", SPECS)
def test_check_reports_nothing(name: str) -> None:
    findings = Workspace(None, Settings()).check_source((EXAMPLES / name).read_text())
    assert findings == [], findings


@pytest.mark.parametrize("name", SPECS)
def test_compiles_for_sm90(name: str) -> None:
    pytest.importorskip("triton")
    source = (EXAMPLES / name).read_text()
    with WorkerPool(1) as pool:
        reports = compile_file(pool, source, path=name, targets=["sm_90"])
    assert reports
    for report in reports:
        assert report.ok, (report.kernel, report.error, report.findings)


@pytest.mark.parametrize("name", SPECS)
def test_verifies_on_the_cpu(name: str, interpreter_pools: tuple[WorkerPool, WorkerPool]) -> None:
    _needs_interpreter()
    specs = detect_specs(EXAMPLES / name)
    for spec in specs:
        verdict = verify_spec(spec, mode="interpreter", pools=interpreter_pools)
        assert verdict.ok, verdict.summary()
        if spec.any_shape:  # harnesses, and KernelBench problems that say `any-shape`
            assert verdict.tail, f"no extra-size trial: {verdict.notes}"
        if name == "kernelbench_fused.py":  # the GEMM too is Triton's: PyTorch computes nothing
            assert "PyTorch computes: nothing" in verdict.work, verdict.work
