"""Progress reports from inside a worker: the heartbeat the pool's hang watchdog listens for.

A job may carry a stall limit (`Job.stall_s`): the pool kills it when that long passes without
a progress report, however long the job has run in all. Code running in a worker reports
progress with `progress()`; `heartbeat(model)` makes every call of a model report it when the
call returns, so a verification job proves it is alive once per forward pass, and an endless
loop inside `forward` (or at import, or in `__init__`) stops the reports and is killed after
the stall limit, while a slow but progressing interpreter run is not: under Triton's
interpreter each kernel program reports too, as one interpreted forward pass of a real-sized
pooling kernel can take longer than the stall limit (a program that never ends still stops the
reports; a loop relaunching kernels forever is ended by the job's overall time limit).

A report is one line on the worker's result pipe, `{"id": <job id>, "progress": "<note>"}`
(see `protocol.py`); reports are sent at most every `MIN_INTERVAL_S`, so a heartbeat costs a
clock read per forward pass inside timed loops. Outside a worker (tests calling a handler
directly) `progress()` does nothing.

Worker side, standard library only: the worker imports it before any job, and `correctness.py`
and the pool's tests import it from inside jobs (it is a module of its own so that code running
in `python -m tritonsmith.evaluator.worker`, whose module is `__main__`, shares its state).
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from typing import IO, Any

__all__ = ["MIN_INTERVAL_S", "begin", "connect", "end", "heartbeat", "progress"]

MIN_INTERVAL_S = 0.25
"""Reports closer together than this are dropped (the pool's stall limits are seconds)."""

_lock = threading.Lock()
_stream: IO[str] | None = None
_job_id: int | None = None
_last = 0.0


def connect(stream: IO[str]) -> threading.Lock:
    """Send reports to `stream` (the worker's result pipe); returns the lock that the worker
    also holds while writing a reply, so that lines never interleave."""
    global _stream
    _stream = stream
    return _lock


def begin(job_id: int) -> None:
    """Reports from now on belong to job `job_id`."""
    global _job_id, _last
    with _lock:
        _job_id, _last = job_id, 0.0


def end() -> None:
    """The job is over: reports are dropped until the next `begin`."""
    global _job_id
    with _lock:
        _job_id = None


def progress(note: str = "") -> None:
    """Tell the pool the running job is making progress (at most every `MIN_INTERVAL_S`)."""
    global _last
    now = time.monotonic()
    if _stream is None or _job_id is None or now - _last < MIN_INTERVAL_S:
        return
    with _lock:
        if _stream is None or _job_id is None:
            return
        _last = now
        try:
            _stream.write(json.dumps({"id": _job_id, "progress": note}) + "\n")
            _stream.flush()
        except (OSError, ValueError):  # the pool is gone; the worker ends when stdin closes
            pass


def _after_forward(module: Any, args: Any, output: Any) -> None:
    progress("forward")


def _after_compile(*args: Any, **kwargs: Any) -> None:
    progress("compile")


def _program_reports(interpreter: Any) -> None:
    """Under Triton's interpreter, report progress as each kernel program starts (once per
    process: the builder's `set_grid_idx` is called before every program)."""
    builder = getattr(interpreter, "InterpreterBuilder", None)
    original = getattr(builder, "set_grid_idx", None)
    if builder is None or original is None or getattr(original, "_tritonsmith_progress", False):
        return

    def set_grid_idx(self: Any, *index: Any) -> Any:
        progress("program")
        return original(self, *index)

    set_grid_idx._tritonsmith_progress = True  # type: ignore[attr-defined]
    builder.set_grid_idx = set_grid_idx


def heartbeat(model: Any) -> Any:
    """Report progress after each call of `model` (a `torch.nn.Module`; anything else is
    returned untouched), and after each Triton compile (a first launch on a GPU compiles, and
    an autotuner compiles every Config). Returns `model`.

    A hook on the model itself, not a global module hook: a loop inside `forward` that keeps
    calling submodules is still a hang, and submodule calls stay on PyTorch's fast path.
    """
    register = getattr(model, "register_forward_hook", None)
    if callable(register):
        register(_after_forward)
    triton = sys.modules.get("triton")
    _program_reports(sys.modules.get("triton.runtime.interpreter"))
    knobs = getattr(getattr(triton, "knobs", None), "runtime", None)
    if knobs is not None and getattr(knobs, "jit_post_compile_hook", _after_compile) is None:
        with contextlib.suppress(AttributeError, TypeError):  # a Triton without the knob
            knobs.jit_post_compile_hook = _after_compile
    return model
