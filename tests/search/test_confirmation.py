"""Confirmed speedups (issue 12, item 4): no speedup is claimed until the candidate and the
original, re-timed in alternating rounds, give an interval whose lower bound clears 1 + the
noise floor; a candidate that is the original up to hints that cannot change the time is not
re-timed and cannot win.

Most of this runs on made-up timings from a machine whose load drifts (the situation in which a
hint-only patch was once reported 1.91× faster): the statistics (`stats.confirm`) and the search
(`engine.Search`) are pure Python, so ten seeded searches take a second. The tests marked
`compiler` run the real thing: `tritonsmith optimize --device cpu` on a kernel whose only knobs
are hints, and a confirmation in real interpreter workers of a change that cannot matter.
"""

from __future__ import annotations

import math
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tritonsmith.evaluator.stats import (
    ORDERS,
    SIDES,
    Confirmation,
    ConfirmationError,
    RoundPolicy,
    confirm,
    log_interval,
    noise_floor,
    student_t,
    summarize,
)
from tritonsmith.search.engine import Search, SearchOptions
from tritonsmith.search.equivalence import equivalence_key, without_unmeasured
from tritonsmith.search.journal import Journal
from tritonsmith.search.model import (
    Edit,
    Evaluation,
    Outcome,
    ProposalError,
    StepContext,
    StepKind,
    Task,
)
from tritonsmith.search.proposers.offline import OfflineProposer

FIXTURES = Path(__file__).parent / "fixtures"
HINTS_ONLY = FIXTURES / "hints_only_add.py"
SLOW_ADD = FIXTURES / "slow_add.py"
CLAIM = re.compile(r"^\d+\.\d\d× \(95% CI \d+\.\d\d–\d+\.\d\d×, noise floor \d+(\.\d)?%\)$")
NO_CLAIM = re.compile(r"^no improvement \(")


