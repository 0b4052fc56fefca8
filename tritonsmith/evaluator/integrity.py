"""What candidate code must leave as it found it in its own process: the functions and classes
of torch, NumPy, Triton, Python's builtins and the verifier's own modules (worker side).

Threat model: the candidate controls the code of its file, which runs in the candidate worker
(its import, `__init__`, every `forward`, finalizers). It must never change what the verifier's
code in that process calls: `torch.save` writing its outputs, `Tensor.detach` copying them,
`torch.allclose`, the launch guard, the recorder. A static check sees `torch.x = ...` and
`setattr(torch, ...)`; the routes are many more (`vars(torch)[...]`, `type.__setattr__`,
`importlib.import_module(...).__dict__`, `sys.modules`, a C extension). So this module compares
the namespaces themselves: a `Snapshot` taken before the candidate's file is imported holds every
callable, class and module bound in the watched namespaces; `changes()` lists each one replaced,
removed or added since, whatever the route. The worker that saw a change is retired (the pool
starts a fresh one), so a patch cannot outlive its job either.

What it cannot see: a patch made and undone within one call, or one made to an object outside the
watched namespaces. Values judged by the reference's own worker, in another process, are the
defence there (correctness.py).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

__all__ = ["ROUND_TRIP_ELEMENTS", "WATCHED_CLASSES", "WATCHED_MODULES", "Fence", "RoundTrips", "Snapshot", "host_bytes"]

WATCHED_MODULES = (
    "builtins", "math", "hashlib", "io", "os", "os.path", "pickle", "time", "threading", "_thread",
    "weakref", "gc", "importlib", "numpy", "torch", "torch.nn", "torch.nn.functional",
    "torch.serialization", "torch.overrides", "torch.utils._python_dispatch", "torch.library",
    "triton", "triton.runtime.jit", "tritonsmith.evaluator.correctness", "tritonsmith.evaluator.attribution",
    "tritonsmith.evaluator.guards", "tritonsmith.evaluator.integrity", "tritonsmith.evaluator.progress",
    "tritonsmith.evaluator.protocol", "tritonsmith.evaluator.worker",
)
"""Modules whose functions, classes and submodules the candidate must not rebind."""

WATCHED_CLASSES = (
    ("torch", "Tensor"), ("torch._C", "TensorBase"), ("torch.nn", "Module"), ("torch.nn", "Parameter"),
    ("triton.runtime.jit", "JITFunction"), ("triton.runtime.interpreter", "InterpretedFunction"),
    ("numpy", "ndarray"),
)
"""Classes whose attributes (methods, properties, operators) the candidate must not rebind."""


_CACHES = frozenset({"__slotnames__"})
"""Attributes Python itself adds to a class on first use (`copyreg` caches `__slotnames__` when
a tensor is first pickled)."""


def _watched(value: Any) -> bool:
    """Code and structure, not data: a library switch (`torch.backends...allow_tf32`) or a
    module's counter may change; a function, class, descriptor or module may not."""
    return callable(value) or isinstance(value, (ModuleType, type, property, staticmethod, classmethod))


def _entries(namespace: dict[str, Any], is_class: bool) -> dict[str, Any]:
    """A class's every attribute (descriptors are how its methods and properties are bound); a
    module's code only."""
    return {k: v for k, v in list(namespace.items()) if is_class or _watched(v)}


def _namespaces() -> Iterator[tuple[str, dict[str, Any], bool]]:
    """(label, namespace, is a class) for each watched namespace imported so far."""
    for name in WATCHED_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            yield name, vars(module), False
    for module_name, class_name in WATCHED_CLASSES:
        module = sys.modules.get(module_name)
        klass = getattr(module, class_name, None) if module is not None else None
        if isinstance(klass, type):
            yield f"{module_name}.{class_name}", dict(vars(klass)), True


