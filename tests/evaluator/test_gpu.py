"""Verification and timing on a real GPU (marked `gpu`: skipped without CUDA). Run them with
`bench/gpu_checks.sh` on the GPU machine, from the source tree.

What only a GPU can show: timing in alternating rounds with its statistics, the defenses of
verification.md that need CUDA (work on a side stream escaping the timer events, a patched
timer, TF32 in an fp32 task, fresh allocations landing on freed memory), and a CUDA fault
contained in its worker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tritonsmith.evaluator.pool import WorkerPool
from tritonsmith.evaluator.specs import detect_specs
from tritonsmith.evaluator.verify import Verdict, verify_spec

pytestmark = [pytest.mark.gpu]

ROOT = Path(__file__).resolve().parents[2]
GPU = Path(__file__).parent / "fixtures" / "gpu"
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if detect_specs(p))


def _verify(path: Path, **options: object) -> Verdict:
    (spec,) = detect_specs(path)
    return verify_spec(spec, mode="gpu", **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_each_example_verifies_and_is_timed_on_the_gpu(example: Path) -> None:
    verdict = _verify(example, rounds=2)
    assert verdict.ok, verdict.message
    assert verdict.timing is not None and verdict.timing.runs == 20
    assert verdict.timing.environment.get("gpu")
    assert verdict.timing.speedup > 0
    assert "timed as written" in verdict.summary()


def test_timing_follows_the_protocol() -> None:
    """At least 100 timed runs per side, in 10 rounds, with a spread from the per-round ratios."""
    verdict = _verify(ROOT / "examples" / "vector_add.py")
    assert verdict.ok, verdict.message
    timing = verdict.timing
    assert timing is not None
    assert timing.runs >= 100 and timing.rounds == 10
    assert 0 < timing.speedup_low <= timing.speedup_high
    assert timing.environment["capability"].startswith("sm_")


def test_work_on_a_side_stream_is_caught_by_the_timer_cross_check() -> None:
    verdict = _verify(GPU / "side_stream.py", rounds=2)
    assert not verdict.ok
    assert verdict.stage == "timing" and "exploit 7" in verdict.message, verdict.message


def test_a_patched_timer_is_caught() -> None:
    verdict = _verify(GPU / "timer_patch.py", rounds=2)
    assert not verdict.ok
    assert "exploit 10" in verdict.message and "elapsed_time" in verdict.message, verdict.message


def test_tf32_in_an_fp32_task_fails_the_fp32_tolerance_and_passes_a_declared_one() -> None:
    strict = _verify(GPU / "tf32_matmul.py", time_it=False)
    assert not strict.ok and strict.stage == "compare", strict.message
    assert "atol=rtol=0.0001" in strict.message
    loose = _verify(GPU / "tf32_matmul.py", time_it=False, tolerances={"float32": 5e-2})
    assert loose.ok, loose.message


def test_an_unwritten_output_fails_even_where_freed_memory_could_hold_the_answer() -> None:
    verdict = _verify(GPU / "empty_output.py", time_it=False)
    assert not verdict.ok and verdict.stage in ("compare", "candidate"), verdict.message


def test_a_cuda_fault_is_contained_and_the_next_verification_runs() -> None:
    """The same pools for both: the worker whose CUDA context the fault destroyed is replaced."""
    with WorkerPool(1) as reference, WorkerPool(1) as candidate:
        faulty = _verify(GPU / "illegal_address.py", time_it=False, pools=(reference, candidate))
        assert not faulty.ok and faulty.stage == "candidate"
        assert "illegal" in faulty.message.lower() or "cuda" in faulty.message.lower(), faulty.message
        after = _verify(ROOT / "examples" / "vector_add.py", time_it=False, pools=(reference, candidate))
        assert after.ok, after.message
