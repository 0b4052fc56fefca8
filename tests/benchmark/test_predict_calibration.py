"""bench/predict_calibration.py's pure parts: Spearman's rho with ties, the seeded spread of picks
over the measured range, the refusal of held-out problems, and the report of a small synthetic
run (no mirror, no subprocess, no GPU)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from types import ModuleType

import pytest
from bench_scripts import load


@pytest.fixture(scope="module")
def calib() -> ModuleType:
    return load("predict_calibration")


def test_spearman_of_known_orders(calib: ModuleType) -> None:
    assert calib.spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)  # 1 - 6·4/(5·24)
    assert calib.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert calib.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)


def test_spearman_gives_ties_their_average_rank(calib: ModuleType) -> None:
    # ranks (1, 2.5, 2.5, 4) against (1, 2, 3, 4): r = 4.5 / sqrt(4.5 · 5) = 3 / sqrt(10)
    assert calib.spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(3 / math.sqrt(10))


def test_spearman_ranks_infinite_predictions_slowest(calib: ModuleType) -> None:
    assert calib.spearman([1.0, math.inf, 2.0, math.inf], [1, 4, 2, 3]) == pytest.approx(
        calib.spearman([1, 3.5, 2, 3.5], [1, 4, 2, 3]))


def test_spearman_is_none_without_spread_or_points(calib: ModuleType) -> None:
    assert calib.spearman([3, 3, 3, 3], [1, 2, 3, 4]) is None
    assert calib.spearman([1, 2, 3], [7, 7, 7]) is None
    assert calib.spearman([1, 2], [1, 2]) is None
    assert calib.spearman([1, 2, 3], [1, 2]) is None


def _pool(n: int) -> list[dict]:
    """Steps with distinct codes and runtimes out of step order, one tie."""
    rng = random.Random(7)
    times = [round(rng.uniform(0.1, 50.0), 3) for _ in range(n - 1)] + [1.0]
    times[3] = 1.0
    return [{"step": i + 1, "node_id": i + 1, "runtime_us": t, "code": f"code {i}", "score": {"correct": True}}
            for i, t in enumerate(times)]


def test_selection_spreads_over_the_range_and_keeps_both_ends(calib: ModuleType) -> None:
    pool = _pool(60)
    picks = calib.select(pool, 8, random.Random(0))
    times = sorted(s["runtime_us"] for s in pool)
    assert len(picks) == 8 and len({s["step"] for s in picks}) == 8
    assert picks[0]["runtime_us"] == times[0] and picks[-1]["runtime_us"] == times[-1]
    assert [s["runtime_us"] for s in picks] == sorted(s["runtime_us"] for s in picks)
    # one pick per sixth of the 58 inner steps by rank: every pick but the ends falls in its own bin
    inner = sorted(pool, key=lambda s: (s["runtime_us"], s["step"]))[1:-1]
    for i, pick in enumerate(picks[1:-1]):
        assert pick in inner[i * 58 // 6:(i + 1) * 58 // 6]


def test_selection_is_deterministic_under_a_seed(calib: ModuleType) -> None:
    pool = _pool(60)
    first = [s["step"] for s in calib.select(pool, 8, calib.problem_rng(0, 18))]
    assert first == [s["step"] for s in calib.select(list(reversed(pool)), 8, calib.problem_rng(0, 18))]
    others = {tuple(s["step"] for s in calib.select(pool, 8, calib.problem_rng(seed, 18))) for seed in range(1, 6)}
    assert others - {tuple(first)}  # the seed does choose


def test_selection_takes_the_whole_pool_when_k_covers_it(calib: ModuleType) -> None:
    pool = _pool(5)
    picks = calib.select(pool, 16, random.Random(0))
    assert sorted(s["step"] for s in picks) == [1, 2, 3, 4, 5]
    assert [s["runtime_us"] for s in picks] == sorted(s["runtime_us"] for s in pool)


def test_eligible_keeps_the_first_correct_timed_step_of_each_code(calib: ModuleType) -> None:
    steps = [
        {"step": 3, "runtime_us": 2.0, "code": "a", "score": {"correct": True}},
        {"step": 1, "runtime_us": 1.0, "code": "a", "score": {"correct": True}},
        {"step": 2, "runtime_us": -1.0, "code": "b", "score": {"correct": True}},
        {"step": 4, "runtime_us": 3.0, "code": "c", "score": {"correct": False}},
        {"step": 5, "runtime_us": 4.0, "code": "", "score": {"correct": True}},
        {"step": 6, "runtime_us": 5.0, "code": "d", "score": {"correct": True}},
    ]
    assert [s["step"] for s in calib.eligible(steps)] == [1, 6]


@pytest.mark.parametrize("problem", [63, 70, 83, 84, 92, 1, 17])
def test_held_out_problems_are_refused(calib: ModuleType, problem: int) -> None:
    with pytest.raises(calib.HeldOut, match="held out"):
        calib.check_problem(problem)
    with pytest.raises(calib.HeldOut):
        calib.showcase_path(problem)
    with pytest.raises(calib.HeldOut):
        calib.parse_problems(f"18,{problem}")
    with pytest.raises(calib.HeldOut):
        calib.baseline_entry({"level2": {f"{problem}_X.py": {"mean": 1.0}}}, problem)


def test_the_calibration_split_is_accepted(calib: ModuleType) -> None:
    assert calib.parse_problems("44, p18,29,18") == [18, 29, 44]
    assert calib.showcase_path(42) == "web/showcase/kb-l2-p42-200.json"
    assert calib.baseline_entry({"level2": {"4_A.py": {}, "40_B.py": {"mean": 32.5}}}, 40) == ("40_B.py", {"mean": 32.5})
    assert calib.timing_folder("NVIDIA RTX A6000", ["A100-SXM4-40GB", "A6000", "L40S"]) == "A6000"


def test_a_corpus_with_a_held_out_file_is_refused_whole(calib: ModuleType, tmp_path: Path) -> None:
    manifest = {"files": [{"file": "p18/s001.py", "problem": 18}, {"file": "p63/s001.py", "problem": 63}]}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(calib.HeldOut):
        calib.corpus_entries(tmp_path, ["p18"])


def test_predicted_seconds_reads_finite_infinite_and_missing(calib: ModuleType) -> None:
    assert calib.predicted_seconds({"result": {"seconds": 2e-5}}) == 2e-5
    assert calib.predicted_seconds({"result": {"seconds": "Infinity"}}) == math.inf
    assert calib.predicted_seconds({"result": calib.strict_json({"seconds": math.inf})}) == math.inf
    for result in ({"seconds": None}, {"seconds": "NaN"}, {}, None, {"seconds": True}):
        assert calib.predicted_seconds({"result": result}) is None


def test_outcome_keeps_stderr_only_on_failure(calib: ModuleType) -> None:
    entry = {"file": "p18/s002.py", "problem": 18, "step": 2, "measured_ms": 0.478}
    ok = calib.outcome(entry, returncode=0, elapsed=1.0, timed_out=False,
                       stdout='{"seconds": Infinity, "launches": []}', stderr="", scratch="/tmp/x")
    assert ok["result"] == {"seconds": "Infinity", "launches": []} and "stderr_tail" not in ok
    failed = calib.outcome(entry, returncode=1, elapsed=1.0, timed_out=False, stdout="",
                           stderr="boom in /tmp/x/s002.py\n", scratch="/tmp/x")
    assert failed["result"] is None and failed["stderr_tail"] == ["boom in <tmp>/s002.py"]


def _row(problem: int, step: int, measured: float, seconds: object, verified: bool | None = True) -> dict:
    result = None if seconds is None else {"target": "sm_86", "seconds": seconds, "launches": [], "verified": verified,
                                           "error": None}
    return {"file": f"p{problem}/s{step:03d}.py", "problem": problem, "step": step, "measured_ms": measured,
            "returncode": 0, "result": result}


def _run(rows: list[dict]) -> dict:
    return {"target": "sm_86", "git_head": "0" * 40, "git_status_short": [], "started": "t0", "finished": "t1",
            "machine_before": {"cpus": 2, "loadavg": [1.0, 1.0, 1.0]}, "source_repo": "r", "source_commit": "c",
            "rows": rows}


def test_report_on_a_synthetic_run(calib: ModuleType, tmp_path: Path) -> None:
    rows = [  # p18: the prediction orders the files as measured; one cannot launch, one has none
        _row(18, 1, 1.0, 1e-3), _row(18, 2, 2.0, 2e-3), _row(18, 3, 3.0, 3e-3), _row(18, 4, 4.0, "Infinity"),
        _row(18, 5, 5.0, None),
        # p29: reversed, and the predicted fastest is the measured slowest; one not verified
        _row(29, 1, 1.0, 4e-3), _row(29, 2, 2.0, 3e-3), _row(29, 3, 3.0, 2e-3), _row(29, 4, 4.0, 1e-3, False),
    ]
    summary = calib.summarize(_run(rows))
    p18, p29 = summary["problems"][18], summary["problems"][29]
    assert (p18["files"], p18["finite"], p18["cannot_launch"], p18["no_prediction"]) == (5, 3, 1, 1)
    assert p18["spearman"] == pytest.approx(1.0) and p18["fastest_in_quarter"] is True
    assert p18["median_ratio"] == pytest.approx(1.0)  # 1e-3 s predicted for 1 ms measured
    assert p29["spearman"] == pytest.approx(-1.0) and p29["fastest_in_quarter"] is False
    assert p29["not_verified"] == 1
    assert summary["median_spearman"] == pytest.approx(0.0)
    assert summary["fastest_in_quarter_problems"] == [1, 2]
    assert summary["pooled"]["files"] == 9 and summary["pooled"]["no_prediction"] == 1

    one = tmp_path / "run-1.json"
    two = tmp_path / "run-2.json"
    one.write_text(json.dumps(_run(rows)))
    shifted = [dict(r) for r in rows]
    shifted[1] = _row(18, 2, 2.0, 3.5e-3)  # run 2 swaps p18's second file past its third
    two.write_text(json.dumps(_run(shifted)))
    text = calib.report([one, two], tmp_path / "report.md")
    assert (tmp_path / "report.md").read_text() == text
    header, _, line18, line29, median, pooled = text.splitlines()[:6]
    assert "ρ run 1" in header and "ρ run 2" in header and "ρ spread" in header
    assert line18.startswith("| L2 18 | 5 / 5 | 1.00 | 0.80 | 0.20 | yes / yes | 3 / 3 | 1 / 1 | 1 / 1 |")
    assert line29.startswith("| L2 29 | 4 / 4 | -1.00 | -1.00 | 0.00 | no / no |")
    assert median.startswith("| median over problems |  | 0.00 | -0.10 | 0.10 | 1 of 2 / 1 of 2 |")
    assert pooled.startswith("| pooled | 9 / 9 |")


def test_report_refuses_a_held_out_row(calib: ModuleType) -> None:
    with pytest.raises(calib.HeldOut):
        calib.summarize(_run([_row(18, 1, 1.0, 1e-3), _row(70, 1, 1.0, 1e-3)]))


def _parts(problem: int, step: int, measured_ms: float, device_s: float, launches: int, ops: int) -> dict:
    row = _row(problem, step, measured_ms, device_s)
    row["result"] = {**row["result"], "device_seconds": device_s, "host_ops": ops,
                     "launches": [{"kernel": "k"}] * launches}
    return row


def test_fit_chooses_the_host_constants_on_the_fit_problems_alone(calib: ModuleType) -> None:
    """p18's kernels are tiny on the GPU and measured by how much the host issues (launches and
    PyTorch calls); p29's by their GPU work. The fit, chosen on p18, finds a host term that
    orders p18 as measured, and p29 (the check half) keeps its order under it."""
    rows = [_parts(18, 1, 0.05, 5e-6, 1, 2), _parts(18, 2, 0.09, 4e-6, 2, 6), _parts(18, 3, 0.15, 3e-6, 4, 10),
            _parts(18, 4, 0.20, 2e-6, 5, 20),
            _parts(29, 1, 1.0, 1e-3, 3, 5), _parts(29, 2, 2.0, 2e-3, 1, 1), _parts(29, 3, 4.0, 4e-3, 2, 2)]
    assert calib.summarize(_run(rows))["problems"][18]["spearman"] == pytest.approx(-1.0)  # GPU time alone
    result = calib.fit(_run(rows), [18])
    assert result["launch_s"] > 0 or result["op_s"] > 0
    assert result["summary"]["problems"][18]["spearman"] == pytest.approx(1.0)
    assert result["summary"]["problems"][29]["spearman"] == pytest.approx(1.0)
    # The refitted totals are the longer of the GPU's and the host's time.
    refitted = calib.refit(rows[:1], 10e-6, 20e-6, 4e-6)[0]["result"]["seconds"]
    assert refitted == pytest.approx(max(5e-6, 10e-6 + 20e-6 + 2 * 4e-6))
