"""Code written for a GPU, run on the CPU under Triton's interpreter (worker side: imports torch
and triton inside functions; only worker processes call it).

KernelBench problems and their solutions say "cuda" everywhere and consult the device:
`assert x.is_cuda`, `if x.device.type != "cuda": return torch_fallback(x)`,
`torch.cuda.get_device_properties(0).multi_processor_count` for a persistent grid,
`triton.runtime.driver.active.get_current_device()`. Without a GPU, with TRITON_INTERPRET=1,
kernels run on CPU tensors; for a solution to take the same path it takes on a GPU, the device
queries must answer as a GPU would while every allocation and move lands on the CPU:

- factories' `device=`, `torch.device("cuda")`, `Tensor.cuda`/`Module.cuda`, `.to("cuda")`:
  the CPU;
- `Tensor.is_cuda` is True and `Tensor.device` reads `cuda:0` for CPU tensors (what the code
  asks; the storage stays on the CPU);
- `torch.cuda.is_available()` is True, with one device that describes itself as an H100
  (`get_device_properties`, `get_device_capability`, `current_device`, ...), and
  `synchronize`, `set_device`, `empty_cache` do nothing;
- Triton's `driver.active` answers device and property queries for that device;
- a mask built from a scalar condition and a block (`mask_w & ((ih >= 0) & (ih < H))`) is `i1`
  when compiled, but the interpreter types it int32 and its loads and stores refuse it ("mask
  has unsupported dtype"); masks reach them as booleans, as on the GPU (a kernel whose mask
  really is an integer fails to compile, and the compile step says so);
- a load, store or atomic outside every tensor the launch was given raises `OutOfBounds`
  (bounds.py) instead of reading or writing the worker's heap;
- an autotuner cannot time its Configs (its benchmarker needs a GPU driver), so it keeps its
  first Config after pruning: that is the one verified.

Applied once per process, before any user module is imported, so `from torch import randn`
picks up the patched function. The worker process is dedicated to verification.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from .bounds import check_bounds

__all__ = ["DEVICE", "cpu_shim"]

_FACTORIES = (
    "randn", "rand", "randint", "randperm", "randn_like", "rand_like", "randint_like", "normal",
    "zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "tensor",
    "as_tensor", "empty_like", "zeros_like", "ones_like", "full_like", "empty_strided",
)

DEVICE = SimpleNamespace(
    name="NVIDIA H100 80GB HBM3 (tritonsmith CPU interpreter)", major=9, minor=0,
    multi_processor_count=132, total_memory=80 * 1024**3, L2_cache_size=50 * 1024**2,
    warp_size=32, max_threads_per_multi_processor=2048, regs_per_multiprocessor=65536,
    shared_memory_per_block_optin=232448, shared_memory_per_multiprocessor=233472,
    gcnArchName="", is_integrated=False, uuid="00000000-0000-0000-0000-000000000000",
)
"""What the device queries answer: an H100 (sm_90), the default compile target."""

_shimmed = False


def _cpu_device(device: Any) -> Any:
    """`device` with anything naming CUDA (a string, a torch.device, an ordinal) as "cpu"."""
    import torch

    if isinstance(device, int) and not isinstance(device, bool):
        return "cpu"
    if isinstance(device, str) and device.startswith("cuda"):
        return "cpu"
    if isinstance(device, torch.device) and device.type == "cuda":
        return "cpu"
    return device


def cpu_shim() -> None:
    """Patch torch and Triton, process-wide and once, as the module docstring says."""
    global _shimmed
    if _shimmed:
        return
    _devices_to_cpu()
    _gpu_queries()
    _triton_driver()
    _untimed_autotuning()
    _boolean_masks()
    check_bounds()
    _shimmed = True


def _boolean_masks() -> None:
    try:
        import numpy as np
        from triton.runtime.interpreter import InterpreterBuilder, TensorHandle
    except ImportError:  # pragma: no cover - an interpreter without these builder methods
        return

    def boolean(mask: Any) -> Any:
        data = getattr(mask, "data", None)
        if isinstance(data, np.ndarray) and data.dtype != np.bool_ and np.issubdtype(data.dtype, np.integer):
            return TensorHandle(data != 0, mask.dtype)
        return mask

    load, store, rmw = (InterpreterBuilder.create_masked_load, InterpreterBuilder.create_masked_store,
                        InterpreterBuilder.create_atomic_rmw)

    def masked_load(self: Any, ptrs: Any, mask: Any, *args: Any) -> Any:
        return load(self, ptrs, boolean(mask), *args)

    def masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *args: Any) -> Any:
        return store(self, ptrs, value, boolean(mask), *args)

    def atomic_rmw(self: Any, op: Any, ptr: Any, val: Any, mask: Any, *args: Any) -> Any:
        return rmw(self, op, ptr, val, boolean(mask), *args)

    InterpreterBuilder.create_masked_load = masked_load
    InterpreterBuilder.create_masked_store = masked_store
    InterpreterBuilder.create_atomic_rmw = atomic_rmw


def _devices_to_cpu() -> None:
    import torch

    original_device = torch.device

    class _DeviceMeta(type):
        def __instancecheck__(cls, instance: object) -> bool:
            return isinstance(instance, original_device)

    class _Device(metaclass=_DeviceMeta):
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            if args and _cpu_device(args[0]) is not args[0]:
                args = ("cpu",)  # "cuda", "cuda:1", ("cuda", 0): the index goes too
            if "type" in kwargs:
                kwargs["type"] = _cpu_device(kwargs["type"])
                kwargs.pop("index", None)
            return original_device(*args, **kwargs)

    def factory(function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if "device" in kwargs:
                kwargs["device"] = _cpu_device(kwargs["device"])
            return function(*args, **kwargs)

        wrapped.__name__ = getattr(function, "__name__", "factory")
        wrapped.__doc__ = function.__doc__
        return wrapped

    def mover(function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            if args:
                args = (_cpu_device(args[0]), *args[1:])
            if "device" in kwargs:
                kwargs["device"] = _cpu_device(kwargs["device"])
            return function(self, *args, **kwargs)

        return wrapped

    for name in _FACTORIES:
        if hasattr(torch, name):
            setattr(torch, name, factory(getattr(torch, name)))
    torch.device = _Device  # type: ignore[misc,assignment]
    torch.Tensor.cuda = lambda self, *args, **kwargs: self  # type: ignore[method-assign]
    torch.nn.Module.cuda = lambda self, *args, **kwargs: self  # type: ignore[method-assign]
    torch.Tensor.to = mover(torch.Tensor.to)  # type: ignore[method-assign]
    torch.nn.Module.to = mover(torch.nn.Module.to)  # type: ignore[method-assign]


def _gpu_queries() -> None:
    """`is_cuda`, `.device` and `torch.cuda.*` answer as on a one-GPU machine."""
    import torch

    real_device = torch._C.TensorBase.device
    cuda0 = _real_cuda_device()

    def device(self: Any) -> Any:
        value = real_device.__get__(self)
        return cuda0 if value.type == "cpu" else value

    torch.Tensor.is_cuda = property(lambda self: True)  # type: ignore[method-assign,assignment]
    torch.Tensor.device = property(device)  # type: ignore[method-assign,assignment]
    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.is_initialized = lambda: True
    cuda.device_count = lambda: 1
    cuda.current_device = lambda: 0
    cuda.set_device = lambda *args, **kwargs: None
    cuda.synchronize = lambda *args, **kwargs: None
    cuda.empty_cache = lambda: None
    cuda.get_device_name = lambda *args, **kwargs: DEVICE.name
    cuda.get_device_capability = lambda *args, **kwargs: (DEVICE.major, DEVICE.minor)
    cuda.get_device_properties = lambda *args, **kwargs: DEVICE  # type: ignore[assignment,return-value]
    cuda.is_bf16_supported = lambda *args, **kwargs: True
    cuda.device = lambda *args, **kwargs: contextlib.nullcontext()  # type: ignore[assignment,misc]
    cuda.manual_seed = lambda seed: None
    cuda.manual_seed_all = lambda seed: None


def _real_cuda_device() -> Any:
    """A genuine `torch.device("cuda", 0)` object (constructing one needs no GPU), made with
    the class the shim replaced."""
    import torch

    klass = type(torch.empty(0).device)
    return klass("cuda", 0)


def _triton_driver() -> None:
    """`triton.runtime.driver.active` for code that asks it about the device (the
    interpreter itself launches without a driver; without this, any query fails with
    "0 active drivers")."""
    from triton.runtime import driver

    properties = {
        "max_shared_mem": DEVICE.shared_memory_per_block_optin, "max_num_regs": DEVICE.regs_per_multiprocessor,
        "multiprocessor_count": DEVICE.multi_processor_count, "warpSize": DEVICE.warp_size,
        "sm_clock_rate": 1980000, "mem_clock_rate": 2619000, "mem_bus_width": 5120,
    }

    class _InterpreterDriver:
        utils = SimpleNamespace(get_device_properties=lambda device: dict(properties))
        backend = "cuda"

        @staticmethod
        def is_active() -> bool:
            return True

        def get_current_device(self) -> int:
            return 0

        def set_current_device(self, device: int) -> None:
            pass

        def get_current_stream(self, device: int | None = None) -> int:
            return 0

        def get_current_target(self) -> Any:
            from triton.backends.compiler import GPUTarget

            return GPUTarget("cuda", DEVICE.major * 10 + DEVICE.minor, DEVICE.warp_size)

        def get_device_interface(self) -> Any:
            import torch

            return torch.cuda

        def get_active_torch_device(self) -> Any:
            import torch

            return torch.device("cpu")

        def get_benchmarker(self) -> Any:
            return lambda *args, quantiles=None, **kwargs: [1.0] * len(quantiles) if quantiles else 1.0

        def get_empty_cache_for_benchmark(self) -> Any:
            import torch

            return torch.empty(1)

        def clear_cache(self, cache: Any) -> None:
            pass

    with contextlib.suppress(Exception):  # an API this Triton does not have: queries fail as before
        driver.set_active(_InterpreterDriver())  # type: ignore[arg-type]


def _untimed_autotuning() -> None:
    """Under the interpreter an autotuner cannot time its Configs (its benchmarker needs a GPU
    driver: "0 active drivers"). Every Config then reports the same time without running, so
    the autotuner keeps its first Config (after any pruning): that is the one verified."""
    from triton.runtime.autotuner import Autotuner

    def untimed(kernel_call: Any, quantiles: Any = None, **kwargs: Any) -> Any:
        return [1.0] * len(quantiles) if quantiles else 1.0

    Autotuner.do_bench = property(lambda self: untimed)  # type: ignore[method-assign,assignment]
