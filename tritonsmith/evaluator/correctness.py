"""Worker side of KernelBench correctness verification: the `kb_inputs`, `kb_candidate` and
`kb_reference` jobs (the protocol and why it is split so is in `verify.py`).

Imported lazily by the worker (it imports torch inside functions, and runs user code). Files
are exchanged through a data directory the parent creates and passes as an absolute path:

- `init.pt`: the init inputs and the reference model's state_dict (written by kb_inputs);
- `inputs_<t>.pt`: trial t's forward inputs (kb_inputs);
- `candidate_<t>.pt`: the candidate's outputs for trial t (kb_candidate).

Expected outputs are never written: kb_reference computes them after the candidate has run and
compares in its own process. Every load uses `weights_only=True`, so a file the candidate wrote
cannot run code in the reference's process.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "compare_outputs",
    "cpu_shim",
    "handle_candidate",
    "handle_inputs",
    "handle_reference",
]

_serial = itertools.count()
_shimmed = False

_FACTORIES = (
    "randn", "rand", "randint", "randperm", "randn_like", "rand_like", "randint_like", "normal",
    "zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "tensor",
    "as_tensor", "empty_like", "zeros_like", "ones_like", "full_like", "empty_strided",
)


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
    """Make code written for `device="cuda"` run on the CPU, for Triton's interpreter.

    KernelBench problems and candidates say "cuda" everywhere; without a GPU, and with
    TRITON_INTERPRET=1, kernels run on CPU tensors. Patched, process-wide and once: factory
    functions' `device=`, `torch.device("cuda")`, `Tensor.cuda`/`Module.cuda`,
    `Tensor.to`/`Module.to` with a CUDA device, and `torch.cuda.is_available()` (False) with
    `synchronize` a no-op. Applied before any user module is imported, so `from torch import
    randn` picks up the patched function. The worker process is dedicated to verification.
    """
    global _shimmed
    if _shimmed:
        return
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
    torch.cuda.is_available = lambda: False
    torch.cuda.synchronize = lambda *args, **kwargs: None
    _shimmed = True


def _prepare(payload: dict[str, Any]) -> str:
    """Set up the process for the payload's mode; returns the torch device to use."""
    if payload.get("mode", "interpreter") == "interpreter":
        os.environ["TRITON_INTERPRET"] = "1"  # the pool sets it too; triton reads it lazily
        cpu_shim()
        return "cpu"
    return "cuda"


@contextmanager
def _module(path: str, role: str) -> Iterator[ModuleType]:
    """Import a real file under a fresh name (`@triton.jit` needs real source lines); the name
    is kept in `sys.modules` while the job runs, for dataclasses and pickling."""
    name = f"_tritonsmith_kb_{role}_{next(_serial)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)


def _to(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to(v, device) for v in value)
    return value


def _clone(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v) for v in value)
    return value


def _tensor_hash(tensor: Any) -> str:
    digest = hashlib.sha256()
    flat = tensor.detach().contiguous().reshape(-1)
    digest.update(f"{tuple(tensor.shape)}|{tensor.dtype}".encode())
    digest.update(flat.cpu().view(__import__("torch").uint8).numpy().tobytes())
    return digest.hexdigest()


def _hash_all(values: Any) -> list[str]:
    import torch

    return [_tensor_hash(v) if isinstance(v, torch.Tensor) else repr(v) for v in values]


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load(path: Path) -> Any:
    import torch

    return torch.load(path, map_location="cpu", weights_only=True)


def _build_reference(module: ModuleType, seed: int, device: str) -> tuple[Any, list[Any]]:
    """`Model(*get_init_inputs())` under `manual_seed(seed)`, as KernelBench builds it."""
    import torch

    torch.manual_seed(seed)
    init_inputs = list(module.get_init_inputs())
    torch.manual_seed(seed)
    with torch.no_grad():
        model = module.Model(*_to(init_inputs, device))
    return model.to(device).eval(), init_inputs


