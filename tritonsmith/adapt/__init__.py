"""Learning from failures: offline and model-written rule induction over the failure log,
graduation of learned rules into typed matchers, their self-correction, and the self-improvement
loop. What it learns from and writes to lives in the state package (`tritonsmith/state`)."""

from __future__ import annotations

from .induce import Learned, Thresholds, generality_filter, induce

__all__ = ["Learned", "Thresholds", "generality_filter", "induce"]
