"""Timing statistics (pure Python: the server and the command line import this).

Two measurements use this module.

**A verdict's timing** (`summarize`): on a GPU, the reference and the candidate timed in the same
run of alternating rounds. The speedup is the reference's trimmed mean over the candidate's (as
KernelBench and AdaExplore compute it); beside it, a 95% confidence interval from the per-round
ratios of medians, and a noise floor from the spread of the reference's own rounds (one
standard deviation of its per-round medians, as a fraction): how far the same code moves from
round to round. A drift in clocks or a noisy neighbour during one round shows there instead of
hiding in the mean.

**A confirmation** (`confirm`): before any speedup of a search is claimed, the candidate and
the original are re-timed in alternating rounds in fresh workers (evaluator/confirm.py runs the
rounds). Each round times three sides, in an order that rotates through all six permutations:
the original (A), the candidate (C) and the original again in a worker of its own (B). Per round,
the log of the ratio of medians `log(sqrt(A·B) / C)` is one observation of the speedup and
`log(A / B)` one observation of an A/A comparison, which no real change can move. Then:

- the speedup is `exp(mean)` of the per-round log ratios, and its interval the t-interval on
  them (95%, Student's t with rounds − 1 degrees of freedom);
- the **noise floor** is the A/A comparison's apparent speedup plus one standard error,
  `exp(|mean| + sd / sqrt(rounds)) − 1` of the per-round `log(A / B)`: how much faster than
  itself the same kernel measures in this scheme, on this machine, right now (a worker that
  landed on a busier core, a load that drifts). The speedup's interval already accounts for
  round-to-round noise; the floor adds what two workers running the *same* code disagree by,
  which no interval on the candidate's own rounds can see;
- rounds go on until the speedup's interval is tight (half-width at most `target` in log terms),
  until the candidate is clearly no faster (the interval lies wholly below `1 + noise floor`, or,
  once every order has run (six rounds), the estimate itself is within the floor), or until the
  round budget (a number of rounds, and a time) runs out;
- a speedup is **claimed** only when the interval's lower bound clears `1 + noise floor`. For a
  change that cannot matter, that needs the mean of the per-round log ratios more than a
  t-quantile of standard errors above zero *and* above the A/A difference: a false claim is
  rarer than the interval's 2.5% one-sided error.

Nothing here imports torch or triton, and nothing here starts a worker: `confirm` takes the
function that times one round, so tests can drive it with made-up timings.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CONFIDENCE",
    "ORDERS",
    "SANITY_SPEEDUP",
    "SIDES",
    "Confirmation",
    "ConfirmationError",
    "RoundPolicy",
    "Timing",
    "confirm",
    "evaluate_rounds",
    "interval_tight",
    "log_interval",
    "noise_floor",
    "percent",
    "student_t",
    "summarize",
    "trimmed_mean",
]

TRIM = 0.1
SANITY_SPEEDUP = 10.0
"""Above this, a speedup is flagged for review (verification.md, section 5)."""
CONFIDENCE = 0.95

# Two-sided 97.5% quantiles of Student's t by degrees of freedom (the usual table).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)
_Z975 = 1.959964


def student_t(df: int) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom (a 95% two-sided
    interval); beyond the table, the normal quantile with the first Cornish-Fisher term."""
    if df < 1:
        return math.inf
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return z + (z**3 + z) / (4 * df)


def trimmed_mean(values: Sequence[float], trim: float = TRIM) -> float:
    """The mean without the lowest and highest `trim` fraction of `values`."""
    ordered = sorted(values)
    cut = int(len(ordered) * trim)
    kept = ordered[cut:len(ordered) - cut] or ordered
    return statistics.fmean(kept)