def _os_threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def handle_inputs(payload: dict[str, Any]) -> dict[str, Any]:
    """kb_inputs: build the reference model, draw trial seeds, save init inputs, state_dict and
    each trial's inputs. Returns the trial seeds and the saved files' hashes."""
    import torch

    device = _prepare(payload)
    data = Path(payload["data_dir"])
    seed = int(payload.get("seed", 42))
    with _module(payload["reference"], "reference") as module:
        model, init_inputs = _build_reference(module, seed, device)
        state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        torch.save({"init_inputs": init_inputs, "state_dict": state}, data / "init.pt")
        torch.manual_seed(42)
        trial_seeds = [int(s) for s in torch.randint(0, 2**31 - 1, (int(payload["trials"]),))]
        hashes = []
        shapes = []
        for t, trial_seed in enumerate(trial_seeds):
            torch.manual_seed(trial_seed)
            inputs = [_clone(v) for v in module.get_inputs()]
            path = data / f"inputs_{t}.pt"
            torch.save(_to(inputs, "cpu"), path)
            hashes.append(_file_hash(path))
            shapes.append([list(v.shape) if isinstance(v, torch.Tensor) else repr(v) for v in inputs])
    return {"trial_seeds": trial_seeds, "input_hashes": hashes, "input_shapes": shapes,
            "init_hash": _file_hash(data / "init.pt")}


def handle_candidate(payload: dict[str, Any]) -> dict[str, Any]:
    """kb_candidate: run ModelNew on every trial's inputs and save its outputs.

    Imports only the candidate's file. Returns `{"error": ...}` (rather than raising) for a
    check that failed, naming the trick; an exception from the candidate itself propagates
    and the worker reports it.
    """
    import torch

    device = _prepare(payload)
    data = Path(payload["data_dir"])
    seed = int(payload.get("seed", 42))
    init = _load(data / "init.pt")
    # Start torch's own thread pools before the baseline, so only the candidate's threads count.
    (torch.ones(64, 64) @ torch.ones(64, 64)).add_(1).sum().item()
    python_threads = set(threading.enumerate())
    os_threads = _os_threads()

    def thread_error(when: str) -> str | None:
        extra = [t.name for t in threading.enumerate() if t not in python_threads and t.is_alive()]
        if extra:
            return (f"started a background thread {when} ({', '.join(extra)}) "
                    "(exploit 8: background thread finishing the work after forward returns)")
        if _os_threads() > os_threads:
            return (f"started {_os_threads() - os_threads} OS thread(s) {when} "
                    "(exploit 8: background thread finishing the work after forward returns)")
        return None

    with _module(payload["candidate"], "candidate") as module:
        if (error := thread_error("on import")) is not None:
            return {"error": error}
        torch.manual_seed(seed)
        with torch.no_grad():
            model = module.ModelNew(*_to(init["init_inputs"], device))
        model = model.to(device).eval()
        state = init["state_dict"]
        own = model.state_dict()
        loaded = bool(state) and set(own) == set(state) and all(
            own[k].shape == state[k].shape for k in state)
        if loaded:
            model.load_state_dict(state)
        for t in range(len(payload["trial_seeds"])):
            inputs = _to(_load(data / f"inputs_{t}.pt"), device)
            pristine = _clone(inputs)  # the candidate gets copies; hashes taken on them
            before = _hash_all(pristine)
            with torch.no_grad():
                output = model(*pristine)
            if (error := thread_error(f"in forward (trial {t + 1})")) is not None:
                return {"error": error}
            outputs = list(output) if isinstance(output, (tuple, list)) else [output]
            for i, out in enumerate(outputs):
                if type(out) is not torch.Tensor:
                    return {"error": (
                        f"trial {t + 1}: output {i} is a {type(out).__module__}.{type(out).__qualname__}, "
                        "not exactly torch.Tensor (exploit 9: tensor subclass deferring the work)")}
            snapshot = [_tensor_hash(o) for o in outputs]
            if _hash_all(pristine) != before:
                changed = [i for i, (a, b) in enumerate(zip(before, _hash_all(pristine), strict=True)) if a != b]
                return {"error": (
                    f"trial {t + 1}: ModelNew.forward modified its inputs in place (input "
                    f"{', '.join(map(str, changed))}) (exploit 6: modified inputs make the reference trivial)")}
            time.sleep(0.02)  # anything still writing the output shows up now
            if [_tensor_hash(o) for o in outputs] != snapshot:
                return {"error": (
                    f"trial {t + 1}: the output changed after forward returned "
                    "(exploit 8: background work finishing after forward returns)")}
            torch.save([o.detach().cpu().clone() for o in outputs], data / f"candidate_{t}.pt")
    return {"state_dict_loaded": loaded, "trials": len(payload["trial_seeds"])}