class Snapshot:
    """The watched namespaces' code as it was when taken."""

    def __init__(self) -> None:
        # Values are held (not their ids), so an identity test later cannot be fooled by an
        # address reused after the original was freed.
        self.entries: dict[str, dict[str, Any]] = {}
        self.classes: set[str] = set()
        self.take()

    def take(self) -> None:
        self.entries.clear()
        for label, namespace, is_class in _namespaces():
            self.entries[label] = _entries(namespace, is_class)
            if is_class:
                self.classes.add(label)

    def changes(self) -> list[str]:
        """Each watched name rebound, removed or added since the snapshot ("torch.save
        replaced"), in a stable order. A submodule imported since is no change (torch imports
        its own lazily), nor is a namespace imported for the first time since."""
        found: list[str] = []
        for label, namespace, is_class in _namespaces():
            before = self.entries.get(label)
            if before is None:
                continue
            now = _entries(namespace, is_class)
            for key, value in before.items():
                if key not in namespace:
                    found.append(f"{label}.{key} removed")
                elif namespace[key] is not value:
                    found.append(f"{label}.{key} replaced")
            for key, value in now.items():
                if key not in before and not isinstance(value, ModuleType) and key not in _CACHES:
                    found.append(f"{label}.{key} added")
        return sorted(found)


class FenceBreach(RuntimeError):
    """Raised in the candidate's code where it tried to leave its process's one thread."""


class Fence:
    """While raised, the process's code may not start a thread or a process, or load native
    code: the ways work can leave the one thread the verifier records (exploit 8 and 16 by any
    route: `threading`, `_thread` through `sys.modules`, `concurrent.futures`, `os.fork`,
    `subprocess`, `ctypes`). Thread starts are wrapped where every Python route meets
    (`_thread.start_new_thread`); the rest are refused by an audit hook (PEP 578), which no code
    can remove. Each attempt is kept, so the verdict names it even when the candidate swallows the
    exception. Installed once per worker; raised around the candidate's code in the interpreter
    mode only (on a GPU, Triton's own compiler starts processes on first use)."""

    _installed: Fence | None = None
    AUDITED = ("os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system",
               "subprocess.Popen", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "ctypes.call_function")

    def __init__(self) -> None:
        self.raised = False
        self.attempts: list[str] = []

    @classmethod
    def install(cls) -> Fence:
        if cls._installed is not None:
            return cls._installed
        import _thread
        import threading

        fence = cls()
        start = _thread.start_new_thread

        def start_new_thread(function: Any, args: Any, kwargs: Any = None) -> Any:
            if fence.raised:
                name = getattr(function, "__qualname__", None) or type(function).__name__
                fence.refuse(f"started a thread running {name}")
            return start(function, args, *(() if kwargs is None else (kwargs,)))

        _thread.start_new_thread = start_new_thread  # type: ignore[assignment]
        threading._start_new_thread = start_new_thread  # type: ignore[attr-defined]
        if hasattr(_thread, "start_joinable_thread"):  # Python 3.13
            joinable = _thread.start_joinable_thread

            def start_joinable_thread(function: Any, *args: Any, **kwargs: Any) -> Any:
                if fence.raised:
                    fence.refuse(f"started a thread running {getattr(function, '__qualname__', function)}")
                return joinable(function, *args, **kwargs)

            _thread.start_joinable_thread = start_joinable_thread  # type: ignore[attr-defined]
            threading._start_joinable_thread = start_joinable_thread  # type: ignore[attr-defined]

        def audit(event: str, args: tuple[Any, ...]) -> None:
            if fence.raised and event.startswith(cls.AUDITED):
                what = "loaded native code" if event.startswith("ctypes.") else "started a process"
                fence.refuse(f"{what} ({event})")

        sys.addaudithook(audit)
        cls._installed = fence
        return fence

    def refuse(self, what: str) -> None:
        self.attempts.append(what)
        raise FenceBreach(f"tritonsmith: the candidate {what}; verification runs it on one thread, "
                          "in one process, without native code")

    def __enter__(self) -> Fence:
        self.attempts.clear()
        self.raised = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.raised = False


