"""The figures in docs/benchmarks.md re-derive from the raw results committed next to it
(docs/benchmarks/): every confirmation's speedup, interval and noise floor from its per-round
medians, the bench metrics from the per-problem rows, and the tables' figures in the page."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from bench_scripts import load

from tritonsmith.benchmark.metrics import TaskOutcome, aggregate
from tritonsmith.evaluator.stats import Confirmation, evaluate_rounds

DOCS = Path(__file__).resolve().parents[2] / "docs"
RAW = DOCS / "benchmarks"
PAGE = (DOCS / "benchmarks.md").read_text(encoding="utf-8")


def _load(name: str) -> Any:
    return json.loads((RAW / name).read_text(encoding="utf-8"))


def _check_confirmation(data: dict[str, Any]) -> Confirmation:
    confirmation = Confirmation.from_json(data)
    assert confirmation.rounds == len(confirmation.candidate_ms) == len(confirmation.original_ms)
    if confirmation.rounds >= 2 and not confirmation.error:
        speedup, low, high, floor = evaluate_rounds(confirmation.original_ms, confirmation.original_b_ms,
                                                    confirmation.candidate_ms)
        assert (speedup, low, high, floor) == pytest.approx(
            (confirmation.speedup, confirmation.low, confirmation.high, confirmation.noise_floor), rel=1e-6)
        if confirmation.claimed:
            assert low > 1 + floor
    assert data["text"] == confirmation.text()
    return confirmation


def test_the_bench_metrics_and_rows_re_derive_from_results_json() -> None:
    results = _load("bench-problems/results.json")
    problems = [p for p in results["problems"] if not p["error"]]
    metrics = aggregate([TaskOutcome(p["name"], p["correct"], p["speedup"]) for p in problems]).as_dict()
    assert metrics == pytest.approx(results["metrics"])
    for problem in problems:
        assert problem["correct"] == (problem["new_verified"] > 0)
        if problem["confirmation"] is not None:
            confirmation = _check_confirmation(problem["confirmation"])
            assert problem["claimed"] == confirmation.claimed
            if confirmation.claimed:
                assert problem["speedup"] == pytest.approx(confirmation.speedup)
        if problem["correct"] and not problem["claimed"]:
            assert problem["speedup"] <= 1.0  # unconfirmed: no faster than the start
        assert f"| {problem['name']} |" in PAGE and problem["result"] in PAGE
    m = results["metrics"]
    assert (f"| {m['accuracy']:.0%} | {sum(p['start_ok'] for p in problems)}/{len(problems)} | "
            f"{sum(p['claimed'] for p in problems)}/{len(problems)} | {m['mean_speedup']:.2f}× | "
            f"{m['fast@1.2']:.0%} | {m['fast@2']:.0%} | {m['gm10']:.2f}× |") in PAGE


def test_the_search_steps_confirmations_and_curves_re_derive_from_search_steps_json() -> None:
    data = _load("search_steps.json")
    for kernel, methods in data["results"].items():
        for method, curves in methods.items():
            assert len(curves) == data["seeds"] and all(len(c) == data["steps"] for c in curves)
            assert all(a <= b for c in curves for a, b in zip(c, c[1:]))  # best so far
            finals = ", ".join(f"{c[-1]:.2f}" for c in curves)
            assert finals in PAGE, (kernel, method, finals)
            for confirmation in data["confirmations"][kernel][method]:
                if confirmation is not None:
                    _check_confirmation(confirmation)


def test_the_precision_totals_re_derive_from_precision_real_code_json() -> None:
    data = _load("precision_real_code.json")
    rows = data["results"]
    files, lines, kernels = (sum(r[key] for r in rows) for key in ("files", "lines", "kernels"))
    errors = sum(r["severity"].get("error", 0) for r in rows)
    warnings = sum(r["severity"].get("warning", 0) for r in rows)
    assert f"| **total** | | | {files} | {lines:,} | {kernels} | {errors} | {warnings} |" in PAGE
    for row in rows:
        assert f"| {row['files']} | {row['lines']:,} | {row['kernels']} | {row['severity'].get('error', 0)} | " in PAGE


def test_the_check_throughput_table_re_derives_from_check_throughput_json() -> None:
    data = _load("check_throughput.json")
    for row in data["rows"]:
        cells = f"| {row['wall_s']:.3f} | {row['lines_per_s']:,.0f} |"
        assert cells in PAGE, (row["tool"], cells)
        assert f"{row['lines_per_cpu_s']:,.0f}" in PAGE


STRUCTURAL = ["fusion-search-1.json", "fusion-search-2.json", "single-pass-search-1.json", "single-pass-search-2.json"]


@pytest.mark.parametrize("name", STRUCTURAL)
def test_the_structural_search_rows_and_confirmations_re_derive_from_their_json(name: str) -> None:
    data = _load(name)
    run = name.rsplit("-", 1)[1].removesuffix(".json")
    rows = data["rows"]
    assert data["searches"] == len(rows)
    assert data["fused"] == sum(r["fused"] for r in rows)
    assert data["single_pass"] == sum(r["single_pass"] for r in rows)
    for row in rows:
        assert row["fused"] == (len(row["launched_after"]) < len(row["launched_before"]))
        assert row["single_pass"] == (row["block_loops_after"] == 0 < row["block_loops_before"])
        text = "no patch"
        if row["confirmation"] is not None:
            confirmation = _check_confirmation(row["confirmation"])
            if confirmation.claimed:
                assert row["speedup"] == pytest.approx(confirmation.speedup)
            text = confirmation.text()
        line = (f"| {row['problem']} | {run} | {', '.join(row['launched_before'])} → {', '.join(row['launched_after'])} | "
                f"{row['block_loops_before']} → {row['block_loops_after']} | {text} | "
                f"{'yes' if row['patch_applies'] else 'no'} |")
        assert line in PAGE, line


PATCH_ROUNDTRIPS = ["patch-roundtrip-1.json", "patch-roundtrip-2.json"]


@pytest.mark.parametrize("name", PATCH_ROUNDTRIPS)
def test_the_patch_round_trip_rows_re_derive_from_their_json(name: str) -> None:
    """Issue 34's table: every example and suite problem searched, each patch applied, parsed
    and verified again."""
    data = _load(name)
    run = name.rsplit("-", 1)[1].removesuffix(".json")
    rows = data["rows"]
    assert data["kind"] == "all" and data["searches"] == len(rows) == 20
    assert data["patches"] == sum(bool(r["patch_applies"]) for r in rows)
    assert data["patches_verified"] == sum(bool(r["patch_verifies"]) for r in rows)
    for row in rows:
        if row["patch_applies"]:
            assert row["patch_parses"] and row["improved"], row
        line = (f"| {row['problem']} | {run} | {row['result'] or 'no patch'} | "
                f"{'yes' if row['patch_applies'] else 'no patch'} | {'yes' if row['patch_parses'] else '-'} | "
                f"{'yes' if row['patch_verifies'] else ('-' if row['patch_verifies'] is None else 'no')} | "
                f"{row['search_seconds']:.0f} |")
        assert line in PAGE, line


def test_the_predicted_variant_rows_re_derive_from_their_json() -> None:
    """Every row of the predicted-time table comes from predictor_rank.py's own table function
    over the committed runs, which predicted every variant they verified."""
    module = load("predictor_rank")
    for run in ("1", "2"):
        data = _load(f"predicted-variants-{run}.json")
        assert all(r["predicted_s"] for r in data["rows"] if r["verified"])
        rows = module.table_rows(data, run)
        assert len(rows) == len({r["problem"] for r in data["rows"]})
        for line in rows:
            assert line in PAGE, line


@pytest.mark.parametrize("run", ["before", "1", "2"])
def test_the_search_statistics_re_derive_from_their_json(run: str) -> None:
    """The tree-against-random table: each run's summary recomputed from its per-seed curves,
    and its rows (search_stats.py's own table function) in the page."""
    module = load("search_stats")
    data = _load(f"search-stats-{run}.json")
    problems = {path.stem for path in (DOCS.parent / "bench" / "problems").glob("*.py")}
    assert len(data["seeds"]) >= 5 and {row["problem"] for row in data["rows"]} == problems - module.SLOW.keys()
    at = [int(budget) for budget in data["summary"]]
    assert json.loads(json.dumps(module.summarise(data["rows"], data["seeds"], at))) == data["summary"]
    for line in module.table_rows(data, run):
        assert line in PAGE, line


@pytest.mark.parametrize("run", ["before-1", "before-2", "after-1", "after-2", "rebase-before-1", "rebase-before-2",
                                 "rebase-after-1", "rebase-after-2", "rebase-after-3", "rebase-after-4"])
def test_the_55k_line_edit_latencies_re_derive_from_their_json(run: str) -> None:
    """docs/benchmarks.md, "An edit in a 55,000-line file" (both tables): each row's median and
    p95 from the run's every latency, with the benchmark's own percentile."""
    percentile = load("lsp_latency").percentile
    which, number = run.removeprefix("rebase-").split("-")
    data = _load(f"edit-55k-{run}.json")
    assert {r["sites"] for r in data["results"]} == {"kernel", "host"}
    for result in data["results"]:
        latencies = result["latencies_ms"]
        assert len(latencies) == 60 and result["lines"] == 55000
        assert percentile(latencies, 0.50) == pytest.approx(result["p50_ms"])
        assert percentile(latencies, 0.95) == pytest.approx(result["p95_ms"])
        row = (f"| {which}, {number} | {result['sites']} | {result['p50_ms']:.1f} | {result['p95_ms']:.1f} | "
               f"{result['max_ms']:.1f} | {result['open_to_diagnostics_ms'] / 1000:.1f} |")
        assert row in PAGE, row


@pytest.mark.parametrize("run", ["1", "2"])
def test_the_forked_check_of_one_large_file_re_derives_from_its_json(run: str) -> None:
    """docs/benchmarks.md, "One large file on every core": each run's medians."""
    data = _load(f"check-55k-forked-{run}.json")
    assert data["lines"] == 55000 and len(data["jobs_1_s"]) == len(data["default_s"]) == 3
    row = (f"| {run} | {statistics.median(data['jobs_1_s']):.2f} ({min(data['jobs_1_s']):.2f}-{max(data['jobs_1_s']):.2f}) | "
           f"{statistics.median(data['default_s']):.2f} ({min(data['default_s']):.2f}-{max(data['default_s']):.2f}) | "
           f"{statistics.median(data['jobs_1_s']) / statistics.median(data['default_s']):.2f}x |")
    assert row in PAGE, row


@pytest.mark.parametrize("bytecode", ["", "nobytecode-"])
@pytest.mark.parametrize("which", ["before", "after"])
@pytest.mark.parametrize("run", ["1", "2"])
def test_the_check_of_55k_lines_within_2_s_re_derives_from_its_json(bytecode: str, which: str, run: str) -> None:
    """docs/benchmarks.md, "`check` of 55,000 lines within 2 s": each run's medians and ranges."""
    data = _load(f"check-55k-{bytecode}{which}-{run}.json")
    assert data["lines"] == 55000 and len(data["jobs_1_s"]) == len(data["default_s"]) == 5
    assert data["bytecode"] == ("none" if bytecode else "cached")
    one, forked = data["jobs_1_s"], data["default_s"]
    row = (f"| {data['bytecode']} | {which} ({data['tritonsmith']}), {run} | "
           f"{statistics.median(one):.2f} ({min(one):.2f}-{max(one):.2f}) | "
           f"{statistics.median(forked):.2f} ({min(forked):.2f}-{max(forked):.2f}) |")
    assert row in PAGE, row


@pytest.mark.parametrize("run", ["1", "2"])
def test_the_55k_line_edit_latencies_after_the_typing_changes_re_derive_from_their_json(run: str) -> None:
    """docs/benchmarks.md, "After this session's changes to launch typing": each row."""
    percentile = load("lsp_latency").percentile
    data = _load(f"edit-55k-final-{run}.json")
    assert {r["sites"] for r in data["results"]} == {"kernel", "host"}
    for result in data["results"]:
        latencies = result["latencies_ms"]
        assert len(latencies) == 60 and result["lines"] == 55000
        assert percentile(latencies, 0.95) == pytest.approx(result["p95_ms"])
        row = f"| final, {run} | {result['sites']} | {result['p50_ms']:.1f} | {result['p95_ms']:.1f} | {result['max_ms']:.1f} |"
        assert row in PAGE, row
        assert result["p95_ms"] <= 50  # issue 17's target, as the page says


@pytest.mark.parametrize("name", [f"{sites}-{which}-{run}" for sites in ("host", "kernel") for which in ("before", "fix")
                                  for run in ("1", "2")] + ["host-final-1", "host-final-2"])
def test_the_5k_line_soak_re_derives_from_its_json(name: str) -> None:
    """docs/benchmarks.md, "Host edits' growth found and fixed": each run's row, from its samples."""
    sites, which, run = name.split("-")
    commit = {"before": "aabc723", "fix": "c6b5959", "final": "027f369"}[which]
    _assert_soak_row(_load(f"soak-5k-{name}.json"), f"{commit}, {run}", sites, target=which != "before")


def _assert_soak_row(data: dict[str, Any], label: str, sites: str, *, target: bool) -> None:
    """A 5,000-line soak's row (`label`, e.g. "c6b5959, 1"), from its samples, is on the page."""
    assert data["lines"] == 5000 and data["edits"] == 10000 and data["sites"] == sites
    after = [mb for n, mb in data["rss_mb"] if n >= 1000]
    assert data["spread_after_1000_mb"] == pytest.approx(max(after) - min(after), abs=0.011)
    at_3000 = next(mb for n, mb in data["rss_mb"] if n >= 3000)
    row = (f"| {label} | {sites} | {data['rss_at_1000_mb']:.2f} | {at_3000:.2f} | {data['rss_end_mb']:.2f} | "
           f"{data['spread_after_1000_mb']:.2f} | {data['seconds']:.1f} |")
    assert row in PAGE, row
    if target:
        assert data["spread_after_1000_mb"] <= 5  # issue 17's target, as the page says


@pytest.mark.parametrize("run", [1, 2])
def test_the_verification_cost_rows_re_derive_from_their_runs(run: int) -> None:
    """Issue 35: the checks against an adversary cost about 1% of a verification."""
    data = _load(f"verify-cost-{run}.json")
    rows = load("verify_cost").table(data["runs"])
    assert rows == data["rows"]
    for line in rows:
        assert line in PAGE, line


def test_the_adversary_rows_re_derive_from_their_verdicts() -> None:
    for side, label in (("before", "bf66243 (before)"),
                        ("after", "after (4ef3f24 and the `--protocol kernelbench` try rule)")):
        for run in (1, 2):
            data = _load(f"adversary-{side}-{run}.json")
            rows = data["rows"]
            attacks = [r for r in rows if r["attack"]]
            look_alikes = [r for r in rows if not r["attack"]]
            verified = sum(bool(r["ok"]) for r in attacks)
            named = sum(not r["ok"] and bool(r["named"]) for r in attacks)
            line = (f"| {label} | {run} | {verified} | {named} | "
                    f"{sum(bool(r['ok']) for r in look_alikes)} |")
            assert line in PAGE, line
            assert len(attacks) == 37 and len(look_alikes) == 6


@pytest.mark.parametrize("run", ["1", "2", "3", "4", "5", "6", "7", "8"])
def test_the_prediction_cost_rows_re_derive_from_their_json(run: str) -> None:
    """docs/benchmarks.md, "Predicted time: what it costs next to the verification": each row is
    predict_cost.py's table over the committed runs, and every prediction was at the sizes as
    written, without data."""
    data = _load(f"predict-cost-{run}.json")
    assert load("predict_cost").table(data["runs"]) == data["rows"]
    for line in data["rows"]:
        assert line in PAGE, line
    predicted = [r for r in data["runs"] if r["kind"] != "verify"]
    assert predicted and all(r["profiled"] == "without data" and r["summary"].endswith("as written")
                             for r in predicted)


def test_the_calibration_table_and_the_host_fit_re_derive_from_their_json() -> None:
    """docs/benchmarks.md, "Predicted time against GPU measurements": the table is
    predict_calibration.py's report over the two committed runs, which hold only the calibration
    split; the host constants and the figures quoted for them come from its fit on run 1."""
    module = load("predict_calibration")
    for pair in ((1, 2), (3, 4), (4, 5), (6, 7)):  # before the host, loop-spill and cast changes; after; after issue 36's cost; after the trials shared
        paths = [RAW / f"predict-calibration-{n}.json" for n in pair]
        for line in module.report(paths, None).splitlines():
            if line.startswith("|"):
                assert line in PAGE, line
    after = module.summarize(_load("predict-calibration-3.json"))
    assert round(after["median_spearman"], 2) == 0.96 and after["fastest_in_quarter_problems"] == [4, 5]
    assert min(f["spearman"] for f in after["problems"].values()) >= 0.8
    run = _load("predict-calibration-1.json")
    assert {int(row["problem"]) for row in run["rows"]} == {18, 29, 40, 42, 44}
    fitted = module.fit(run, [18, 29, 40])
    assert (fitted["call_s"], fitted["launch_s"], fitted["op_s"]) == pytest.approx((0.0, 46e-6, 1.5e-6))
    problems = fitted["summary"]["problems"]
    assert round(problems[18]["spearman"], 2) == 0.88 and round(fitted["summary"]["median_spearman"], 2) == 0.84
    assert "46 µs a Triton launch" in PAGE and "1.5 µs a PyTorch operator" in PAGE


@pytest.mark.parametrize("when", ["before", "after"])
def test_issue_37s_learning_curve_figures_re_derive_from_their_json(when: str) -> None:
    """docs/benchmarks.md, "Issue 37's held-out half": both runs of each tree agree step by step,
    and the figures quoted are theirs."""
    runs = [_load(f"learning-curve-37-{when}-{i}.json") for i in (1, 2)]
    steps = [[(s["family"], s["role"], s["index"], s["flagged_before"], s["compiled"]) for s in r["steps"]]
             for r in runs]
    assert steps[0] == steps[1]
    run = runs[0]
    quoted = {"before": ("0/8", 4), "after": ("6/8", 0)}[when]
    assert (run["held_out_37_flagged_after_three_failures"], run["false_positives"]) == quoted
    assert run["flagged_after_three_failures"] == "8/8"
    for i in (1, 2):
        assert f"learning-curve-37-{when}-{i}.json" in PAGE


@pytest.mark.parametrize("name", ["check-cache-1", "check-cache-2", "check-cache-3", "check-cache-4",
                                  "check-cache-before-5-1", "check-cache-5-1", "check-cache-before-5-2", "check-cache-5-2",
                                  "check-cache-before-6-1", "check-cache-6-1", "check-cache-before-6-2", "check-cache-6-2",
                                  "check-cache-before-7-1", "check-cache-7-1", "check-cache-before-7-2", "check-cache-7-2"])
def test_the_check_cache_rows_re_derive_from_their_json(name: str) -> None:
    """docs/benchmarks.md, "check's result cache" (and "Again on 2026-12-07", on the corpus
    without its kernelbench/ folder): the table is check_cache.py's over the committed rows, and
    the cached runs' findings were the fresh check's."""
    data = _load(f"{name}.json")
    assert load("check_cache").table(data["rows"]) == data["table"]
    for line in data["table"]:
        assert line in PAGE, line
    corpus = _load("check-corpus.json")
    if any(f"-{batch}-" in name for batch in (5, 6, 7)):
        kernelbench = next(r for r in corpus["repositories"] if r["folder"] == "kernelbench")
        corpus = {"files": corpus["files"] - kernelbench["files_with_triton"], "lines": corpus["lines"] - kernelbench["lines"]}
        assert data["lines"] == corpus["lines"]
    assert data["mismatches"] == [] and data["files"] == corpus["files"]


@pytest.mark.parametrize("run", ["1", "2", "3", "4", "5", "6"])
def test_the_check_cost_parts_re_derive_from_their_json(run: str) -> None:
    """docs/benchmarks.md, "check's result cache": where a cold check's time goes."""
    data = _load(f"check-costs-{run}.json")
    assert load("check_costs").table(data["runs"]) == data["table"]
    for line in data["table"]:
        assert line in PAGE, line


@pytest.mark.parametrize("run", ["1", "2"])
def test_the_real_file_edit_latencies_re_derive_from_their_json(run: str) -> None:
    """docs/benchmarks.md, "The language server on real 2,000-line files": each row's median,
    p95 and maximum from the run's every latency, its cold starts and its start to `initialize`."""
    percentile = load("lsp_latency").percentile
    data = _load(f"lsp-real-files-{run}.json")
    assert {(r["server"], r["file"]) for r in data["results"]} == {
        (server, name) for server in ("tritonsmith", "pylsp")
        for name in ("causal_conv1d.py", "fused_neighborhood_attention.py")}
    for result in data["results"]:
        latencies = result["latencies_ms"]
        starts = [s["cold_start_ms"] for s in result["starts"]]
        assert len(latencies) == 200 and len(starts) == 4
        row = (f"| {run} | {result['server']} | {result['file']} | {result['lines']:,} | "
               f"{percentile(latencies, 0.5):.1f} | {percentile(latencies, 0.95):.1f} | {max(latencies):.1f} | "
               f"{statistics.median(starts):.0f} ({min(starts):.0f}-{max(starts):.0f}) | "
               f"{result['spawn_to_initialize_ms']:.0f} |")
        assert row in PAGE, row


def _cold_start_row(run: str, tree: str, result: dict[str, Any]) -> str:
    starts = result["starts"]
    totals = [s["cold_start_ms"] for s in starts]
    inits = [s["spawn_to_initialize_ms"] for s in starts]
    return (f"| {run} | {tree} | {result['server']} | {result['file']} | "
            f"{statistics.median(totals):.0f} ({min(totals):.0f}-{max(totals):.0f}) | "
            f"{statistics.median(inits):.0f} ({min(inits):.0f}-{max(inits):.0f}) | {result['cold_start_cpu_ms']:.0f} |")


@pytest.mark.parametrize("run", ["1", "2"])
def test_the_cold_start_before_and_after_re_derive_from_their_json(run: str) -> None:
    """docs/benchmarks.md, "Cold start without the evaluator": each row's median and range of
    eight starts, to first diagnostics and to the `initialize` answer, and the first start's CPU."""
    for tree, result in _before_and_after("lsp-cold-start", run):
        assert len(result["starts"]) == 8
        row = _cold_start_row(run, tree, result)
        assert row in PAGE, row


@pytest.mark.parametrize("run", ["1", "2"])
@pytest.mark.parametrize("name", ["lsp-early", "lsp-syntax-first"])
def test_the_early_answers_before_and_after_re_derive_from_their_json(name: str, run: str) -> None:
    """docs/benchmarks.md, "The first answers before pygls loads" and "The syntax-level findings
    first": the cold-start rows (as in the table before them) and each edit run's p95 and maximum."""
    percentile = load("lsp_latency").percentile
    for tree, result in _before_and_after(name, run):
        assert len(result["starts"]) == 8 and len(result["latencies_ms"]) == 40
        latencies = result["latencies_ms"]
        row = (_cold_start_row(run, tree, result)
               + f" {percentile(latencies, 0.95):.1f} | {max(latencies):.1f} |")
        assert row in PAGE, row


def _edit_row(run: str, tree: str, result: dict[str, Any]) -> str:
    percentile = load("lsp_latency").percentile
    latencies = result["latencies_ms"]
    # The first edit waits for the rest of the start-up (the sections above): counted apart.
    over = sum(1 for latency in latencies[1:] if latency > 10.0)
    return (f"| {run} | {tree} | {result['server']} | {result['file']} | {percentile(latencies, 0.5):.1f} | "
            f"{percentile(latencies, 0.95):.1f} | {over} of {len(latencies) - 1} | {max(latencies[1:]):.1f} | "
            f"{latencies[0]:.1f} |")


@pytest.mark.parametrize("run", ["1", "2"])
@pytest.mark.parametrize("name", ["lsp-edits", "lsp-edits-2"])
def test_the_edit_latencies_before_and_after_re_derive_from_their_json(name: str, run: str) -> None:
    """docs/benchmarks.md, "Typing in a kernel re-checks what the edit can change" and the
    paragraph after it: each row's p50, p95, edits over 10 ms and maximum (the first edit apart)."""
    for tree, result in _before_and_after(name, run):
        assert len(result["latencies_ms"]) == 40
        row = _edit_row(run, tree, result)
        assert row in PAGE, row


def _before_and_after(name: str, run: str) -> Any:
    """(tree, result) of each row of `{name}-{before,after}-{run}.json`: the two real files,
    tritonsmith before, tritonsmith and pylsp after."""
    files = {"causal_conv1d.py", "fused_neighborhood_attention.py"}
    for tree, servers in (("before", ("tritonsmith",)), ("after", ("tritonsmith", "pylsp"))):
        data = _load(f"{name}-{tree}-{run}.json")
        assert {(r["server"], r["file"]) for r in data["results"]} == {(s, f) for s in servers for f in files}
        for result in data["results"]:
            yield tree, result


@pytest.mark.parametrize("name", [f"{which}-{run}" for which in ("before", "after") for run in ("1", "2")])
def test_the_soak_with_the_statement_memo_re_derives_from_its_json(name: str) -> None:
    """docs/benchmarks.md, "With the statement memo": each run's row, from its samples."""
    which, run = name.split("-")
    commit = {"before": "e9e500d", "after": "a50d30e"}[which]
    _assert_soak_row(_load(f"soak-memo-{name}.json"), f"{commit}, {run}", "kernel", target=True)


def _i38_edit_row(run: str, tree: str, result: dict[str, Any]) -> str:
    """A row of "Issue 38's server targets, before and now": the edit latencies (the first edit,
    sent the moment the first diagnostics arrive, apart) and the cold starts."""
    percentile = load("lsp_latency").percentile
    latencies = result["latencies_ms"]
    starts = [s["cold_start_ms"] for s in result["starts"]]
    over = sum(1 for latency in latencies[1:] if latency > 10.0)
    return (f"| {run} | {tree} | {result['server']} | {result.get('file') or 'generated'} | {result['lines']:,} | "
            f"{percentile(latencies, 0.5):.1f} | {percentile(latencies, 0.95):.1f} | {over} of {len(latencies) - 1} | "
            f"{max(latencies[1:]):.1f} | {latencies[0]:.1f} | "
            f"{statistics.median(starts):.0f} ({min(starts):.0f}-{max(starts):.0f}) |")


I38_RUNS = {  # file stem -> (tree, servers, edits)
    "lsp-i38-before": ("378f591", {"tritonsmith"}, 100),
    "lsp-i38-after": ("a34cdd5", {"tritonsmith", "ruff", "pylsp"}, 100),
    "lsp-i38-now": ("4646b6b", {"tritonsmith", "ruff", "pylsp"}, 100),
    "lsp-i38-generated-before": ("378f591", {"tritonsmith"}, 200),
    "lsp-i38-generated-now": ("4646b6b", {"tritonsmith", "ruff"}, 200),
    "lsp-i38-evening-before": ("e653959", {"tritonsmith"}, 100),
    "lsp-i38-evening": ("1284cd6", {"tritonsmith", "ruff"}, 100),
}


@pytest.mark.parametrize("run", ["1", "2"])
@pytest.mark.parametrize("name", sorted(I38_RUNS))
def test_issue_38s_server_rows_re_derive_from_their_json(name: str, run: str) -> None:
    """docs/benchmarks.md, "Issue 38's server targets, before and now": each row."""
    tree, servers, edits = I38_RUNS[name]
    data = _load(f"{name}-{run}.json")
    assert {r["server"] for r in data["results"]} == servers
    for result in data["results"]:
        assert len(result["latencies_ms"]) == edits and len(result["starts"]) == 4
        row = _i38_edit_row(run, tree, result)
        assert row in PAGE, row


@pytest.mark.parametrize("name", ["before-1", "before-2", "before-3", "before-4", "after-1", "after-2",
                                  "handover-1", "handover-2", "handover-3", "handover-4", "final-1", "final-2"])
def test_issue_38s_55k_line_rows_re_derive_from_their_json(name: str) -> None:
    """docs/benchmarks.md, "Issue 38's server targets, before and now" and "Issue 38's leftovers":
    the 55,000-line file."""
    percentile = load("lsp_latency").percentile
    trees = {"before": "027f369", "after": "a34cdd5", "handover": "4646b6b", "final": "9a663f2"}
    which, run = name.split("-")
    data = _load(f"edit-55k-i38-{name}.json")
    assert {r["sites"] for r in data["results"]} == {"kernel", "host"}
    for result in data["results"]:
        latencies = result["latencies_ms"]
        assert len(latencies) == 60 and result["lines"] == 55000
        row = (f"| {run} | {trees[which]} | {result['sites']} | {percentile(latencies, 0.5):.1f} | "
               f"{percentile(latencies, 0.95):.1f} | {max(latencies[1:]):.1f} | {latencies[0]:.1f} | "
               f"{result['open_to_diagnostics_ms'] / 1000:.1f} |")
        assert row in PAGE, row


def _typing_cost_line(data: dict[str, Any], name: str) -> str:
    """A file's line in "Launch typing linear in a file's launchers": its time a line against the
    corpus's, its share of the check and the typer's evaluations (bench/typing_cost.py)."""
    corpus = data["corpus"]
    row = next(r for r in corpus["rows"] if r["file"].endswith(name))
    per_line = row["cpu_s"] / row["lines"] * 1e6
    return (f"{per_line:.0f} µs a line ({per_line / corpus['us_per_line']:.1f}x the corpus's "
            f"{corpus['us_per_line']:.0f}, {row['cpu_s'] / corpus['cpu_s']:.1%} of the check), "
            f"{row['evaluations']:,} evaluations")


@pytest.mark.parametrize("name", ["before-1", "after-1", "before-2", "after-2"])
def test_the_typing_cost_figures_re_derive_from_their_json(name: str) -> None:
    """docs/benchmarks.md, "Launch typing linear in a file's launchers": the quoted figures."""
    data = _load(f"typing-cost-{name}.json")
    assert f"typing-cost-{name}.json" in PAGE
    for file in ("fla/modules/activations.py", "triton_ascend/activations.py"):
        assert _typing_cost_line(data, file) in PAGE, _typing_cost_line(data, file)
    counts = " / ".join(f"{data['launchers'][n]:,}" for n in ("4", "8", "16", "32"))
    assert counts in PAGE, counts
    times = " / ".join(f"{data['dispatchers'][n]['cpu_s']:.2f}" for n in data["dispatchers"])
    assert times in PAGE, times


def test_the_edits_beside_launches_that_gave_up_re_derive_from_their_json() -> None:
    """docs/benchmarks.md, "Issue 38's leftovers": the dispatchers' rows and the range of every
    edit after the first, before and after."""
    percentile = load("lsp_latency").percentile
    after_first: dict[tuple[str, str], list[float]] = {}
    for which, tree in (("before", "9a663f2"), ("after", "4d03ab8"), ("final", "70b5956")):
        for run in ("1", "2"):
            data = _load(f"edit-dispatchers-{which}-{run}.json")
            for result in data["results"]:
                latencies = result["latencies_ms"]
                assert len(latencies) == 20
                row = (f"| {run} | {tree} | {result['file']} | {result['lines']:,} | {percentile(latencies, 0.5):.1f} | "
                       f"{percentile(latencies, 0.95):.1f} | {max(latencies[1:]):.1f} | {latencies[0]:.1f} |")
                assert row in PAGE, row
                after_first.setdefault((which, result["file"]), []).extend(latencies[1:])
    after = [ms for which in ("after", "final") for file in ("dispatchers-12.py", "dispatchers-30.py")
             for ms in after_first[(which, file)]]
    assert f"answered in {min(after):.1f}-{max(after):.1f} ms" in PAGE
    twelve, thirty = after_first[("before", "dispatchers-12.py")], after_first[("before", "dispatchers-30.py")]
    assert f"took {min(twelve) / 1000:.2f}-{max(twelve) / 1000:.2f} s and\n{min(thirty) / 1000:.2f}-{max(thirty) / 1000:.2f} s" in PAGE


@pytest.mark.parametrize("run", ["1", "2"])
def test_the_cache_store_and_cold_check_figures_re_derive_from_their_json(run: str) -> None:
    """docs/benchmarks.md, "`check`'s result cache in batches": the store's costs, and each
    whole run's ratios to pyflakes."""
    before, after = _load(f"cache-store-before-{run}.json"), _load(f"cache-store-after-{run}.json")
    assert before["files"] == after["files"] == 814
    assert "writing took " + " / ".join(f"{_load(f'cache-store-before-{n}.json')['write_s'] * 1000:.0f}"
                                         for n in ("1", "2")) + " ms before" in PAGE
    assert f"{after['write_s'] * 1000:.0f} / " in PAGE and f"{before['read_s'] * 1000:.0f} / " in PAGE

    def ratio(name: str, tool: str) -> str:
        rows = _load(f"{name}.json")["rows"]
        def median(of: str) -> float:
            return statistics.median(r["cpu_s"] for r in rows if r["tool"] == of)
        return f"{median(tool) / median('pyflakes'):.2f}"

    ones = [ratio(f"check-cache-{which}7-{n}", "tritonsmith --no-cache --jobs 1") for which in ("before-", "")
            for n in ("1", "2")]
    assert f"{ones[0]} and {ones[1]} times pyflakes' CPU time at\n70b5956 and {ones[2]} and {ones[3]}" in PAGE
