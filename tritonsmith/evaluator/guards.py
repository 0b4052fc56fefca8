"""Worker-side instruments the verifier runs candidate code under (worker processes only:
imports torch and triton inside functions).

- `LaunchGuard` wraps Triton's launch path (`JITFunction.run`, and `InterpretedFunction.run`
  under `TRITON_INTERPRET=1`; autotuners and heuristics call through it) to count launches per
  kernel, and can make launches fail (fault injection, exploit 3) or do nothing (ghost replay,
  exploit 2).
- `poisoned(value)` fills every tensor the candidate allocates uninitialised (`torch.empty*`,
  `Tensor.new_empty`) with a poison, so an output the kernel never writes shows (exploits 5, 15).
- `TimerGuard` remembers the timer functions before candidate code is imported and says which
  ones were replaced since (exploit 10).
"""

from __future__ import annotations

import inspect
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["InjectedLaunchFailure", "LaunchGuard", "TimerGuard", "poisoned"]


class InjectedLaunchFailure(RuntimeError):
    """Raised in place of a Triton launch while fault injection is on."""


class LaunchGuard:
    """Counts Triton launches by kernel name; `mode` "run" (normal), "fail" (every launch raises)
    or "skip" (launches of the kernels in `skipped` do nothing)."""

    _installed: LaunchGuard | None = None

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.mode = "run"
        self.skipped: set[str] = set()
        # The work recorder of the forward pass being attributed (attribution.py), told of
        # each launch that runs with its tensor arguments before and after.
        self.observer: Any = None
        # Each kernel's argument types at its first launch, as a Triton signature writes them
        # ("*fp16", "i32"), for the compile that follows a check (compile.py, reports.py).
        self.arg_types: dict[str, dict[str, str]] = {}
        # Each kernel's constexpr values at that launch (plain values only), so a kernel whose
        # constexprs the source computes at run time can still be compiled for the target.
        self.constexpr_values: dict[str, dict[str, Any]] = {}
        self.launching = 0  # inside a launch: Triton's own code runs (integrity.RoundTrips)

    @classmethod
    def install(cls) -> LaunchGuard:
        """The process's guard, wrapping the launch path once."""
        if cls._installed is not None:
            return cls._installed
        guard = cls()
        classes: list[Any] = []
        from triton.runtime.jit import JITFunction

        classes.append(JITFunction)
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        except ImportError:  # pragma: no cover - every supported Triton has it
            pass
        for klass in classes:
            klass.run = guard._wrap(klass.run)
        cls._installed = guard
        return guard

    def _wrap(self, run: Callable[..., Any]) -> Callable[..., Any]:
        from torch.autograd.profiler import record_function  # once, not on every launch

        from .accounting import LAUNCH_SCOPE

        guard = self

        def guarded_run(fn: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("warmup"):  # a compile without a launch
                return run(fn, *args, **kwargs)
            name = _kernel_name(fn)
            guard.counts[name] += 1
            guard.record_types(name, fn, args, kwargs)
            if guard.mode == "fail":
                raise InjectedLaunchFailure(f"tritonsmith: injected failure of the launch of {name}")
            if guard.mode == "skip" and name in guard.skipped:
                return None
            guard.launching += 1
            try:
                observer = guard.observer
                if observer is None:
                    return run(fn, *args, **kwargs)
                with record_function(LAUNCH_SCOPE):  # the interpreter's aten operations are the kernel's
                    token = observer.before_launch(name, _tensor_arguments(args, kwargs))
                    try:
                        return run(fn, *args, **kwargs)
                    finally:
                        observer.after_launch(token)
            finally:
                guard.launching -= 1

        guarded_run.__wrapped__ = run  # type: ignore[attr-defined]
        return guarded_run

    def record_types(self, name: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Remember the signature types of `name`'s first launch (its arguments by parameter
        name). Never raises: a launch is not the place to fail for bookkeeping."""
        if name in self.arg_types:
            return
        try:
            names = list(getattr(fn, "arg_names", None) or [])
            bound = dict(zip(names, args))
            bound.update({k: v for k, v in kwargs.items() if k in names})
            self.arg_types[name] = {k: t for k, v in bound.items() if (t := _signature_type(v)) is not None}
            constexprs = _constexpr_names(fn)
            self.constexpr_values[name] = {k: v for k, v in bound.items() if k in constexprs and
                                           (v is None or type(v) in (bool, int, float, str))}
        except Exception:  # noqa: BLE001, S110
            pass

    @contextmanager
    def session(self, mode: str = "run", skipped: set[str] | None = None) -> Iterator[Counter[str]]:
        """Count the launches made inside the block, in `mode`; yields the block's counts."""
        before = Counter(self.counts)
        self.mode, self.skipped = mode, set(skipped or ())
        counts: Counter[str] = Counter()
        try:
            yield counts
        finally:
            self.mode, self.skipped = "run", set()
            counts.update(self.counts - before)


def _constexpr_names(fn: Any) -> set[str]:
    """The parameters annotated `tl.constexpr` (a JITFunction knows them; the interpreter's
    InterpretedFunction only has the Python function)."""
    params = getattr(fn, "params", None)
    if params:
        return {p.name for p in params if getattr(p, "is_constexpr", False)}
    import inspect

    signature = inspect.signature(getattr(fn, "fn", fn))
    return {p.name for p in signature.parameters.values()
            if p.annotation is not inspect.Parameter.empty and "constexpr" in str(p.annotation)}


def _tensor_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The tensors a launch passes to its kernel (positional and keyword; not the grid)."""
    import torch

    values = [*args, *(v for k, v in kwargs.items() if k not in ("grid", "warmup"))]
    return [v for v in values if isinstance(v, torch.Tensor)]


_TRITON_DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64", "int8": "i8",
                  "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "i1",
                  "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5"}


def _signature_type(value: Any) -> str | None:
    """How Triton types one launch argument in a signature: `*fp16` for a tensor, `i32`/`i64`
    for an int (by its value), `fp32` for a float, `i1` for a bool, `constexpr` for None."""
    import torch

    if isinstance(value, torch.Tensor):
        try:
            from triton._utils import canonicalize_dtype  # Triton 3.4+

            return "*" + str(canonicalize_dtype(value.dtype))
        except (ImportError, KeyError):
            name = str(value.dtype).rsplit(".", 1)[-1]
            return "*" + _TRITON_DTYPES.get(name, name)
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else ("u64" if value >= 2**63 else "i64")
    if isinstance(value, float):
        return "fp32"
    if value is None:
        return "constexpr"
    return None


def _kernel_name(fn: Any) -> str:
    inner = getattr(fn, "fn", None)
    return str(getattr(inner, "__name__", None) or getattr(fn, "__name__", "kernel"))


_ALLOCATORS = ("empty", "empty_like", "empty_strided")
_poison: list[Any] = [None]  # the current poison value; None = off
_poison_installed = False


def _fill(tensor: Any) -> Any:
    import torch

    value = _poison[0]
    if value is None or not isinstance(tensor, torch.Tensor) or tensor.numel() == 0:
        return tensor
    with torch.no_grad():
        if tensor.is_floating_point() or tensor.is_complex():
            tensor.fill_(value)
        elif tensor.dtype == torch.bool:
            tensor.fill_(True)
        else:
            tensor.fill_(_int_poison(value, tensor.dtype))
    return tensor


def _int_poison(value: Any, dtype: Any) -> int:
    import torch

    info = torch.iinfo(dtype)
    pattern = -0x5A5A5A5A if value != value else 0x3C3C3C3C  # NaN poison vs the finite one
    return max(info.min, min(info.max, pattern))


def _install_poison() -> None:
    """Wrap torch's uninitialised allocators (once); they poison while a value is set."""
    global _poison_installed
    if _poison_installed:
        return
    import torch

    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        def allocate(*args: Any, **kwargs: Any) -> Any:
            return _fill(function(*args, **kwargs))

        allocate.__name__ = getattr(function, "__name__", "allocate")
        allocate.__doc__ = function.__doc__
        return allocate

    for name in _ALLOCATORS:
        setattr(torch, name, wrap(getattr(torch, name)))
    new_empty = torch.Tensor.new_empty
    torch.Tensor.new_empty = lambda self, *args, **kwargs: _fill(new_empty(self, *args, **kwargs))  # type: ignore[method-assign]
    _poison_installed = True


@contextmanager
def poisoned(value: float) -> Iterator[None]:
    """Inside the block, uninitialised allocations are filled with `value` (NaN, or a large
    finite number for the second run of the determinism check; integers get a fixed pattern)."""
    _install_poison()
    previous, _poison[0] = _poison[0], value
    try:
        yield
    finally:
        _poison[0] = previous


class TimerGuard:
    """The timer functions as they were before candidate code ran, and a test that each is
    still torch's or Python's own (so a patch made in an earlier job of the same worker, before
    this guard existed, shows too)."""

    def __init__(self) -> None:
        self.original = dict(self._current())

    @staticmethod
    def _current() -> Iterator[tuple[str, Any]]:
        import torch

        yield "time.perf_counter", time.perf_counter
        yield "time.perf_counter_ns", time.perf_counter_ns
        yield "time.time", time.time
        yield "torch.cuda.synchronize", torch.cuda.synchronize
        yield "torch.cuda.Event", torch.cuda.Event
        yield "torch.cuda.Event.record", torch.cuda.Event.record
        yield "torch.cuda.Event.elapsed_time", torch.cuda.Event.elapsed_time
        yield "torch.cuda.Event.synchronize", torch.cuda.Event.synchronize
        yield "torch.cuda.current_stream", torch.cuda.current_stream
        yield "torch.cuda.empty_cache", torch.cuda.empty_cache

    @staticmethod
    def _genuine(name: str, value: Any) -> bool:
        import os

        import torch

        if name.startswith("time."):
            return inspect.isbuiltin(value) and getattr(value, "__module__", None) == "time"
        target = value.__init__ if inspect.isclass(value) else value
        code = getattr(inspect.unwrap(target), "__code__", None)
        if code is None:  # a builtin or C function: torch's own
            return inspect.isbuiltin(target) or inspect.ismethoddescriptor(target) or inspect.isclass(value)
        return os.path.abspath(code.co_filename).startswith(os.path.dirname(os.path.abspath(torch.__file__)))

    def replaced(self) -> list[str]:
        """The names whose function changed since construction or is not the library's own."""
        return [name for name, value in self._current()
                if self.original.get(name) is not value or not self._genuine(name, value)]