ROUND_TRIP_ELEMENTS = 64
"""Elements a forward pass may carry out of tensors into Python or NumPy: a few sizes, offsets or
flags (`.item()` for a size, `cu_seqlens.tolist()` of a small batch) are host-side bookkeeping;
more is the work leaving the kernels."""


def host_bytes(tensor: Any) -> bytes:
    """A CPU tensor's bytes, read by the verifier: through the C method, which `RoundTrips` does
    not wrap, so the verifier's own reads (hashing outputs, the recorder's hashes during a forward
    pass) are never counted as the candidate's round trips."""
    import torch

    return torch._C.TensorBase.numpy(tensor.contiguous().reshape(-1).view(torch.uint8)).tobytes()


class RoundTrips:
    """Tensor data the candidate's forward pass carries to the host's Python or NumPy
    (`.tolist()`, `.numpy()`, `np.asarray(x)`, DLPack, `.item()`), by elements. Threat model: the
    candidate computes (part of) the answer in Python or NumPy, where no dispatcher records it,
    and a kernel passes it on or nudges it. The values defence (an answer that existed before a
    kernel, correctness.py) catches a whole answer; this catches the trip itself, so a partial or
    disguised one is refused too, as KernelBench's checker refuses host-side work.

    The routes are wrapped on `torch.Tensor` (installed before the namespace `Snapshot`, so a
    candidate that unwraps them is refused as a change); calls inside a Triton launch are
    Triton's own (its interpreter reads tensors through NumPy) and are not counted. Known ways
    past: calling the C base class (`torch._C.TensorBase.tolist(x)`), `int()`/`float()` per
    element, pickling a tensor to bytes."""

    _installed: RoundTrips | None = None
    ROUTES = ("tolist", "numpy", "__array__", "__dlpack__", "item")

    def __init__(self, guard: Any) -> None:
        self.guard = guard  # guards.LaunchGuard: its `launching` says Triton's own code runs
        self.watching = False
        self.moved: dict[str, int] = {}
        self._inside = 0

    @classmethod
    def install(cls, guard: Any) -> RoundTrips:
        if cls._installed is not None:
            return cls._installed
        import torch

        trips = cls(guard)
        for route in cls.ROUTES:
            original = getattr(torch.Tensor, route)
            setattr(torch.Tensor, route, trips._wrap(route, original))
        cls._installed = trips
        return trips

    def _wrap(self, route: str, original: Any) -> Any:
        trips = self

        def carried(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            if trips.watching and not trips._inside and not trips.guard.launching:
                try:
                    count = int(tensor.numel())
                except Exception:  # noqa: BLE001 - a tensor subclass without numel: count one
                    count = 1
                trips.moved[route] = trips.moved.get(route, 0) + count
            trips._inside += 1  # `np.asarray(x)` calls `__array__`, which calls `numpy`: one trip
            try:
                return original(tensor, *args, **kwargs)
            finally:
                trips._inside -= 1

        carried.__wrapped__ = original  # type: ignore[attr-defined]
        carried.__name__ = route
        return carried

    def __enter__(self) -> RoundTrips:
        self.moved = {}
        self.watching = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.watching = False

    def refusal(self, when: str) -> str | None:
        """Why the forward pass is refused, when it carried more than `ROUND_TRIP_ELEMENTS`."""
        total = sum(self.moved.values())
        if total <= ROUND_TRIP_ELEMENTS:
            return None
        shown = ", ".join(f"{route} {count}" for route, count in sorted(self.moved.items()))
        return (f"the forward pass carried {total} tensor elements to the host's Python or NumPy {when} "
                f"({shown}; at most {ROUND_TRIP_ELEMENTS} are sizes and offsets): the work left the kernels "
                "(a CPU round trip, exploit 1: the answer computed outside the kernel)")
