"""Confirming a speedup: the candidate and the original re-timed against each other in
alternating rounds, in fresh workers, before anything is claimed (server and command-line side).

A search screens candidates with a few timed calls each, at different moments; on a loaded
machine that can make a kernel that changed nothing look twice as fast. So the winner is timed
again, here, against the kernel the search started from:

- three fresh worker processes, one per side: the original (A), the candidate (C), and the
  original again (B) for the A/A comparison that measures the noise floor (stats.py);
- the spec's inputs and init inputs at the sizes the search timed (under the interpreter, the
  checked sizes; on a GPU, the sizes as written), drawn fresh each round under the round's seed,
  the same seed for every side of a round;
- per round, up to `runs` timed calls per side after a warm-up (the first round warms up
  longer and times one call per side, which sets how many calls later rounds can afford: about
  `side_s` per side and round), the sides in an order that rotates through all six
  permutations; on a GPU under `gpu_lock`,
  with the L2 cache flushed before every call (timing.py's `time_round`);
- rounds go on until the speedup's 95% interval is tight, hopeless, or the budget is spent, and
  a speedup is claimed only when its lower bound clears 1 + the noise floor (`stats.confirm`).

Correctness is not re-run: the candidate passed the whole verification protocol before it could
be a search's best. But one random timed call of the candidate per round is saved and, when a
speedup would be claimed, compared against the reference on that round's inputs (timing.py's
`time_check`): a candidate that changes its answers after many calls (exploits 12 and 18) would
pass screening's few calls. The reference (PyTorch) runs in a fourth worker that writes the init
inputs first and does that check at the end.

Nothing here imports torch or triton.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from .pool import WorkerPool
from .predict import predicted_label
from .protocol import Job, Result
from .sandbox import digests_for, runs_dir, write_recorded
from .sizes import rewrite_constants
from .specs import HarnessSpec, Spec
from .stats import SIDES, Confirmation, ConfirmationError, RoundPolicy, confirm
from .verify import DEFAULT_TOLERANCES, _size_plan, _sources, gpu_lock

__all__ = ["GPU_POLICY", "INTERPRETER_POLICY", "PREDICTION_MARGIN", "confirm_predicted", "confirm_speedup"]

PREDICTION_MARGIN = 0.05
"""A predicted speedup is claimed only above 1 + this: the model's figures are estimates, and a
change it barely sees (a hint, a reordering) is not worth a patch."""

INTERPRETER_POLICY = RoundPolicy(min_rounds=3, max_rounds=12, target=0.05, runs=3, side_s=0.5, budget_s=90.0)
GPU_POLICY = RoundPolicy(min_rounds=6, max_rounds=30, target=0.02, runs=10, side_s=2.0, budget_s=300.0)
"""Three rounds at least (the first three orders are a Latin square: every side in every position
once) under the interpreter, six on a GPU; at most a minute and a half of rounds under the
interpreter (its calls can take seconds each), five minutes on a GPU."""


def _error(result: Result, what: str) -> str:
    if result.ok:
        return f"{what}: {result.payload.get('error')}"
    return f"{what}: {result.error or result.failure or 'the job failed'}"


def confirm_speedup(
    spec: Spec,
    original_source: str,
    candidate_source: str,
    *,
    mode: str,
    policy: RoundPolicy | None = None,
    seed: int = 42,
    timeout_s: float = 300.0,
    memory_mb: int = 8192,
    env: Mapping[str, str] | None = None,
    cancel: threading.Event | None = None,
    progress: Callable[[int, Confirmation], None] | None = None,
    tolerances: Mapping[str, float] | None = None,
) -> Confirmation:
    """Re-time `candidate_source` against `original_source` (both whole files, checked against
    `spec`'s reference) and say whether the candidate is faster; never raises for a bad
    candidate (a failed round ends the confirmation unclaimed, with the reason).

    Args:
        mode: "interpreter" (TRITON_INTERPRET=1 on CPU tensors, interpreter time) or "gpu".
        policy: rounds, target and timed calls per round (default: `INTERPRETER_POLICY` or
            `GPU_POLICY`).
        progress: called after each round with the confirmation so far.
        tolerances: for the check of the candidate's timed outputs (over the defaults and the
            spec's own, as in verification).
    """
    policy = policy or (GPU_POLICY if mode == "gpu" else INTERPRETER_POLICY)
    measured = "GPU time" if mode == "gpu" else "interpreter time"
    original, candidate = _sources(spec, original_source), _sources(spec, candidate_source)
    # The sizes the search timed: as written on a GPU; the trials' sizes under the interpreter
    # (verify.py's plan, block sizes read from the user's file, so every candidate gets the same).
    sizes = {} if mode == "gpu" else _size_plan(spec, original, mode).main
    work = Path(tempfile.mkdtemp(prefix="tritonsmith-confirm-", dir=runs_dir())).resolve()
    folder = work / "confirm"
    data = folder / "data"
    filename = spec.candidate.name
    paths: dict[str, Path] = {}
    digests: dict[str, str] = {}  # each file's sha256 as written: the workers import only these bytes
    texts = {"reference": original.reference, "inputs": original.inputs, "original": original.candidate,
             "original_b": original.candidate, "candidate": candidate.candidate}
    for role, text in texts.items():
        (folder / role).mkdir(parents=True)
        paths[role] = folder / role / filename
        write_recorded(paths[role], rewrite_constants(text, sizes), digests)
    data.mkdir()
    worker_env = dict(os.environ if env is None else env)
    if mode == "interpreter":
        worker_env["TRITON_INTERPRET"] = "1"
    common = {"data_dir": str(data), "seed": seed, "mode": mode, "problem": spec.problem()}

    def job(kind: str, **payload: Any) -> Job:
        return Job(kind, {**common, **payload, "sha256": digests_for(payload, digests)}, timeout_s=timeout_s,
                   memory_mb=memory_mb)

    chooser = random.Random(seed ^ 0xC0F1)
    check_key = chooser.randrange(2**31 - 1)
    round_seeds: list[int] = []
    tol = {**DEFAULT_TOLERANCES, **(spec.tolerances if isinstance(spec, HarnessSpec) else {}), **(tolerances or {})}

    def failed(message: str) -> Confirmation:
        nan = float("nan")
        return Confirmation(speedup=nan, low=nan, high=nan, noise_floor=float("inf"), rounds=0, claimed=False,
                            stopped="failed", measured=measured, runs=policy.runs, error=message)

    try:
        with ExitStack() as stack:
            # The reference writes the init inputs (and its weights) the candidate role loads,
            # then idles until it checks the candidate's timed outputs at the end.
            reference = stack.enter_context(WorkerPool(1, env=worker_env))
            pools = {side: stack.enter_context(WorkerPool(1, env=worker_env)) for side in SIDES}
            for pool in pools.values():  # their imports overlap the reference's job
                pool.prestart()
            init = reference.run(job("verify_inputs", reference=str(paths["reference"]), trials=0), cancel)
            if not init.ok:
                return failed(_error(init, "the reference failed to set up the inputs"))
            runs = [1]  # the first round is one call per side: it tells how slow a call is

            def time_round(r: int, order: tuple[str, ...]) -> dict[str, float]:
                round_seed = chooser.randrange(2**31 - 1)
                round_seeds.append(round_seed)
                medians: dict[str, float] = {}
                for side in order:
                    checked = side == "candidate"  # one random call's output, checked at the end
                    result = pools[side].run(job(
                        "time_round", role="candidate", file=str(paths[side]), inputs_file=str(paths["inputs"]),
                        round=r, round_seed=round_seed, runs=runs[-1], warmup=3 if r == 0 else 1,
                        check_index=chooser.randrange(runs[-1]) if checked else -1,
                        check_seed=round_seed ^ check_key, environment=False), cancel)
                    if not result.ok or result.payload.get("error"):
                        raise ConfirmationError(_error(result, f"round {r + 1}, timing the {side.replace('_b', '')}"))
                    times = sorted(float(t) for t in result.payload.get("event_ms") or ())
                    if not times:
                        raise ConfirmationError(f"round {r + 1}: no timed call came back for the {side}")
                    medians[side] = statistics.median(times)
                runs.append(policy.runs_for(max(medians.values())))
                return medians

            with gpu_lock() if mode == "gpu" else nullcontext():
                confirmation = confirm(time_round, policy, measured=measured, cancel=cancel, progress=progress)
            confirmation = replace(confirmation, runs=max(runs[1:] or runs))
            timed = round_seeds[: confirmation.rounds]
            if confirmation.claimed and timed:
                # A candidate that changes its answers after many calls (exploits 12 and 18)
                # would pass screening's few calls: its outputs here are checked too.
                check = reference.run(job(
                    "time_check", file=str(paths["reference"]), round_seeds=timed,
                    check_seeds=[s ^ check_key for s in timed], tolerances=tol), cancel)
                if not check.ok or check.payload.get("error"):
                    return replace(confirmation, claimed=False, stopped="failed",
                                   error=_error(check, "the candidate's timed outputs"))
            return confirmation
    finally:
        shutil.rmtree(work, ignore_errors=True)


def confirm_predicted(spec: Spec, original_source: str, candidate_source: str, *, path: str, target: str,
                      env: Mapping[str, str] | None = None, cancel: threading.Event | None = None) -> Confirmation:
    """Predict both again in fresh workers (predicted.py) and claim the candidate when its
    predicted time is below the original's by more than `PREDICTION_MARGIN`. The prediction is
    deterministic (the same sampled programs, the same compile), so the interval is the point:
    what this rules out is a figure that came from a stale worker, not noise."""
    from .predicted import predict_spec

    measured = predicted_label(target)
    worker_env = dict(os.environ if env is None else env)
    worker_env["TRITON_INTERPRET"] = "1"
    began = time.perf_counter()
    with WorkerPool(1, env=worker_env) as reference, WorkerPool(1, env=worker_env) as candidate, \
            WorkerPool(1, env={k: v for k, v in worker_env.items() if k != "TRITON_INTERPRET"}) as compiler:
        both = [predict_spec(spec, text, path=path, target=target, pools=(reference, candidate),
                             compile_pool=compiler, cancel=cancel) for text in (original_source, candidate_source)]
    seconds = time.perf_counter() - began
    nan = float("nan")
    failed = next((p for p in both if p.seconds is None), None)
    if failed is not None:
        return Confirmation(speedup=nan, low=nan, high=nan, noise_floor=PREDICTION_MARGIN, rounds=0, claimed=False,
                            stopped="failed", measured=measured, error=failed.summary(), seconds=seconds)
    original_s, candidate_s = float(both[0].seconds or nan), float(both[1].seconds or nan)
    ratio = original_s / candidate_s if candidate_s > 0 else nan
    return Confirmation(speedup=ratio, low=ratio, high=ratio, noise_floor=PREDICTION_MARGIN, rounds=1,
                        claimed=ratio > 1.0 + PREDICTION_MARGIN, stopped="tight", measured=measured,
                        original_ms=(original_s * 1e3,), candidate_ms=(candidate_s * 1e3,), seconds=seconds,
                        details={"original": both[0].to_json(), "candidate": both[1].to_json()})
