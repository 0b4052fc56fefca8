"""What a search offers is what it verified, for every example and every suite problem (issue
34): each offline proposal, trimmed of what the measure cannot see (the text the engine then
evaluates), is Python that parses, keeps the candidate's key, and comes back exactly from the
patch `git apply` takes. The whole loop (search, patch, apply, verify again) runs on every file
in `bench/structural_search.py --kind all`, with its raw data in docs/benchmarks/."""

from __future__ import annotations

import ast
import random
import subprocess
from pathlib import Path

import pytest

from tritonsmith.adapt.run import first_kernel
from tritonsmith.search.engine import unified_diff
from tritonsmith.search.equivalence import equivalence_key, without_unmeasured
from tritonsmith.search.model import (
    Evaluation,
    Outcome,
    PoolEntry,
    ProposalError,
    StepContext,
    Task,
)
from tritonsmith.search.proposers.offline import OfflineProposer

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "bench" / "problems").glob("*.py")) + sorted((ROOT / "examples").glob("*.py"))
STEPS = 8


def _proposals(source: str, kernel: str, objective: str) -> list[str]:
    """What the offline proposer offers in its first steps, refining and regenerating in turn."""
    task = Task(path="k.py", kernel=kernel, source=source, spec="harness:f", device="interpreter", objective=objective)
    proposer = OfflineProposer(random.Random(0))
    start = Evaluation(Outcome.CORRECT, speedup=1.0)
    out = []
    for step in range(STEPS):
        try:
            if step % 2:
                out.append(proposer.regenerate(StepContext(task=task, pool=(PoolEntry(source, start),))))
            else:
                out.append(proposer.refine(StepContext(task=task, chain=((source, start),)))[0])
        except ProposalError:
            continue
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_trimmed_proposal_parses_and_its_patch_applies(path: Path, tmp_path: Path) -> None:
    source = path.read_text()
    kernel = first_kernel(source)
    assert kernel is not None
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    checked = 0
    for objective, measure in (("time", "interpreter"), ("predicted", "predicted"), ("time", "gpu")):
        for candidate in _proposals(source, kernel, objective):
            trimmed = without_unmeasured(source, candidate, measure)
            ast.parse(trimmed)
            assert equivalence_key(trimmed, measure) == equivalence_key(candidate, measure)
            if measure != "predicted" or trimmed == source:
                continue
            (tmp_path / path.name).write_text(source)
            (tmp_path / "p.patch").write_text(unified_diff(source, trimmed, path.name))
            subprocess.run(["git", "apply", "p.patch"], cwd=tmp_path, check=True, capture_output=True)
            assert (tmp_path / path.name).read_text() == trimmed
            checked += 1
    assert checked, f"no proposal for {path.name} changed anything the prediction sees"
