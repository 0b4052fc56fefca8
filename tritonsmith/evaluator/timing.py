"""Worker side of GPU timing: the `time_round` and `time_check` jobs (the protocol, and why
reference and candidate are timed in two processes, is in `verify.py`).

A worker keeps what it imported between rounds (`_LOADED`), so only the first round pays for
imports, model construction and Triton's compile. Each round draws fresh inputs under its own
seed, warms up a random number of times, then times `runs` calls, each with the L2 cache
flushed (a buffer of at least twice its size is zeroed) and the device synchronised, with CUDA
events on the current stream and, around them, host time up to a device-wide synchronise (so
work sent to another stream shows: exploit 7). The candidate saves the output of one call
chosen at random by the parent, which `time_check` compares against the reference afterwards
(exploits 12 and 18: a cached or timing-aware result is caught).

Imported lazily by the worker: imports torch inside functions and runs user code.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from .correctness import (
    Problem,
    _build_reference,
    _clone,
    _load,
    _outputs,
    _prepare,
    _to,
    compare_outputs,
    import_file,
    load_problem,
    written,
)

__all__ = ["environment", "handle_time_check", "handle_time_round"]

_LOADED: dict[tuple[str, str], dict[str, Any]] = {}
MIN_FLUSH_BYTES = 256 * 1024 * 1024


def environment() -> dict[str, Any]:
    """What a timing depends on, stored with it (verification.md, section 5)."""
    import torch
    import triton

    props = torch.cuda.get_device_properties(0)
    return {
        "gpu": torch.cuda.get_device_name(0),
        "capability": f"sm_{props.major}{props.minor}",
        "sms": props.multi_processor_count,
        "l2_bytes": int(getattr(props, "L2_cache_size", 0)),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton.__version__,
    }


def _load_role(payload: dict[str, Any]) -> dict[str, Any]:
    """The role's model and input generator, built once per worker and file."""
    import torch

    from .guards import TimerGuard

    role = payload["role"]
    key = (payload["file"], role)
    if key in _LOADED:
        return _LOADED[key]
    device = _prepare(payload)
    if any(other[0].rsplit("/", 2)[0] != key[0].rsplit("/", 2)[0] for other in _LOADED):
        _LOADED.clear()  # a new verification (another work folder): free the last one's GPU memory
        if device == "cuda":
            torch.cuda.empty_cache()
    timers = TimerGuard() if device == "cuda" else None  # before any candidate code runs
    seed = int(payload.get("seed", 42))
    if role == "reference":
        problem = load_problem(import_file(payload["file"], "reference", written(payload, payload["file"])), payload)
        model, _ = _build_reference(problem, seed, device)
        inputs_problem = problem
    else:
        module = import_file(payload["file"], "candidate", written(payload, payload["file"]))
        problem = load_problem(module, payload)
        inputs_problem = load_problem(import_file(payload["inputs_file"], "inputs",
                                                  written(payload, payload["inputs_file"])), payload)
        init = _load(Path(payload["data_dir"]) / "init.pt")
        torch.manual_seed(seed)
        with torch.no_grad():
            model = problem.model("candidate", _to(init["init_inputs"], device))
        model = model.to(device)  # under the reference's seed, nothing copied; training mode, as KernelBench
    flush = None
    if device == "cuda":
        flush_bytes = max(MIN_FLUSH_BYTES, 2 * int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)))
        flush = torch.empty(flush_bytes // 4, dtype=torch.float32, device="cuda")
    loaded = {"model": model, "inputs": inputs_problem, "timers": timers, "flush": flush, "device": device}
    _LOADED[key] = loaded
    return loaded


def _round_inputs(problem: Problem, round_seed: int, device: str = "cuda") -> list[Any]:
    import torch

    torch.manual_seed(round_seed)
    return _to([_clone(v) for v in problem.inputs(device)], device)


SAMPLE = 1 << 20
"""Outputs larger than this many elements are checked at this many positions, drawn from a
seed the candidate's code never sees before the call."""


def checked_sample(outputs: list[Any], seed: int) -> list[Any]:
    """What of a timed call's outputs is checked: small outputs whole, large ones at `SAMPLE`
    positions drawn under `seed` (the reference draws the same positions), as (shape, dtype,
    values) so shapes and dtypes are still compared in full."""
    import torch

    sample: list[tuple[Any, str, Any]] = []
    for out in outputs:
        if not isinstance(out, torch.Tensor):
            sample.append(("value", repr(out), None))
            continue
        flat = out.detach().reshape(-1)
        if flat.numel() > SAMPLE:
            generator = torch.Generator(device=flat.device).manual_seed(seed)
            flat = flat[torch.randint(flat.numel(), (SAMPLE,), generator=generator, device=flat.device)]
        sample.append((list(out.shape), str(out.dtype), flat.cpu().clone()))
    return sample


def handle_time_round(payload: dict[str, Any]) -> dict[str, Any]:
    """time_round: one round of `runs` timed calls for one role on fresh inputs.

    Returns per-call event and host milliseconds, or `{"error": ...}` naming the trick when the
    candidate replaced a timer function (exploit 10)."""
    import torch

    loaded = _load_role(payload)
    model = loaded["model"]
    flush = loaded["flush"]
    device = loaded["device"]
    inputs = _round_inputs(loaded["inputs"], int(payload["round_seed"]), device)
    chooser = random.Random(int(payload["round_seed"]) ^ 0x5EED)
    warmups = int(payload.get("warmup", 3)) + chooser.randint(0, 3)  # exploit 18: no fixed count
    check_index = int(payload.get("check_index", -1))
    if device != "cuda":  # the interpreter: host time only, for the search (never a GPU speedup)
        warmups = min(warmups, 1)
    events, host = [], []
    with torch.no_grad():
        for _ in range(warmups):
            model(*inputs)
        if device == "cuda":
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for i in range(int(payload["runs"])):
            if device != "cuda":
                began = time.perf_counter()
                output = model(*inputs)
                host.append((time.perf_counter() - began) * 1e3)
                events.append(host[-1])
            else:
                flush.zero_()  # cold L2: nothing of the last call's data stays cached (exploit 16)
                torch.cuda.synchronize()
                began = time.perf_counter()
                start.record()
                output = model(*inputs)
                end.record()
                torch.cuda.synchronize()  # the whole device: work on other streams counts too
                host.append((time.perf_counter() - began) * 1e3)
                events.append(start.elapsed_time(end))
            if i == check_index:
                saved = checked_sample(_outputs(output), int(payload["check_seed"]))
                torch.save(saved, Path(payload["data_dir"]) / f"timed_{payload['round']}.pt")
    replaced = loaded["timers"].replaced() if loaded["timers"] is not None else []
    if replaced:
        return {"error": (f"the timer functions {', '.join(replaced)} were replaced while the "
                          f"{payload['role']} ran (exploit 10: monkey-patching the timer)")}
    result: dict[str, Any] = {"event_ms": events, "host_ms": host, "warmups": warmups}
    if payload.get("environment"):
        result["environment"] = environment() if device == "cuda" else {"device": "interpreter"}
    return result


def handle_time_check(payload: dict[str, Any]) -> dict[str, Any]:
    """time_check (reference worker): the candidate's saved output of a random timed call in
    each round must match the reference on that round's inputs."""
    import torch

    loaded = _load_role({**payload, "role": "reference", "file": payload["file"]})
    tolerances = {str(k): float(v) for k, v in payload["tolerances"].items()}
    data = Path(payload["data_dir"])
    for r, round_seed in enumerate(payload["round_seeds"]):
        path = data / f"timed_{r}.pt"
        if not path.exists():
            return {"error": f"round {r + 1}: the candidate's checked output is missing"}
        with torch.no_grad():
            output = _outputs(loaded["model"](*_round_inputs(loaded["inputs"], int(round_seed), loaded["device"])))
        expected = checked_sample(output, int(payload["check_seeds"][r]))
        actual = [tuple(entry) for entry in _load(path)]
        error = None
        if [e[:2] for e in expected] != [a[:2] for a in actual]:
            error = (f"outputs are {[a[:2] for a in actual]} (shape, dtype), the reference's "
                     f"{[e[:2] for e in expected]}")
        else:
            pairs = [(e[2], a[2]) for e, a in zip(expected, actual, strict=True) if e[2] is not None]
            error = compare_outputs([p[0] for p in pairs], [p[1] for p in pairs], tolerances)
        if error is not None:
            return {"error": (f"round {r + 1}: a timed call's output does not match the reference: {error} "
                              "(exploits 12 and 18: cached or timing-aware results)")}
    return {"rounds": len(payload["round_seeds"])}
