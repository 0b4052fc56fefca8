"""The guardian: rules before evaluation, mechanical fixes, repair, and never a passing
candidate turned into a failing one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritonsmith.evaluator.specs import detect_specs
from tritonsmith.search.guardian import RuleGuardian
from tritonsmith.settings import Settings
from tritonsmith.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if detect_specs(p))


def _guardian(repair: object = None) -> RuleGuardian:
    return RuleGuardian(Workspace(None, Settings()), repair)  # type: ignore[arg-type]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_a_candidate_without_violations_passes_unchanged(example: Path) -> None:
    source = example.read_text()
    assert _guardian().check(source) == (source, "")


def test_a_violation_with_a_mechanical_fix_is_fixed() -> None:
    source = (ROOT / "examples" / "vector_add.py").read_text()
    broken = source.replace("BLOCK_SIZE: tl.constexpr", "BLOCK_SIZE")
    fixed, note = _guardian().check(broken)
    assert fixed == source and note == "fixed TS102"


def test_a_violation_without_a_fix_is_dropped_or_repaired_once() -> None:
    source = (ROOT / "examples" / "vector_add.py").read_text()
    broken = source.replace("tl.arange(0, BLOCK_SIZE)", "tl.arange(0, 100)")
    guardian = _guardian()
    assert guardian.check(broken)[0] is None and guardian.dropped == 1
    calls = []

    def repair(candidate: str, violations: list[str]) -> str:
        calls.append(violations)
        return source

    repaired, note = _guardian(repair).check(broken)
    assert repaired == source and note == "repaired by the proposer"
    assert len(calls) == 1 and "TS101" in calls[0][0]


@pytest.mark.compiler
def test_the_guardian_never_turns_a_verified_candidate_into_a_failing_one(tmp_path: Path) -> None:
    """Variants that verify stay verified after the guardian (unchanged, or fixed)."""
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    from tritonsmith.evaluator.verify import verify_spec

    original = (ROOT / "examples" / "vector_add.py").read_text()
    (spec,) = detect_specs(ROOT / "examples" / "vector_add.py")
    variants = [original.replace("BLOCK_SIZE=1024", f"BLOCK_SIZE={b}") for b in (64, 256, 4096)]
    variants.append(original.replace("BLOCK_SIZE: tl.constexpr", "BLOCK_SIZE").replace("BLOCK_SIZE=1024", "BLOCK_SIZE=512"))
    guardian = _guardian()
    for variant in variants:
        guarded, _ = guardian.check(variant)
        assert guarded is not None
        before = verify_spec(spec, candidate_source=variant, extra_shapes=False)
        after = verify_spec(spec, candidate_source=guarded, extra_shapes=False)
        assert after.ok or not before.ok, after.message