def compare_outputs(expected: list[Any], actual: list[Any], tolerances: dict[str, float]) -> str | None:
    """None when `actual` matches `expected`, else one line naming the output, the largest
    absolute error and its index. NaN/Inf must match exactly (equal_nan=False semantics: a
    NaN where the reference has a number fails, NaN is no wildcard)."""
    import torch

    if len(expected) != len(actual):
        return f"returned {len(actual)} output(s), the reference {len(expected)}"
    for i, (ref, out) in enumerate(zip(expected, actual, strict=True)):
        where = f"output {i}" if len(expected) > 1 else "output"
        if not isinstance(out, torch.Tensor) or type(out) is not torch.Tensor:
            return f"{where} is {type(out).__name__}, not torch.Tensor"
        if tuple(out.shape) != tuple(ref.shape):
            return f"{where} has shape {tuple(out.shape)}, the reference {tuple(ref.shape)}"
        if out.dtype != ref.dtype:
            return f"{where} has dtype {out.dtype}, the reference {ref.dtype}"
        tol = tolerances.get(str(ref.dtype).removeprefix("torch."), tolerances["float32"])
        if ref.numel() == 0:
            continue
        r, o = ref.double(), out.double()
        bad_special = (torch.isfinite(r) != torch.isfinite(o)) | (torch.isnan(r) != torch.isnan(o))
        bad_special |= torch.isinf(r) & torch.isinf(o) & (r != o)
        if bool(bad_special.any()):
            flat = int(bad_special.reshape(-1).nonzero()[0].item())
            index = tuple(int(v) for v in torch.unravel_index(torch.tensor(flat), ref.shape))
            return (f"{where}: {o.reshape(-1)[flat].item()} at index {index} where the reference has "
                    f"{r.reshape(-1)[flat].item()} (NaN/Inf must match)")
        if torch.allclose(o, r, atol=tol, rtol=tol, equal_nan=False):
            continue
        finite = torch.isfinite(r)
        error = torch.where(finite, (o - r).abs(), torch.zeros_like(r))
        flat = int(error.reshape(-1).argmax().item())
        index = tuple(int(v) for v in torch.unravel_index(torch.tensor(flat), ref.shape))
        mismatched = int((~torch.isclose(o, r, atol=tol, rtol=tol, equal_nan=False)).sum().item())
        return (f"{where}: max abs error {error.reshape(-1)[flat].item():.4g} at index {index} "
                f"(got {o.reshape(-1)[flat].item():.6g}, expected {r.reshape(-1)[flat].item():.6g}; "
                f"{mismatched} of {ref.numel()} elements outside atol=rtol={tol:g})")
    return None


def handle_reference(payload: dict[str, Any]) -> dict[str, Any]:
    """kb_reference: run the reference on each trial's inputs, regenerated under the trial
    seed, and compare with the candidate's saved outputs. Runs after the candidate, so no
    expected output existed while candidate code ran."""
    import torch

    device = _prepare(payload)
    data = Path(payload["data_dir"])
    seed = int(payload.get("seed", 42))
    tolerances = {str(k): float(v) for k, v in payload["tolerances"].items()}
    results: list[dict[str, Any]] = []
    with _module(payload["reference"], "reference") as module:
        model, _ = _build_reference(module, seed, device)
        for t, trial_seed in enumerate(payload["trial_seeds"]):
            if _file_hash(data / f"inputs_{t}.pt") != payload["input_hashes"][t]:
                return {"error": f"trial {t + 1}: the saved inputs were altered after they were written "
                                 "(exploit 19: editing the harness's files)", "trials": results}
            torch.manual_seed(int(trial_seed))
            inputs = _to([_clone(v) for v in module.get_inputs()], device)
            with torch.no_grad():
                output = model(*inputs)
            expected = [o.detach().cpu() for o in (output if isinstance(output, (tuple, list)) else [output])]
            actual = _load(data / f"candidate_{t}.pt")
            error = compare_outputs(expected, list(actual), tolerances)
            results.append({
                "trial": t + 1, "seed": int(trial_seed), "ok": error is None,
                "error": None if error is None else f"trial {t + 1} (seed {trial_seed}): {error}",
            })
    return {"trials": results}
