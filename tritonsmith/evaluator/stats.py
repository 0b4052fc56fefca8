"""Timing statistics (pure Python: the server and the command line import this).

A speedup is the reference's trimmed mean over the candidate's, both from the same run of
alternating rounds on the same GPU; its spread is the range of the per-round ratios of medians,
so a drift in clocks or a noisy neighbour during one round shows instead of hiding in the mean.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["SANITY_SPEEDUP", "Timing", "summarize", "trimmed_mean"]

TRIM = 0.1
SANITY_SPEEDUP = 10.0
"""Above this, a speedup is flagged for review (verification.md, section 5)."""


def trimmed_mean(values: Sequence[float], trim: float = TRIM) -> float:
    """The mean without the lowest and highest `trim` fraction of `values`."""
    ordered = sorted(values)
    cut = int(len(ordered) * trim)
    kept = ordered[cut:len(ordered) - cut] or ordered
    return statistics.fmean(kept)


@dataclass(frozen=True)
class Timing:
    """Reference and candidate timed in the same run (milliseconds per call)."""

    runs: int
    rounds: int
    reference_mean: float
    reference_median: float
    candidate_mean: float
    candidate_median: float
    speedup: float
    speedup_low: float
    speedup_high: float
    environment: dict[str, object]
    candidate_rounds: tuple[float, ...] = ()  # the candidate's median per round

    @property
    def flagged(self) -> bool:
        return self.speedup > SANITY_SPEEDUP

    def summary(self) -> str:
        """"1.42× vs reference (1.38–1.47× over 10 rounds; 0.081 vs 0.115 ms, 100 runs each)"."""
        text = (f"{self.speedup:.2f}× vs reference ({self.speedup_low:.2f}–{self.speedup_high:.2f}× over "
                f"{self.rounds} rounds; {self.candidate_mean:.4g} vs {self.reference_mean:.4g} ms, "
                f"{self.runs} runs each)")
        if self.flagged:
            text += f" · flagged: above {SANITY_SPEEDUP:g}×, review before trusting it"
        return text


def summarize(reference: Sequence[Sequence[float]], candidate: Sequence[Sequence[float]],
              environment: dict[str, object] | None = None) -> Timing:
    """Per-round event times of both sides -> a `Timing`."""
    flat_ref = [t for r in reference for t in r]
    flat_cand = [t for r in candidate for t in r]
    ratios = [statistics.median(r) / max(statistics.median(c), 1e-9)
              for r, c in zip(reference, candidate, strict=True) if r and c]
    ref_mean, cand_mean = trimmed_mean(flat_ref), trimmed_mean(flat_cand)
    return Timing(
        runs=min(len(flat_ref), len(flat_cand)), rounds=len(ratios),
        reference_mean=ref_mean, reference_median=statistics.median(flat_ref),
        candidate_mean=cand_mean, candidate_median=statistics.median(flat_cand),
        speedup=ref_mean / max(cand_mean, 1e-9),
        speedup_low=min(ratios, default=0.0), speedup_high=max(ratios, default=0.0),
        environment=dict(environment or {}),
        candidate_rounds=tuple(statistics.median(c) for c in candidate if c),
    )
