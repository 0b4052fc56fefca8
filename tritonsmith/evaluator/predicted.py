"""The predicted GPU time of a spec's candidate, end to end: profile one forward pass
(`verify.profile_spec`: at the sizes as written without data, `hollow.py`, or with data at sizes
the interpreter can run), compile each profiled launch for the target as it ran (its constexprs,
`num_warps` and `num_stages`, at the profiled sizes: a `next_power_of_2(n)` block is the real
one), and apply the model (`predict.py`).

Nothing here imports torch or triton.
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .pool import WorkerPool
from .predict import (
    Prediction,
    keyed_resources,
    launch_estimate,
    launch_key,
    launches_to_compile,
    predict,
)
from .reports import COMPILE_TIMEOUT_S, compile_file
from .verify import Spec, profile_spec

__all__ = ["PREDICTION_WARM_MODULES", "PredictedTime", "predict_spec"]

PREDICTION_WARM_MODULES = ("triton", "tritonsmith.evaluator.compile")
"""What a compile worker imports (and runs: `compile.warm`) before a prediction's compiles reach it."""
TRIAL_BATCH = 2
"""Configs of one autotuner compiled per round (`_compile_launches`)."""
TRIAL_COMPILE_TIMEOUT_S = 30.0
"""How long one autotuner trial's compile for the target may take in a prediction. ptxas can take
minutes on a huge tile that spills; such a Config is predicted as one that did not compile (never
the autotuner's pick) and the note says so, instead of the prediction waiting on it. A launch
that is not a trial has no other Config to stand for it: it gets the compile stage's own limit
(`reports.COMPILE_TIMEOUT_S`), as the verification's compile of it has."""


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
    # What the prediction took, wall seconds (the profile, the compiles and the model).
    elapsed_s: float | None = None

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
                "summary": self.summary(), "compiled": self.compiled, "profiled": self.profiled,
                "elapsed_s": self.elapsed_s}


def predict_spec(spec: Spec, source: str, *, path: str, target: str, pools: tuple[WorkerPool, WorkerPool],
                 compile_pool: WorkerPool, cancel: threading.Event | None = None) -> PredictedTime:
    """The predicted `target` time of `source` (the candidate file's text) on `spec`'s inputs.

    `pools` run the interpreter (reference side, candidate side); `compile_pool` compiles."""
    began = time.monotonic()
    predicted = _predict_spec(spec, source, path=path, target=target, pools=pools, compile_pool=compile_pool,
                              cancel=cancel)
    predicted.elapsed_s = round(time.monotonic() - began, 3)
    return predicted


def _predict_spec(spec: Spec, source: str, *, path: str, target: str, pools: tuple[WorkerPool, WorkerPool],
                  compile_pool: WorkerPool, cancel: threading.Event | None) -> PredictedTime:
    # The compile pool's other workers start, and compile once, while the profile runs.
    compile_pool.prestart(PREDICTION_WARM_MODULES, fill=True)
    profile, sizes, error = profile_spec(spec, pools=pools, candidate_source=source, cancel=cancel)
    if profile is None:
        return PredictedTime(None, sizes, error)
    reports = _compile_launches(profile, source, path=path, target=target, pool=compile_pool, cancel=cancel)
    resources = keyed_resources(entry for report in reports for entry in report.results)
    failed = sorted({str(e.get("launch_key")) for r in reports for e in r.results if not e.get("ok")})
    prediction = predict(profile, resources, target, failed=failed)
    if profile.get("uncovered"):
        prediction.notes.append(str(profile["uncovered"]))
    if profile.get("hollow_failed"):
        prediction.notes.append(f"profiled with data at the sizes named: the pass without data at the sizes as "
                                f"written could not follow the forward pass ({profile['hollow_failed']})")
    limits = {str(e.get("launch_key")): float(e["timed_out"]) for r in reports for e in r.results if e.get("timed_out")}
    if failed := [key for key in failed if key not in limits]:
        # the keys name the Config; the compiler's own message (paths and all) stays in the compile report
        prediction.notes.append(f"did not compile for {target} as launched: {', '.join(failed)}")
    for limit in sorted(set(limits.values())):
        prediction.notes.append(f"did not compile for {target} within {limit:g} s, predicted as a launch that did "
                                f"not compile: {', '.join(sorted(k for k, v in limits.items() if v == limit))}")
    compiled: dict[str, dict[str, Any]] = {}
    for report in reports:  # each kernel's first launch (`_compile_launches` keeps their order)
        for entry in report.results[:1]:
            if entry.get("ok") and report.kernel not in compiled:
                compiled[report.kernel] = {"target": entry.get("target"),
                                           "constexprs": dict(entry.get("constexprs") or {}),
                                           "resources": dict(entry.get("resources") or {})}
    return PredictedTime(prediction, sizes, compiled=compiled,
                         profiled="without data" if profile.get("hollow") else "with data")