class LoadedMachine:
    """Every measurement is the kernel's own time × the machine's load at that moment × ±3%
    jitter; the load drifts between measurements (a random walk between 1× and 2.2×: other
    jobs come and go), so two measurements taken at different moments can differ by 2×. It
    starts busy, as when the original was timed during someone else's build."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.load = 2.0

    def measure(self, ms: float) -> float:
        self.load = min(2.2, max(1.0, self.load * self.rng.uniform(0.8, 1.25)))
        return ms * self.load * self.rng.uniform(0.97, 1.03)


class LoadedEvaluator:
    """Screening as the real evaluator does it (one measurement per candidate, against the
    original's measurement from the start), and confirmation through `stats.confirm`, on a
    `LoadedMachine`. `kernel_ms(source)` is a kernel's true time."""

    def __init__(self, seed: int, kernel_ms: Callable[[str], float] | None = None) -> None:
        self.machine = LoadedMachine(seed)
        self.kernel_ms = kernel_ms or (lambda source: 10.0)
        self.baseline_ms: float | None = None
        self.evaluated: list[str] = []
        self.confirmed: list[Confirmation] = []

    def evaluate(self, source: str) -> Evaluation:
        self.evaluated.append(source)
        measured = self.machine.measure(self.kernel_ms(source))
        if self.baseline_ms is None:
            self.baseline_ms = measured
        speedup = self.baseline_ms / measured
        return Evaluation(Outcome.CORRECT, speedup=speedup, spread=(speedup * 0.97, speedup * 1.03), time_ms=measured,
                          message="verified · interpreter (made-up timing)")

    def confirm(self, original: str, candidate: str, progress: Callable[[int, Confirmation], None] | None = None
                ) -> Confirmation:
        def time_round(r: int, order: tuple[str, ...]) -> dict[str, float]:
            return {side: self.machine.measure(self.kernel_ms(candidate if side == "candidate" else original))
                    for side in order}

        self.confirmed.append(confirm(time_round, RoundPolicy(), progress=progress))
        return self.confirmed[-1]


def _task(tmp_path: Path, source: str, kernel: str = "add_kernel") -> Task:
    path = tmp_path / "k.py"
    path.write_text(source)
    return Task(path=str(path), kernel=kernel, source=source, spec="harness:add", device="interpreter")


# -- the statistics ----------------------------------------------------------------------------


def test_the_interval_is_students_t_on_the_log_ratios() -> None:
    assert student_t(1) == 12.706 and student_t(9) == 2.262 and 1.96 < student_t(200) < 1.975
    mean, low, high = log_interval([0.1, 0.2, 0.3])
    assert mean == pytest.approx(0.2) and high - mean == pytest.approx(4.303 * 0.1 / math.sqrt(3))
    assert log_interval([0.5])[1:] == (-math.inf, math.inf)  # one round: no interval
    assert noise_floor([0.0, 0.0, 0.0]) == 0.0 and noise_floor([0.1]) == math.inf


def test_every_side_takes_every_position_twice_in_six_rounds() -> None:
    assert sorted(ORDERS) == sorted({tuple(o) for o in ORDERS}) and len(ORDERS) == 6
    for position in range(3):
        assert sorted(order[position] for order in ORDERS) == sorted(SIDES * 2)


def test_a_real_speedup_on_a_quiet_machine_is_claimed_once_the_interval_is_tight() -> None:
    rng = random.Random(1)
    truth = {"original": 2.0, "original_b": 2.0, "candidate": 1.0}
    rounds: list[tuple[int, tuple[str, ...]]] = []

    def time_round(r: int, order: tuple[str, ...]) -> dict[str, float]:
        rounds.append((r, order))
        return {side: truth[side] * rng.uniform(0.98, 1.02) for side in order}

    result = confirm(time_round, RoundPolicy(min_rounds=4, max_rounds=12, target=0.03))
    assert result.claimed and result.stopped == "tight" and 4 <= result.rounds < 12
    assert result.low < 2.0 < result.high and result.high / result.low < 1.07
    assert CLAIM.match(result.text()), result.text()
    assert [order for _, order in rounds] == [ORDERS[r % 6] for r, _ in rounds]


def test_a_no_op_on_a_loaded_machine_is_never_claimed() -> None:
    """The bug: one measurement each, at different moments, made an unchanged kernel look up
    to 2× faster. Alternating rounds with an A/A comparison do not, for any of 50 seeds."""
    texts = []
    for seed in range(50):
        machine = LoadedMachine(seed)
        result = confirm(lambda r, order, m=machine: {side: m.measure(10.0) for side in order}, RoundPolicy())
        assert not result.claimed, (seed, result)
        texts.append(result.text())
    assert all(NO_CLAIM.match(text) for text in texts)
    assert any("within noise" in text for text in texts)


def test_a_real_3x_speedup_is_claimed_even_on_the_loaded_machine() -> None:
    claimed = 0
    truth = {"original": 30.0, "original_b": 30.0, "candidate": 10.0}
    for seed in range(20):
        machine = LoadedMachine(seed)
        result = confirm(lambda r, order, m=machine: {side: m.measure(truth[side]) for side in order}, RoundPolicy())
        claimed += result.claimed
        if result.claimed:
            assert result.low > 1 + result.noise_floor and CLAIM.match(result.text())
    assert claimed == 20


def test_a_round_that_cannot_be_timed_claims_nothing_and_says_why() -> None:
    def time_round(r: int, order: tuple[str, ...]) -> dict[str, float]:
        if r == 2:
            raise ConfirmationError("round 3, timing the candidate: worker killed (memory limit)")
        return {"original": 2.0, "original_b": 2.0, "candidate": 1.0}

    result = confirm(time_round)
    assert not result.claimed and result.stopped == "failed" and result.rounds == 2
    assert result.text() == "not confirmed: round 3, timing the candidate: worker killed (memory limit)"


def test_a_verdicts_timing_shows_an_interval_not_a_single_figure() -> None:
    faster = summarize([[2.0, 2.02, 1.98]] * 5 + [[2.04, 2.0, 2.01]] * 5, [[1.0, 1.01, 0.99]] * 10)
    assert faster.faster and re.match(r"^2\.\d\d× \(95% CI \d\.\d\d–\d\.\d\d×, noise floor \d", faster.summary())
    same = summarize([[1.0 + 0.01 * (r % 3)] * 3 for r in range(10)], [[1.0 + 0.01 * ((r + 1) % 3)] * 3 for r in range(10)])
    assert not same.faster and same.interval_text().startswith("no faster (")
    slower = summarize([[1.0, 1.0]] * 10, [[2.0, 2.02]] * 5 + [[2.01, 1.99]] * 5)
    assert slower.slower and slower.interval_text().startswith("slower: 0.50× (95% CI")


# -- the same kernel for the timing ------------------------------------------------------------


def _variants(source: str) -> dict[str, str]:
    launch = "add_kernel[grid](x, y, out, n, BLOCK_SIZE=16)"
    load = "x = tl.load(x_ptr + offsets, mask=mask)"
    return {
        "num_warps": source.replace(launch, launch[:-1] + ", num_warps=2)"),
        "num_stages and num_ctas": source.replace(launch, launch[:-1] + ", num_stages=3, num_ctas=1)"),
        "eviction": source.replace(load, load[:-1] + ', eviction_policy="evict_first")'),
        "cache modifier and volatile": source.replace(load, load[:-1] + ', cache_modifier=".cg", volatile=True)'),
        "vector hints": source.replace("    mask = offsets < n_elements\n",
                                       "    offsets = tl.max_contiguous(tl.multiple_of(offsets, BLOCK_SIZE), BLOCK_SIZE)\n"
                                       "    mask = offsets < n_elements\n"),
        "inline hint": source.replace(load, "x = tl.load(tl.multiple_of(x_ptr + offsets, 16), mask=mask)"),
        "constancy": source.replace(load, "x = tl.load(x_ptr + tl.max_constancy(offsets, 1), mask=mask)"),
        "hint on an expression": source.replace("offsets = pid * BLOCK_SIZE", "offsets = tl.multiple_of(pid * BLOCK_SIZE, 16)"),
        "comment and rename": source.replace(load, "x_val = tl.load(x_ptr + offsets, mask=mask)  # x").replace(
            "tl.store(out_ptr + offsets, x + y", "tl.store(out_ptr + offsets, x_val + y"),
    }


def test_hint_only_changes_are_the_same_kernel_under_the_interpreter_not_on_a_gpu() -> None:
    source = SLOW_ADD.read_text()
    for name, variant in _variants(source).items():
        assert variant != source, name
        assert equivalence_key(variant, "interpreter") == equivalence_key(source, "interpreter"), name
        if name != "comment and rename":  # on a GPU every hint can change the binary
            assert equivalence_key(variant, "gpu") != equivalence_key(source, "gpu"), name
    assert equivalence_key(_variants(source)["comment and rename"], "gpu") == equivalence_key(source, "gpu")


def test_under_the_predicted_objective_compile_options_count_and_cache_hints_do_not() -> None:
    """The predicted time reads warps and stages (through the compile); it has no term for cache
    and eviction hints or vectorisation hints, so those are the same kernel there."""
    source = SLOW_ADD.read_text()
    variants = _variants(source)
    for name in ("num_warps", "num_stages and num_ctas"):
        assert equivalence_key(variants[name], "predicted") != equivalence_key(source, "predicted"), name
    for name in ("eviction", "cache modifier and volatile", "vector hints", "inline hint", "comment and rename"):
        assert equivalence_key(variants[name], "predicted") == equivalence_key(source, "predicted"), name


def test_a_patch_carries_only_what_the_measure_saw() -> None:
    """A candidate that widened the block and also picked up hints: the patch keeps the block
    (and, where the predicted time reads it, num_warps on the same line) and drops the hints."""
    source = SLOW_ADD.read_text()
    variants = _variants(source)
    candidate = variants["vector hints"].replace("x = tl.load(x_ptr + offsets, mask=mask)",
                                                 "x = tl.load(x_ptr + offsets, mask=mask, eviction_policy='evict_first')")
    candidate = candidate.replace("BLOCK_SIZE=16)", "BLOCK_SIZE=64)")
    for measure in ("interpreter", "predicted"):
        patched = without_unmeasured(source, candidate, measure)
        assert patched == source.replace("BLOCK_SIZE=16)", "BLOCK_SIZE=64)"), measure
    assert without_unmeasured(source, candidate, "gpu") == candidate  # on a GPU every hint can matter
    commented = source.replace("    mask = offsets < n_elements\n", "    mask = offsets < n_elements  # the tail\n")
    assert without_unmeasured(source, commented, "gpu") == source


def test_a_hint_on_the_same_line_as_a_measured_change_is_trimmed_token_by_token() -> None:
    """`BLOCK_SIZE=64, num_warps=8` on one line: the interpreter never sees the warps, so its
    patch raises the block alone; the predicted time reads the warps, so its patch keeps both."""
    source = SLOW_ADD.read_text()
    assert source.count("BLOCK_SIZE=16)") == 1
    candidate = source.replace("BLOCK_SIZE=16)", "BLOCK_SIZE=64, num_warps=8)")
    assert without_unmeasured(source, candidate, "interpreter") == source.replace("BLOCK_SIZE=16)", "BLOCK_SIZE=64)")
    assert without_unmeasured(source, candidate, "predicted") == candidate
    hinted = candidate.replace("x = tl.load(x_ptr + offsets, mask=mask)",
                               "x = tl.load(x_ptr + offsets, mask=mask, cache_modifier='.cg')")
    assert without_unmeasured(source, hinted, "predicted") == candidate  # the hint goes, the warps stay


def test_changes_that_can_change_the_time_are_not_the_same_kernel() -> None:
    source = SLOW_ADD.read_text()
    for variant in (source.replace("BLOCK_SIZE=16", "BLOCK_SIZE=32"),  # fewer programs
                    source.replace("tl.store(out_ptr + offsets, x + y", "tl.store(out_ptr + offsets, x + y + 0.0"),
                    source.replace("    mask = offsets < n_elements\n", "    o2 = tl.multiple_of(offsets, 16)\n"
                                   "    mask = offsets < n_elements\n"),  # a new name: kept apart (conservative)
                    source.replace("N_ELEMENTS = 50_331_651", "N_ELEMENTS = 50_331_652")):
        assert variant != source
        assert equivalence_key(variant, "interpreter") != equivalence_key(source, "interpreter")


AUTOTUNED = '''import triton
import triton.language as tl


@triton.autotune(configs=[
    triton.Config({"BLOCK": 64}, num_warps=4),
    triton.Config({"BLOCK": 128}, num_warps=4),
    triton.Config({"BLOCK": 256}, num_warps=8),
], key=["n"]{prune})
@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
'''


def test_configs_the_interpreter_never_runs_are_not_a_change_there() -> None:
    # Under the interpreter the autotuner keeps its first Config (evaluator/cuda_shim.py).
    source = AUTOTUNED.replace("{prune}", "")
    for variant in (source.replace('"BLOCK": 128', '"BLOCK": 512'),  # another Config moved
                    source.replace('    triton.Config({"BLOCK": 256}, num_warps=8),\n', ""),  # one dropped
                    source.replace("], key=", '    triton.Config({"BLOCK": 32}),\n], key=')):  # one added
        assert variant != source
        assert equivalence_key(variant, "interpreter") == equivalence_key(source, "interpreter")
        assert equivalence_key(variant, "gpu") != equivalence_key(source, "gpu")
    # The first Config runs; with pruning, which one runs first is not known: every Config counts.
    assert equivalence_key(source.replace('"BLOCK": 64', '"BLOCK": 32'), "interpreter") != \
        equivalence_key(source, "interpreter")
    pruned = AUTOTUNED.replace("{prune}", ', prune_configs_by={"early_config_prune": keep}')
    assert equivalence_key(pruned.replace('"BLOCK": 128', '"BLOCK": 512'), "interpreter") != \
        equivalence_key(pruned, "interpreter")


# -- the no-op search --------------------------------------------------------------------------


def test_ten_seeded_offline_searches_whose_moves_are_only_hints_report_no_improvement(tmp_path: Path) -> None:
    """The offline proposer on a kernel whose block size is fixed inside it finds only hints
    (num_warps, eviction policies, max_contiguous/multiple_of: the patch of the bug). On the
    loaded machine re-timing any of them could look 2× faster; none is re-timed, none wins."""
    source = HINTS_ONLY.read_text()
    for seed in range(10):
        folder = tmp_path / f"seed{seed}"
        folder.mkdir()
        evaluator = LoadedEvaluator(seed)
        search = Search(_task(folder, source), OfflineProposer(random.Random(seed)), evaluator, Journal(folder),
                        SearchOptions(steps=8, seed=seed))
        result = search.run()
        assert not result.improved and result.diff == "" and result.speedup is None, seed
        assert NO_CLAIM.match(result.outcome_text()), (seed, result.outcome_text())
        assert evaluator.evaluated == [source], "a hint-only candidate was re-timed"
        proposed = [n for n in result.tree.evaluated() if n.kind is not StepKind.ROOT and n.source]
        assert proposed and all(n.evaluation is not None and n.evaluation.same_as == 0 for n in proposed)
        assert result.set_aside == len(proposed) and result.leaders() == [result.tree.nodes[0]]


class NeutralProposer:
    """Changes that the normalised form keeps apart but that cannot change the time: a
    module-level constant nothing reads, appended to the file."""

    name = "neutral"
    cost_usd = 0.0

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.count = 0

    def _rewrite(self, base: str) -> str:
        self.count += 1
        if self.count > 12:
            raise ProposalError("nothing left")
        return base + f"\n_VARIANT_{self.count} = {self.rng.randrange(1000)}\n"

    def refine(self, context: StepContext) -> tuple[str, list[Edit]]:
        base = context.chain[-1][0]
        result = self._rewrite(base)
        return result, [Edit(base, result)]

    def regenerate(self, context: StepContext) -> str:
        return self._rewrite(context.task.source)


def test_ten_seeded_searches_of_time_neutral_changes_on_a_loaded_machine_report_no_improvement(
        tmp_path: Path) -> None:
    """Candidates that are re-timed (not hints: the file differs) but run exactly as fast: in
    screening some look up to 2× faster; the confirmation of the fastest says no every time."""
    source = HINTS_ONLY.read_text()
    screened_faster, screenings = 0, []
    for seed in range(10):
        folder = tmp_path / f"seed{seed}"
        folder.mkdir()
        evaluator = LoadedEvaluator(seed)
        result = Search(_task(folder, source), NeutralProposer(seed), evaluator, Journal(folder),
                        SearchOptions(steps=8, seed=seed)).run()
        assert not result.improved and result.diff == "", (seed, result.confirmations)
        assert NO_CLAIM.match(result.outcome_text()), (seed, result.outcome_text())
        screening = result.screening_speedup or 0.0
        screenings.append(screening)
        if screening > 1.0:
            screened_faster += 1
            assert result.confirmations and not any(c.claimed for _, c in result.confirmations)
            assert result.confirmation is not None and "CI" in result.outcome_text()
    # The loaded machine did make no-ops look faster in screening, as in the bug (up to ~2×).
    assert screened_faster >= 5 and max(screenings) > 1.5, screenings


def test_a_real_improvement_among_no_ops_is_the_one_claimed(tmp_path: Path) -> None:
    """Positive control on the same loaded machine: one candidate is truly 3× faster."""
    source = HINTS_ONLY.read_text()

    class OneReal(NeutralProposer):
        def _rewrite(self, base: str) -> str:
            text = super()._rewrite(base)
            return text + "FAST = 1\n" if self.count == 4 else text

    for seed in range(5):
        folder = tmp_path / f"seed{seed}"
        folder.mkdir()
        evaluator = LoadedEvaluator(seed, kernel_ms=lambda s: 10.0 / 3 if "FAST = 1" in s else 10.0)
        result = Search(_task(folder, source), OneReal(seed), evaluator, Journal(folder),
                        SearchOptions(steps=8, seed=seed, confirmations=8)).run()
        assert result.improved and result.best is not None and "FAST = 1" in result.best.source, seed
        assert CLAIM.match(result.outcome_text()) and result.confirmation is not None
        assert result.confirmation.low > 1 + result.confirmation.noise_floor


def test_a_cancelled_search_claims_nothing(tmp_path: Path) -> None:
    import threading

    source = HINTS_ONLY.read_text()
    cancel = threading.Event()
    evaluator = LoadedEvaluator(0, kernel_ms=lambda s: 1.0 if "_VARIANT_" in s else 10.0)

    def stop(progress: object) -> None:
        if len(evaluator.evaluated) >= 3:
            cancel.set()

    result = Search(_task(tmp_path, source), NeutralProposer(0), evaluator, Journal(tmp_path),
                    SearchOptions(steps=8), cancel=cancel, progress=stop).run()
    assert result.stopped == "cancelled" and not result.improved and evaluator.confirmed == []
    assert "resume" in result.outcome_text()


# -- real workers ------------------------------------------------------------------------------


def _optimize(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    return subprocess.run([sys.executable, "-m", "tritonsmith", "optimize", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.compiler
def test_optimize_on_a_kernel_with_only_hints_to_change_writes_no_patch(tmp_path: Path) -> None:
    """End to end through real workers: the offline proposer's eviction hints, num_warps and
    max_contiguous are set aside as the original, nothing is confirmed, no patch is written."""
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "hints_only_add.py"
    path.write_text(HINTS_ONLY.read_text())
    run = _optimize(str(path), "--kernel", "add_kernel", "--steps", "6", "--device", "cpu", "--proposer", "offline",
                    "--out", "best.patch", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert "no improvement" in run.stderr and "set aside" in run.stderr, run.stderr
    assert not (tmp_path / "best.patch").exists()
    assert path.read_text() == HINTS_ONLY.read_text()


@pytest.mark.compiler
def test_a_confirmation_in_real_workers_does_not_claim_a_change_that_cannot_matter(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    from tritonsmith.evaluator.confirm import confirm_speedup
    from tritonsmith.evaluator.specs import detect_specs

    path = tmp_path / "slow_add.py"
    source = SLOW_ADD.read_text()
    path.write_text(source)
    swapped = source.replace("    x = tl.load(x_ptr + offsets, mask=mask)\n    y = tl.load(y_ptr + offsets, mask=mask)\n",
                             "    y = tl.load(y_ptr + offsets, mask=mask)\n    x = tl.load(x_ptr + offsets, mask=mask)\n")
    assert swapped != source and equivalence_key(swapped, "interpreter") != equivalence_key(source, "interpreter")
    rounds: list[int] = []
    result = confirm_speedup(detect_specs(path)[0], source, swapped, mode="interpreter",
                             policy=RoundPolicy(min_rounds=4, max_rounds=6, runs=3),
                             progress=lambda r, state: rounds.append(r))
    assert not result.error, result.error
    assert not result.claimed and NO_CLAIM.match(result.text()), result.text()
    assert rounds == list(range(1, result.rounds + 1)) and len(result.candidate_ms) == result.rounds >= 4
    assert result.measured == "interpreter time" and 1 <= result.runs <= 3  # fewer when a call is slow (side_s)


SLOW_DOWN_THE_ORIGINAL = '''
import pathlib as _pathlib

# The attack: slow down the original's copy beside this one, so this unchanged kernel looks faster.
for _side in ("original", "original_b"):
    for _copy in (_pathlib.Path(__file__).resolve().parent.parent / _side).glob("*.py"):
        _copy.write_text(_copy.read_text().replace("    out = torch.empty_like(x)\\n",
                                                   "    __import__('time').sleep(0.05)\\n    out = torch.empty_like(x)\\n"))
'''


@pytest.mark.compiler
def test_a_candidate_that_slows_down_the_original_beside_it_is_not_claimed(tmp_path: Path) -> None:
    """The workers share one runs folder: a candidate can reach the original's copy. Every
    import checks the bytes the server wrote, and runs only those."""
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    from tritonsmith.evaluator.confirm import confirm_speedup
    from tritonsmith.evaluator.specs import detect_specs

    path = tmp_path / "slow_add.py"
    source = SLOW_ADD.read_text()
    path.write_text(source)
    result = confirm_speedup(detect_specs(path)[0], source, source + SLOW_DOWN_THE_ORIGINAL, mode="interpreter",
                             policy=RoundPolicy(min_rounds=4, max_rounds=6, runs=3))
    assert not result.claimed, result.text()
    assert "altered after it was written" in (result.error or ""), result.text()


def test_a_trimmed_candidate_always_parses() -> None:
    """Tree-sitter reads a block put back at its old depth as the same tree, so its key alone
    would let `without_unmeasured` put back the first pass's loop body, indented, after the
    single-pass rewrite removed the loop (issue 34: Accept wrote a file Python rejects). Every
    text it returns parses."""
    import ast

    from tritonsmith.search.proposers.single_pass import single_pass

    softmax = (Path(__file__).parents[2] / "examples" / "softmax.py").read_text()
    layer_norm = (Path(__file__).parents[2] / "bench" / "problems" / "layer_norm.py").read_text()
    # The single pass as the review's search found it: `start = 0`, the bodies one level out.
    loops = softmax.split("    for start in range(0, n_cols, BLOCK_SIZE):\n")
    assert len(loops) == 3
    unrolled = loops[0] + "    start = 0\n" + loops[1].replace("\n        ", "\n    ").replace("        cols", "    cols", 1)
    second = loops[2].replace("        cols = start + offsets\n", "").replace("\n        ", "\n    ").replace("        mask", "    mask", 1)
    unrolled += second.replace("BLOCK_SIZE=128", "BLOCK_SIZE=triton.next_power_of_2(n_cols)")
    ast.parse(unrolled)
    candidates = [(softmax, unrolled), (softmax, single_pass(softmax, "softmax_kernel")),
                  (layer_norm, single_pass(layer_norm, "layer_norm_kernel"))]
    for source, candidate in candidates:
        assert candidate is not None
        for measure in ("interpreter", "predicted", "gpu"):
            trimmed = without_unmeasured(source, candidate, measure)
            ast.parse(trimmed)
            assert equivalence_key(trimmed, measure) == equivalence_key(candidate, measure)
    assert without_unmeasured("x = 1\n", "x = (\n", "interpreter") == "x = (\n"  # nothing to trim from broken text
