"""The predicted GPU time of a spec's candidate, end to end: profile one forward pass
(`verify.profile_spec`: at the sizes as written without data, `hollow.py`, or with data at sizes
the interpreter can run), compile each profiled launch for the target as it ran (its constexprs,
`num_warps` and `num_stages`, at the profiled sizes: a `next_power_of_2(n)` block is the real
one), and apply the model (`predict.py`).

Nothing here imports torch or triton.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from .pool import WorkerPool
from .predict import Prediction, keyed_resources, launches_to_compile, predict
from .reports import compile_file
from .verify import Spec, profile_spec

__all__ = ["PredictedTime", "predict_spec"]


@dataclass
class PredictedTime:
    """A predicted time, or why there is none, and the sizes it is for."""

    prediction: Prediction | None
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    error: str | None = None
    # Kernel -> its first launch's compile at the profiled sizes ({"target", "constexprs",
    # "resources"}): what the code lens shows when those sizes are the ones written.
    compiled: dict[str, dict[str, Any]] = field(default_factory=dict)
    # How the counts were taken: "without data" (a hollow pass at the sizes as written,
    # hollow.py) or "with data" (real inputs, at the sizes named).
    profiled: str | None = None

    @property
    def seconds(self) -> float | None:
        return self.prediction.seconds if self.prediction is not None else None

    def sizes_text(self) -> str:
        if all(written == used for written, used in self.sizes.values()):
            return "as written"
        return ", ".join(f"{name}={used}" if written == used else f"{name}={used} (of {written})"
                         for name, (written, used) in self.sizes.items())

    def summary(self) -> str:
        """"predicted H100 SXM time 41.2 µs at sizes as written", or why none."""
        if self.prediction is None:
            return f"no predicted time: {self.error}"
        return f"{self.prediction.label()} at sizes {self.sizes_text()}"

    def to_json(self) -> dict[str, Any]:
        return {"prediction": self.prediction.to_json() if self.prediction is not None else None,
                "sizes": {k: list(v) for k, v in self.sizes.items()}, "error": self.error,
                "summary": self.summary(), "compiled": self.compiled, "profiled": self.profiled}


def predict_spec(spec: Spec, source: str, *, path: str, target: str, pools: tuple[WorkerPool, WorkerPool],
                 compile_pool: WorkerPool, cancel: threading.Event | None = None) -> PredictedTime:
    """The predicted `target` time of `source` (the candidate file's text) on `spec`'s inputs.

    `pools` run the interpreter (reference side, candidate side); `compile_pool` compiles."""
    profile, sizes, error = profile_spec(spec, pools=pools, candidate_source=source, cancel=cancel)
    if profile is None:
        return PredictedTime(None, sizes, error)
    wanted = launches_to_compile(profile)
    reports = compile_file(compile_pool, source, path=path, targets=[target], kernels=list(wanted),
                           profiled=wanted, cancel_event=cancel) if wanted else []
    resources = keyed_resources(entry for report in reports for entry in report.results)
    failed = sorted({str(e.get("launch_key")) for r in reports for e in r.results if not e.get("ok")})
    prediction = predict(profile, resources, target, failed=failed)
    if profile.get("uncovered"):
        prediction.notes.append(str(profile["uncovered"]))
    if profile.get("hollow_failed"):
        prediction.notes.append(f"profiled with data at the sizes named: the pass without data at the sizes as "
                                f"written could not follow the forward pass ({profile['hollow_failed']})")
    if failed:  # the keys name the Config; the compiler's own message (paths and all) stays in the compile report
        prediction.notes.append(f"did not compile for {target} as launched: {', '.join(failed)}")
    compiled = {report.kernel: {"target": entry.get("target"), "constexprs": dict(entry.get("constexprs") or {}),
                                "resources": dict(entry.get("resources") or {})}
                for report in reports for entry in report.results[:1] if entry.get("ok")}
    return PredictedTime(prediction, sizes, compiled=compiled,
                         profiled="without data" if profile.get("hollow") else "with data")