def log_interval(logs: Sequence[float]) -> tuple[float, float, float]:
    """(mean, low, high) of the 95% t-interval on `logs` (unbounded with fewer than two)."""
    if not logs:
        return 0.0, -math.inf, math.inf
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return mean, -math.inf, math.inf
    half = student_t(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return mean, mean - half, mean + half


def noise_floor(aa_logs: Sequence[float]) -> float:
    """How much faster than itself the same kernel measures: `exp(|mean| + sd / sqrt(n)) - 1`
    of the A/A comparison's per-round log ratios (a fraction; inf with fewer than two rounds)."""
    if len(aa_logs) < 2:
        return math.inf
    return math.expm1(abs(statistics.fmean(aa_logs)) + statistics.stdev(aa_logs) / math.sqrt(len(aa_logs)))


def percent(fraction: float) -> str:
    """"3%", "0.4%", "12%": a noise floor as the text shows it."""
    if math.isinf(fraction):
        return "unknown"
    value = 100 * fraction
    return f"{value:.0f}%" if value >= 0.95 else f"{value:.1f}%"


def _ratio(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value:.2f}"


# -- a verdict's timing ----------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Reference and candidate timed in the same run (milliseconds per call)."""

    runs: int
    rounds: int
    reference_mean: float
    reference_median: float
    candidate_mean: float
    candidate_median: float
    speedup: float  # the reference's trimmed mean over the candidate's
    speedup_low: float  # the lowest per-round ratio of medians
    speedup_high: float  # the highest
    environment: dict[str, object]
    candidate_rounds: tuple[float, ...] = ()  # the candidate's median per round
    reference_rounds: tuple[float, ...] = ()  # the reference's median per round
    estimate: float = 0.0  # the geometric mean of the per-round ratios of medians
    ci_low: float = 0.0  # its 95% interval (t-interval on the log ratios)
    ci_high: float = 0.0
    noise_floor: float = 0.0  # one standard deviation of the reference's per-round medians, as a fraction

    @property
    def flagged(self) -> bool:
        return self.speedup > SANITY_SPEEDUP

    @property
    def faster(self) -> bool:
        """The candidate is faster: the interval's lower bound clears 1 + the noise floor."""
        return self.rounds >= 2 and self.ci_low > 1.0 + self.noise_floor

    @property
    def slower(self) -> bool:
        return self.rounds >= 2 and self.ci_high < 1.0 - self.noise_floor

    def interval_text(self) -> str:
        """"1.42× (95% CI 1.38–1.47×, noise floor 2%)", or "no faster (0.99×, CI 0.97–1.01×,
        within noise)", or "slower: 0.46× (95% CI 0.42–0.50×, noise floor 3%)"."""
        ci = f"{_ratio(self.ci_low)}–{_ratio(self.ci_high)}×"
        if self.faster:
            return f"{self.estimate:.2f}× (95% CI {ci}, noise floor {percent(self.noise_floor)})"
        if self.slower:
            return f"slower: {self.estimate:.2f}× (95% CI {ci}, noise floor {percent(self.noise_floor)})"
        return f"no faster ({self.estimate:.2f}×, CI {ci}, within noise of {percent(self.noise_floor)})"

    def summary(self) -> str:
        """"1.42× (95% CI 1.38–1.47×, noise floor 2%) vs reference over 10 alternating rounds;
        0.081 vs 0.115 ms trimmed means, 100 runs each"."""
        text = (f"{self.interval_text()} vs reference over {self.rounds} alternating rounds; "
                f"{self.candidate_mean:.4g} vs {self.reference_mean:.4g} ms trimmed means, {self.runs} runs each")
        if self.flagged:
            text += f" · flagged: above {SANITY_SPEEDUP:g}×, review before trusting it"
        return text


def summarize(reference: Sequence[Sequence[float]], candidate: Sequence[Sequence[float]],
              environment: dict[str, object] | None = None) -> Timing:
    """Per-round event times of both sides -> a `Timing`."""
    flat_ref = [t for r in reference for t in r]
    flat_cand = [t for r in candidate for t in r]
    pairs = [(statistics.median(r), statistics.median(c)) for r, c in zip(reference, candidate, strict=True) if r and c]
    ratios = [r / max(c, 1e-9) for r, c in pairs]
    logs = [math.log(max(ratio, 1e-12)) for ratio in ratios]
    mean, low, high = log_interval(logs)
    ref_logs = [math.log(max(r, 1e-12)) for r, _ in pairs]
    floor = math.expm1(statistics.stdev(ref_logs)) if len(ref_logs) >= 2 else 0.0
    if len(logs) < 2:  # no interval from one round: its range (`faster` needs two rounds anyway)
        low, high = math.log(max(min(ratios, default=1.0), 1e-12)), math.log(max(max(ratios, default=1.0), 1e-12))
    ref_mean, cand_mean = trimmed_mean(flat_ref), trimmed_mean(flat_cand)
    return Timing(
        runs=min(len(flat_ref), len(flat_cand)), rounds=len(ratios),
        reference_mean=ref_mean, reference_median=statistics.median(flat_ref),
        candidate_mean=cand_mean, candidate_median=statistics.median(flat_cand),
        speedup=ref_mean / max(cand_mean, 1e-9),
        speedup_low=min(ratios, default=0.0), speedup_high=max(ratios, default=0.0),
        environment=dict(environment or {}),
        candidate_rounds=tuple(statistics.median(c) for c in candidate if c),
        reference_rounds=tuple(r for r, _ in pairs),
        estimate=math.exp(mean) if ratios else 0.0,
        ci_low=math.exp(low), ci_high=math.exp(high), noise_floor=floor,
    )


def interval_tight(reference: Sequence[Sequence[float]], candidate: Sequence[Sequence[float]],
                   target: float = 0.02) -> bool:
    """Whether the 95% interval of the per-round ratios of medians is within ±`target` (in log
    terms): a verdict's timing goes on past its minimum rounds until it is (verify.py)."""
    logs = [math.log(max(statistics.median(r), 1e-12) / max(statistics.median(c), 1e-12))
            for r, c in zip(reference, candidate) if r and c]
    _, low, high = log_interval(logs)
    return 0.5 * (high - low) <= math.log1p(target)


# -- a confirmation --------------------------------------------------------------------------

PREDICTION_UNCERTAINTY = "a model's estimate, not yet calibrated against a GPU"
"""What is known of a predicted speedup's error: nothing measured yet (no GPU has timed the
suite's variants; docs/benchmarks.md, "Predicted sm_90 time")."""

SIDES = ("original", "candidate", "original_b")
"""The sides of a confirmation round: the original, the candidate, the original again."""

ORDERS: tuple[tuple[str, ...], ...] = (
    ("original", "candidate", "original_b"),
    ("candidate", "original_b", "original"),
    ("original_b", "original", "candidate"),
    ("original_b", "candidate", "original"),
    ("candidate", "original", "original_b"),
    ("original", "original_b", "candidate"),
)
"""The order of the sides, round after round: every side takes every position twice in six
rounds, so a machine that slows down (or speeds up) within a round favours no side."""


class ConfirmationError(Exception):
    """A round could not be timed (a worker failed, a job timed out); the message says why."""


@dataclass(frozen=True)
class RoundPolicy:
    """How long a confirmation goes on."""

    min_rounds: int = 4
    max_rounds: int = 12
    target: float = 0.05
    """The interval is tight when its half-width, in log terms, is at most log(1 + target)."""
    runs: int = 3
    """Timed calls per side and round, at most; a round's figure is their median."""
    side_s: float = 0.5
    """About this long per side and round: a kernel slower than `side_s / runs` per call gets
    fewer calls per round (down to one), so a slow kernel's rounds stay short."""
    budget_s: float | None = None
    """Past `min_rounds`, no new round starts once this much time has gone (None: no limit)."""

    def __post_init__(self) -> None:
        if self.min_rounds < 2 or self.max_rounds < self.min_rounds:
            raise ValueError("a confirmation needs min_rounds >= 2 and max_rounds >= min_rounds")
        if self.target <= 0 or self.runs < 1:
            raise ValueError("target must be positive and runs at least 1")

    def runs_for(self, call_ms: float) -> int:
        """Timed calls per side and round for a kernel that takes `call_ms` per call."""
        if call_ms <= 0 or not math.isfinite(call_ms):
            return self.runs
        return max(1, min(self.runs, int(1000.0 * self.side_s / call_ms)))


@dataclass(frozen=True)
class Confirmation:
    """The candidate and the original re-timed against each other (see the module docstring).

    `claimed` is the only thing that makes a speedup a claim."""

    speedup: float  # exp(mean per-round log ratio): original over candidate
    low: float  # its 95% interval
    high: float
    noise_floor: float  # a fraction: 0.03 is 3%
    rounds: int
    claimed: bool
    stopped: str  # "tight" | "budget" | "futile" | "cancelled" | "failed"
    measured: str = "interpreter time"  # or "GPU time"
    original_ms: tuple[float, ...] = ()  # per-round medians, in round order
    original_b_ms: tuple[float, ...] = ()
    candidate_ms: tuple[float, ...] = ()
    orders: tuple[tuple[str, ...], ...] = ()
    seconds: float = 0.0
    error: str = ""
    runs: int = 0
    confidence: float = CONFIDENCE
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def within_noise(self) -> bool:
        return not self.claimed and self.low <= 1.0 + self.noise_floor

    @property
    def predicted(self) -> bool:
        """A ratio of predicted times (confirm.confirm_predicted): a model's estimate, no interval."""
        return self.measured.startswith("predicted")

    def interval(self) -> str:
        """"95% CI 1.21–1.44×", or for a predicted ratio what its uncertainty is known to be.
        Neither names what was measured: the caller says that once ("… faster (GPU time)")."""
        if self.predicted:
            return PREDICTION_UNCERTAINTY
        return f"95% CI {_ratio(self.low)}–{_ratio(self.high)}×"

    def text(self) -> str:
        """"1.32× (95% CI 1.21–1.44×, noise floor 3%)", or "no improvement (best 1.04×, CI
        0.97–1.10×, within noise)" — never a single figure."""
        if self.error:
            return f"not confirmed: {self.error}"
        if self.predicted:
            if self.claimed:
                return f"{self.speedup:.2f}× ({self.interval()})"
            return f"no improvement (best {self.speedup:.2f}×, not above the {percent(self.noise_floor)} margin)"
        if self.claimed:
            return f"{self.speedup:.2f}× ({self.interval()}, noise floor {percent(self.noise_floor)})"
        why = "within noise" if self.within_noise else "not confirmed"
        if self.stopped == "cancelled":
            why = "confirmation cancelled"
        return (f"no improvement (best {self.speedup:.2f}×, CI {_ratio(self.low)}–{_ratio(self.high)}×, "
                f"{why}; noise floor {percent(self.noise_floor)})")

    def how(self) -> str:
        """"8 alternating rounds in fresh workers (3 timed calls per side and round, 21 s), interpreter time"."""
        if self.predicted:
            return f"both predicted again in fresh workers ({self.seconds:.0f} s), {self.measured}"
        return (f"{self.rounds} alternating rounds in fresh workers ({self.runs} timed calls per side and round, "
                f"{self.seconds:.0f} s), {self.measured}")

    def to_json(self) -> dict[str, Any]:
        return {
            "speedup": _finite(self.speedup), "low": _finite(self.low), "high": _finite(self.high),
            "confidence": self.confidence, "noiseFloor": _finite(self.noise_floor), "rounds": self.rounds,
            "runs": self.runs, "claimed": self.claimed, "stopped": self.stopped, "measured": self.measured,
            "text": self.text(), "error": self.error or None, "seconds": round(self.seconds, 3),
            "originalMs": list(self.original_ms), "originalBMs": list(self.original_b_ms),
            "candidateMs": list(self.candidate_ms), "orders": [list(o) for o in self.orders],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Confirmation:
        def number(key: str, default: float = math.nan) -> float:
            value = data.get(key)
            return float(value) if isinstance(value, (int, float)) else default

        return cls(
            speedup=number("speedup"), low=number("low"), high=number("high"),
            noise_floor=number("noiseFloor", math.inf), rounds=int(data.get("rounds") or 0),
            claimed=bool(data.get("claimed")), stopped=str(data.get("stopped") or ""),
            measured=str(data.get("measured") or "interpreter time"),
            original_ms=tuple(float(v) for v in data.get("originalMs") or ()),
            original_b_ms=tuple(float(v) for v in data.get("originalBMs") or ()),
            candidate_ms=tuple(float(v) for v in data.get("candidateMs") or ()),
            orders=tuple(tuple(str(s) for s in o) for o in data.get("orders") or ()),
            seconds=number("seconds", 0.0), error=str(data.get("error") or ""), runs=int(data.get("runs") or 0),
            confidence=number("confidence", CONFIDENCE),
        )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def evaluate_rounds(original: Sequence[float], original_b: Sequence[float], candidate: Sequence[float]
                    ) -> tuple[float, float, float, float]:
    """(speedup, low, high, noise floor) from per-round medians of the three sides."""
    speed_logs = [0.5 * (math.log(a) + math.log(b)) - math.log(c) for a, b, c in zip(original, original_b, candidate)]
    aa_logs = [math.log(a) - math.log(b) for a, b in zip(original, original_b)]
    mean, low, high = log_interval(speed_logs)
    return math.exp(mean), math.exp(low), math.exp(high), noise_floor(aa_logs)


RoundTimer = Callable[[int, tuple[str, ...]], Mapping[str, float]]
"""Times one round: (round index, order of the sides) -> each side's median ms."""


def confirm(time_round: RoundTimer, policy: RoundPolicy | None = None, *, measured: str = "interpreter time",
            cancel: threading.Event | None = None,
            progress: Callable[[int, Confirmation], None] | None = None) -> Confirmation:
    """Run confirmation rounds until the interval is tight, hopeless, or the budget is spent.

    `time_round` raises `ConfirmationError` when a round cannot be timed: the confirmation then
    ends unclaimed with that error. `progress` is called after each round with the state so far.
    """
    policy = policy or RoundPolicy()
    began = time.perf_counter()
    sides: dict[str, list[float]] = {side: [] for side in SIDES}
    orders: list[tuple[str, ...]] = []
    stopped, error = "budget", ""
    speedup, low, high, floor = math.nan, -math.inf, math.inf, math.inf

    def state(claimed: bool = False) -> Confirmation:
        return Confirmation(
            speedup=speedup, low=low, high=high, noise_floor=floor, rounds=len(orders), claimed=claimed,
            stopped=stopped, measured=measured, original_ms=tuple(sides["original"]),
            original_b_ms=tuple(sides["original_b"]), candidate_ms=tuple(sides["candidate"]), orders=tuple(orders),
            seconds=time.perf_counter() - began, error=error, runs=policy.runs)

    for r in range(policy.max_rounds):
        if cancel is not None and cancel.is_set():
            stopped = "cancelled"
            break
        if (policy.budget_s is not None and len(orders) >= policy.min_rounds
                and time.perf_counter() - began > policy.budget_s):
            break  # "budget": out of time
        order = ORDERS[r % len(ORDERS)]
        try:
            medians = time_round(r, order)
            values = {side: float(medians[side]) for side in SIDES}
        except ConfirmationError as failure:
            stopped, error = "failed", str(failure)
            break
        except (KeyError, TypeError, ValueError) as failure:
            stopped, error = "failed", f"round {r + 1} gave no time for {failure}"
            break
        if any(not math.isfinite(v) or v <= 0 for v in values.values()):
            stopped, error = "failed", f"round {r + 1} gave a time that is not a positive number: {values}"
            break
        for side in SIDES:
            sides[side].append(values[side])
        orders.append(order)
        speedup, low, high, floor = evaluate_rounds(sides["original"], sides["original_b"], sides["candidate"])
        if progress is not None:
            progress(r + 1, state())
        if len(orders) < policy.min_rounds:
            continue
        if 0.5 * (math.log(high) - math.log(low)) <= math.log1p(policy.target):
            stopped = "tight"
            break
        if high < 1.0 + floor or (len(orders) >= len(ORDERS) and speedup <= 1.0 + floor):
            stopped = "futile"
            break
    claimed = (stopped in ("tight", "budget", "futile") and len(orders) >= policy.min_rounds
               and low > 1.0 + floor)
    return state(claimed)