def _compile_launches(profile: dict[str, Any], source: str, *, path: str, target: str, pool: WorkerPool,
                      cancel: threading.Event | None) -> list[Any]:
    """Compile the profiled launches for `target`: every launch of the pass, and of each
    autotuner's trials only those that can still win. The trials are taken in the order of their
    estimate without a compile (a lower bound, `launch_estimate`), `TRIAL_BATCH` at a time, until
    the fastest compiled one is no slower than the next bound: the autotuner's pick is the same
    as with every Config compiled, and a kernel with thirty Configs compiles a few. A trial whose
    Config differs from a compiled one only in `num_stages` takes that compile when nothing in it
    was staged (`_stage_siblings`): it is the same machine code."""
    wanted = launches_to_compile(profile)
    if not wanted:
        return []
    entries = {entry["key"]: (kernel, entry) for kernel, listed in wanted.items() for entry in listed}
    always: set[str] = set()
    trials: dict[str, list[tuple[float, str, dict[str, Any]]]] = {}
    for launch in profile.get("launches") or []:
        key = launch_key(str(launch.get("kernel")), launch.get("constexprs") or {}, launch.get("num_warps"),
                         launch.get("num_stages"))
        if tuning := launch.get("tuning"):
            trials.setdefault(str(tuning.get("group")), []).append((launch_estimate(launch, target).seconds, key, launch))
        else:
            always.add(key)
    for group in trials.values():
        group.sort(key=lambda trial: trial[0])
    family = {key: _stage_family(launch) for group in trials.values() for _, key, launch in group}
    stages = {key: launch.get("num_stages") for group in trials.values() for _, key, launch in group}
    reports: list[Any] = []
    done: set[str] = set()
    batch = set(always) | {key for group in trials.values() for key in _distinct([k for _, k, _ in group], family)}
    while batch - done and not (cancel is not None and cancel.is_set()):
        todo = sorted(batch - done)
        reports += _compile_each(todo, entries, source, path=path, target=target, pool=pool, cancel=cancel,
                                 trials={key for group in trials.values() for _, key, _ in group} - always)
        done.update(todo)
        done.update(_stage_siblings(reports, family, stages, done, target))
        resources = keyed_resources(entry for report in reports for entry in report.results)
        failed = {str(e.get("launch_key")) for r in reports for e in r.results if not e.get("ok")}
        batch = set()
        for group in trials.values():
            grounded = [launch_estimate(launch, target, resources.get(key), key in failed)
                        for _, key, launch in group if key in done]
            best = min((e.seconds for e in grounded if e.resources_known and math.isfinite(e.seconds)), default=None)
            left = [key for bound, key, _ in group if key not in done and (best is None or bound < best)]
            batch.update(_distinct(left, family))
    return reports


def _stage_family(launch: dict[str, Any]) -> tuple[str, str, Any] | None:
    """What a launch's compile is, but for `num_stages`: its kernel, constexprs and warps. None
    for a launch at one stage (no pipelining at all), which stands for no other."""
    stages = launch.get("num_stages")
    if stages is not None and int(stages) < 2:
        return None
    return (str(launch.get("kernel")), repr(sorted((launch.get("constexprs") or {}).items())), launch.get("num_warps"))


def _distinct(keys: list[str], family: dict[str, Any]) -> list[str]:
    """The first `TRIAL_BATCH` of `keys` whose stage families differ: a sibling waits for the
    first one's compile, which may stand for it."""
    chosen: list[str] = []
    seen: set[Any] = set()
    for key in keys:
        if len(chosen) == TRIAL_BATCH:
            break
        if (f := family.get(key)) is not None and f in seen:
            continue
        seen.add(f)
        chosen.append(key)
    return chosen


def _stage_siblings(reports: list[Any], family: dict[str, Any], stages: dict[str, Any], done: set[str],
                    target: str) -> set[str]:
    """Trials not compiled whose stage family has a compile with nothing staged in it
    (`compile._staged`): each gets that compile's result, under its own key, in the same report,
    marked `same_code_as`. Returns their keys."""
    unstaged: dict[Any, tuple[Any, dict[str, Any]]] = {}
    for report in reports:
        for entry in report.results:
            resources = entry.get("resources") or {}
            if entry.get("ok") and resources.get("staged") is False and family.get(str(entry.get("launch_key"))):
                unstaged.setdefault(family[str(entry["launch_key"])], (report, entry))
    shared: set[str] = set()
    for key, f in family.items():
        if key in done or f is None or f not in unstaged:
            continue
        report, entry = unstaged[f]
        report.results.append({**entry, "launch_key": key, "target": target,
                               "resources": {**entry["resources"], "num_stages": stages.get(key)},
                               "same_code_as": entry["launch_key"]})
        shared.add(key)
    return shared


def _compile_each(keys: list[str], entries: dict[str, tuple[str, dict[str, Any]]], source: str, *, path: str,
                  target: str, pool: WorkerPool, cancel: threading.Event | None, trials: set[str]) -> list[Any]:
    """One compile job per launch, as many at once as the pool has workers (a kernel's Configs
    are independent compiles), an autotuner's trial within `TRIAL_COMPILE_TIMEOUT_S`. A job that
    did not finish (timed out, its worker died) stands as a failed compile of that launch: without
    resources its time would be guessed from the thread count, optimistic. The reports keep
    `keys`' order."""
    def one(key: str) -> list[Any]:
        kernel, entry = entries[key]
        limit = TRIAL_COMPILE_TIMEOUT_S if key in trials else COMPILE_TIMEOUT_S
        reports = compile_file(pool, source, path=path, targets=[target], kernels=[kernel],
                               profiled={kernel: [entry]}, cancel_event=cancel, timeout_s=limit)
        for report in reports:
            if not report.results and report.error_type == "job":  # `timed_out`: the limit it ran past
                report.results = [{"launch_key": key, "target": target, "ok": False, "error": report.error,
                                   "timed_out": limit if "timeout" in (report.error or "") else None}]
        return reports

    with ThreadPoolExecutor(max_workers=max(1, min(pool.size, len(keys)))) as executor:
        return [report for reports in executor.map(one, keys) for report in reports]
