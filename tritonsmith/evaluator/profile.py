"""Worker side of the predicted GPU time: the `profile` job counts what one forward pass of the
candidate does, at the sizes it is predicted for, under Triton's interpreter.

The interpreter runs every program of a grid; at real sizes that is millions of them. Here each
launch runs a *sample* of its programs (per grid axis: a few drawn at random under a seed the
parent picks, and the last, which holds the tail), with the real grid's size and `program_id`s,
and every count is weighted by how many programs the sample stands for. A kernel that leaves its
work to programs the sample would skip is caught by coverage: when the sampled programs, scaled
up, wrote less than half of an output the forward pass returns, the pass runs again with every
program (exact, and as slow as the interpreter is). What is counted, per launch:

- bytes loaded and stored by the lanes a mask lets through, and the lanes issued (utilisation),
  attributed to the tensor argument each address falls in (a tensor read twice is reuse that the
  L2 cache may serve; read once, it comes from DRAM), and the most loads one program made (each
  waits for memory: a program that walks a whole row alone is latency-bound however wide);
- `tl.dot` FLOPs by input type and precision (tensor cores, or FMA for IEEE fp32);
- elementwise operations, as warp instructions for the launch's `num_warps` (a 16-element block
  on 4 warps still issues one instruction per warp), transcendental ones at a quarter rate;
- the launch's grid, `num_warps`, `num_stages` and constexprs (to find its compile resources).

PyTorch operators the forward pass runs outside kernels are recorded too (bytes in and out;
FLOPs of matrix products), so moving work from a kernel to PyTorch is not free in the prediction.

The outputs of a sampled run are wrong by design (most programs never ran); nothing here
checks them. Imported lazily by the worker: imports torch and Triton and runs user code.
"""

from __future__ import annotations

import contextlib
import copy
import math
import operator
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .correctness import _load, _prepare, _to, import_file, load_problem, written
from .hollow import HollowError, hollow

__all__ = ["handle_profile", "program_sample"]

SAMPLES_PER_AXIS = (8, 3, 2)
"""Programs run per grid axis (x, y, z) at most; the product bounds the interpreter's work."""
HOLLOW_SAMPLES_PER_AXIS = (4, 2, 2)
"""The same at the sizes as written (a hollow pass, `hollow.py`), where a program runs its real
loops: each costs what a whole small grid does."""
FIRST_SAMPLES_PER_AXIS = (2, 1, 1)
"""The same, in a hollow pass, for an autotuner's trial of one Config (a kernel may carry a
hundred). The first call's other launches run no program there: nothing of them is counted, and
their outputs hold no values to pass on."""
LOOP_SAMPLES = 4
"""Iterations a kernel's `for` loop over `range`/`tl.range` runs at most in a hollow pass: the
first, the last (a tail's mask) and the rest drawn at random, each counted for the iterations it
stands for (a K loop of a GEMM at its real size is hundreds of identical iterations)."""

_SFU = frozenset({"create_exp", "create_exp2", "create_log", "create_log2", "create_sin", "create_cos",
                  "create_sqrt", "create_precise_sqrt", "create_rsqrt", "create_erf", "create_fdiv",
                  "create_precise_divf", "create_frem", "create_sdiv", "create_udiv", "create_srem",
                  "create_urem", "create_idiv"})
"""Operations the special-function units (or a multi-instruction sequence) run: a quarter rate."""
_ALU = frozenset({"create_fadd", "create_fmul", "create_fsub", "create_fneg", "create_mul", "create_add",
                  "create_sub", "create_shl", "create_lshr", "create_ashr", "create_minsi", "create_minui",
                  "create_minimumf", "create_minnumf", "create_maxsi", "create_maxui", "create_maximumf",
                  "create_maxnumf", "create_icmp", "create_fcmp", "create_and", "create_xor", "create_or",
                  "create_select", "create_fma", "create_fabs", "create_iabs", "create_floor", "create_ceil",
                  "create_clampf", "create_umulhi", "create_si_to_fp", "create_ui_to_fp", "create_fp_to_si",
                  "create_fp_to_ui", "create_fp_ext", "create_fp_trunc", "create_int_cast", "create_fp_to_fp",
                  "create_approx_divf", "create_extern_elementwise"})
_VIEWS = frozenset({"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "view", "_unsafe_view",
                    "reshape", "as_strided", "expand", "permute", "transpose", "t", "unsqueeze", "squeeze",
                    "select", "slice", "detach", "alias", "lift_fresh", "set_", "new_empty", "new_empty_strided",
                    "size", "stride", "sym_size", "sym_stride", "is_contiguous", "_local_scalar_dense",
                    "resize_", "split", "chunk", "unbind", "numel", "dim", "item"})
"""PyTorch operators that move no data on a GPU (allocations, views, metadata)."""
_MATMULS = frozenset({"mm", "addmm", "bmm", "baddbmm", "matmul", "linear"})
_CASTING_REDUCTIONS = frozenset({"sum", "mean", "prod", "nansum", "cumsum", "cumprod", "linalg_vector_norm"})
"""Reductions whose `dtype=` casts the input before reducing: ATen's `make_reduction` copies the
input to that type (`self.to(dtype)`) inside the one operator, so the copy is traffic the
operator's arguments and result do not show. The one exception, a half or bfloat16 input summed
in float32 on a GPU, is read as it is (`_implicit_cast_bytes`)."""


def program_sample(n: int, limit: int | None, rng: random.Random | None = None) -> list[tuple[int, float]]:
    """Which of `n` programs of one axis run, and how many each stands for: `limit - 1` drawn
    at random from the first `n - 1` (by `rng`; evenly spread without one), sharing them
    equally, and the last, standing for itself (it holds the tail a size that is no multiple of
    the block leaves). Every program when `limit` is None or `n <= limit`; with a `limit` of 1,
    one of the first `n - 1`, standing for all."""
    if limit is None or n <= limit:
        return [(i, 1.0) for i in range(n)]
    if limit <= 1:  # one program stands for all: one of the full ones, not the tail
        return [(rng.randrange(n - 1) if rng is not None else (n - 1) // 2, float(n))]
    spread = limit - 1
    if rng is not None:
        picks = sorted(rng.sample(range(n - 1), spread))
    else:
        picks = [round(i * (n - 2) / max(1, spread - 1)) for i in range(spread)]
    weight = (n - 1) / spread
    return [(p, weight) for p in picks] + [(n - 1, 1.0)]


@dataclass
class _Launch:
    kernel: str
    num_warps: int
    num_stages: int | None
    constexprs: dict[str, Any]
    args: list[tuple[int, int, str]]  # (address, bytes, name) of each tensor argument
    types: dict[str, str] = field(default_factory=dict)  # runtime parameter -> signature type
    grid: tuple[int, int, int] = (1, 1, 1)
    sampled: int = 0
    load_bytes: float = 0.0
    store_bytes: float = 0.0
    atomic_bytes: float = 0.0
    lanes: float = 0.0  # lanes issued by loads and stores
    active: float = 0.0  # lanes a mask let through
    memory_ops: float = 0.0  # load and store instructions (per program, weighted)
    program_loads: float = 0.0  # loads of the program running now (sampled loops: weighted)
    max_program_loads: float = 0.0  # the most loads one sampled program waited for, in sequence
    loop_iterations: float = 0.0  # innermost loop iterations, all programs (weighted): what a spill in a loop repeats
    # Elements per operation -> operations (weighted; a transcendental counts four): the warp
    # instructions they issue follow from `num_warps` (`warp_instructions`), so a trial that
    # differs from another only in `num_warps` or `num_stages` shares its counts (`_autotuning`).
    issued: dict[int, float] = field(default_factory=dict)
    dot_flops: dict[str, float] = field(default_factory=dict)
    per_arg: dict[str, list[float]] = field(default_factory=dict)  # name -> [read, written]
    # An autotuner's trial of one Config ({"group", "config", "of"}), or the launch it tuned
    # (`tuned`: the group whose trials it chose from): see `_autotuning`.
    tuning: dict[str, Any] | None = None
    tuned: str | None = None
    _sorted: list[tuple[int, int, str]] | None = None

    def issue(self, elements: int, weight: float) -> None:
        self.issued[elements] = self.issued.get(elements, 0.0) + weight

    @property
    def warp_instructions(self) -> float:
        return sum(weight * _warp_instructions(elements, self.num_warps) for elements, weight in self.issued.items())

    def by_address(self) -> list[tuple[int, int, str]]:
        """The tensor arguments sorted by address, for attributing an address to its tensor."""
        if self._sorted is None:
            self._sorted = sorted(self.args)
        return self._sorted

    def to_json(self) -> dict[str, Any]:
        programs = self.grid[0] * self.grid[1] * self.grid[2]
        return {
            "kernel": self.kernel, "grid": list(self.grid), "programs": programs, "sampled": self.sampled,
            "num_warps": self.num_warps, "num_stages": self.num_stages,
            "constexprs": {k: v for k, v in self.constexprs.items() if isinstance(v, (int, float, str, bool))},
            "load_bytes": self.load_bytes, "store_bytes": self.store_bytes, "atomic_bytes": self.atomic_bytes,
            "lane_utilisation": self.active / self.lanes if self.lanes else 1.0,
            "memory_ops": self.memory_ops, "warp_instructions": self.warp_instructions,
            "max_program_loads": max(self.max_program_loads, self.program_loads),
            "loop_iterations": self.loop_iterations,
            "dot_flops": self.dot_flops, "types": self.types,
            "tensors": [{"name": name, "bytes": size, "read": self.per_arg.get(name, [0.0, 0.0])[0],
                         "written": self.per_arg.get(name, [0.0, 0.0])[1]} for _, size, name in self.args],
            **({"tuning": self.tuning} if self.tuning else {}), **({"tuned": self.tuned} if self.tuned else {}),
        }


def _counted_as(twin: _Launch, launch: _Launch) -> _Launch:
    """`launch` (a trial that ran no program) with `twin`'s counts: the same programs ran there.
    Its `tuning` names the Config they were counted in (`counts_of`)."""
    return replace(copy.deepcopy(twin), num_warps=launch.num_warps, num_stages=launch.num_stages,
                   tuning={**(launch.tuning or {}), "counts_of": (twin.tuning or {}).get("config")}, _sorted=None)


class _Counter:
    """Counts for the launch running now (`current`), weighted by the sampled program's share."""

    def __init__(self) -> None:
        self.launches: list[_Launch] = []
        self.torch_ops: dict[str, dict[str, float]] = {}
        self.host_ops = 0  # PyTorch operators dispatched outside kernels (views included)
        self.current: _Launch | None = None
        self.weight = 1.0
        self.plan: list[list[tuple[int, float]]] = []
        self.in_kernel = 0
        self.rng: random.Random | None = None
        self.limits: tuple[int | None, ...] = SAMPLES_PER_AXIS  # (None,) * 3: every program
        self.first_call = False  # the forward pass's first call runs (`_steady_pass`)
        self.hollow = False  # a pass without data (hollow.py): loops and trials sampled, the first call empty
        self.loop_weight = 1.0  # iterations the loop iteration running now stands for (nested: the product)
        self.nested = False  # a loop ran inside the loop iteration running now (it is not innermost)
        self.groups: dict[tuple[int, str], str] = {}  # (autotuner, its key) -> group name
        self.group: str | None = None  # the autotuner running now
        self.trial: dict[str, Any] | None = None  # the Config it is trying now
        self.tuners: list[Any] = []  # the autotuners seen, whose choices a second pass forgets
        self.trials: dict[tuple[Any, ...], _Launch] = {}  # a trial's group, kernel, constexprs, grid -> its launch

    def memory(self, pointers: Any, mask: Any, itemsize: int, write: bool, atomic: bool = False) -> None:
        import numpy as np

        launch = self.current
        if launch is None:
            return
        w = self.weight
        lanes = int(np.size(pointers))
        active_mask = np.broadcast_to(np.asarray(mask, dtype=bool), np.shape(pointers))
        active = int(active_mask.sum())
        moved = active * itemsize * w
        launch.lanes += lanes * w
        launch.active += active * w
        launch.memory_ops += w
        if not write and not atomic:
            launch.program_loads += self.loop_weight
        launch.issue(lanes, w)
        if atomic:
            launch.atomic_bytes += moved
        elif write:
            launch.store_bytes += moved
        else:
            launch.load_bytes += moved
        if active and launch.args:
            addresses = np.asarray(pointers, dtype=np.uint64)[active_mask]
            ordered = launch.by_address()
            starts = np.array([a for a, _, _ in ordered], dtype=np.uint64)
            slot = np.searchsorted(starts, addresses, side="right") - 1
            counts = np.bincount(slot[slot >= 0], minlength=len(ordered))
            for k, count in enumerate(counts):
                if count:
                    _, _, name = ordered[k]
                    entry = launch.per_arg.setdefault(name, [0.0, 0.0])
                    entry[1 if write or atomic else 0] += float(count) * itemsize * w
                    if atomic:
                        entry[0] += float(count) * itemsize * w

    def elementwise(self, name: str, elements: int) -> None:
        launch = self.current
        if launch is None:
            return
        launch.issue(elements, self.weight * (4 if name in _SFU else 1))

    def dot(self, m: int, n: int, k: int, kind: str) -> None:
        if self.current is not None:
            flops = self.current.dot_flops
            flops[kind] = flops.get(kind, 0.0) + 2.0 * m * n * k * self.weight


def _warp_instructions(elements: int, num_warps: int) -> float:
    """Warp instructions one operation on `elements` lanes issues on `num_warps` warps: each
    thread holds ceil(elements / threads) of them, and every warp issues."""
    threads = 32 * max(1, num_warps)
    return float(max(1, math.ceil(elements / threads)) * max(1, num_warps))


def _dot_kind(a: Any, precision: Any) -> str:
    """"fp16", "bf16", "fp8", "int8", "tf32" or "fp32" (IEEE: no tensor cores)."""
    name = str(getattr(a.dtype, "name", a.dtype))
    if "fp8" in name:
        return "fp8"
    if name in ("fp16", "bf16"):
        return name
    if name.startswith(("int8", "i8", "uint8", "u8")):
        return "int8"
    text = str(precision).lower()
    return "fp32" if "ieee" in text else "tf32"


@contextlib.contextmanager
def counting(counter: _Counter) -> Iterator[None]:
    """Patch the interpreter's builder and grid loop (restored on exit) so launches run a
    sample of their programs and report what they do to `counter`."""
    import numpy as np
    import triton.runtime.interpreter as interpreter

    builder = interpreter.interpreter_builder
    executor = interpreter.GridExecutor
    patched: dict[str, Any] = {}

    def patch(name: str, wrapper: Any) -> None:
        patched[name] = builder.__dict__.get(name, _MISSING)
        setattr(builder, name, wrapper)

    original = {name: getattr(builder, name) for name in dir(builder) if name.startswith("create_")}

    def masked_load(ptrs: Any, mask: Any, other: Any, *rest: Any) -> Any:
        counter.memory(ptrs.data, mask.data, _itemsize(ptrs), write=False)
        return original["create_masked_load"](ptrs, mask, other, *rest)

    def masked_store(ptrs: Any, value: Any, mask: Any, *rest: Any) -> Any:
        counter.memory(ptrs.data, mask.data, _itemsize(ptrs), write=True)
        return original["create_masked_store"](ptrs, value, mask, *rest)

    def atomic_rmw(op: Any, ptr: Any, val: Any, mask: Any, *rest: Any) -> Any:
        counter.memory(ptr.data, mask.data, _itemsize(ptr), write=True, atomic=True)
        return original["create_atomic_rmw"](op, ptr, val, mask, *rest)

    def atomic_cas(ptr: Any, *rest: Any) -> Any:
        counter.memory(ptr.data, np.ones(np.shape(ptr.data), dtype=bool), _itemsize(ptr), write=True, atomic=True)
        return original["create_atomic_cas"](ptr, *rest)

    def dot(a: Any, b: Any, d: Any, precision: Any, *rest: Any) -> Any:
        shape_a, shape_b = np.shape(a.data), np.shape(b.data)
        batch = int(np.prod(shape_a[:-2])) if len(shape_a) > 2 else 1
        counter.dot(batch * shape_a[-2], shape_b[-1], shape_a[-1], _dot_kind(a, precision))
        return original["create_dot"](a, b, d, precision, *rest)

    def elementwise(name: str) -> Any:
        function = original[name]

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = function(*args, **kwargs)
            counter.elementwise(name, int(np.size(getattr(result, "data", 0))))
            return result
        return wrapper

    def set_grid_dim(*_: Any) -> Any:
        launch = counter.current
        grid = launch.grid if launch is not None else (1, 1, 1)
        return original_grid_dim(*grid)

    def set_grid_idx(x: int, y: int, z: int) -> Any:
        plan = counter.plan
        picks = [plan[0][x], plan[1][y], plan[2][z]]
        counter.weight = picks[0][1] * picks[1][1] * picks[2][1]
        counter.loop_weight, counter.nested = 1.0, False
        launch = counter.current
        if launch is not None:
            launch.sampled += 1
            launch.max_program_loads = max(launch.max_program_loads, launch.program_loads)
            launch.program_loads = 0
        return original_grid_idx(picks[0][0], picks[1][0], picks[2][0])

    original_grid_dim, original_grid_idx = builder.set_grid_dim, builder.set_grid_idx
    original_call = executor.__call__
    function = interpreter.InterpretedFunction
    original_function_call = function.__call__
    patched_for: set[Any] = set()  # the nested @jit functions whose globals this launch patched

    def function_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        # The interpreter patches `triton.language` for a nested @jit function (`tl.max`,
        # `tl.sum`, the user's helpers) on every call, by walking the modules' members: most of
        # a loop's time. Once per function and launch is the same patch.
        if not counter.in_kernel:
            return original_function_call(self, *args, **kwargs)
        if self.fn not in patched_for:
            interpreter._patch_lang(self.fn)
            patched_for.add(self.fn)
        try:
            return self.rewrite()(*args, **kwargs)
        except Exception as e:
            raise interpreter.InterpreterError(repr(e)) from e

    def call(self: Any, *args_dev: Any, **kwargs: Any) -> Any:
        launch = _Launch(kernel=getattr(self.fn, "__name__", "kernel"), num_warps=int(kwargs.get("num_warps") or 4),
                         num_stages=kwargs.get("num_stages"), constexprs={},
                         args=_tensor_args(self.arg_names, args_dev, kwargs))
        if counter.trial is not None:
            launch.tuning = dict(counter.trial)
        elif counter.group is not None:
            launch.tuned = counter.group
        names = list(self.arg_names)
        for i, value in enumerate(args_dev):
            if i < len(names) and names[i] in self.constexprs:
                launch.constexprs[names[i]] = value
        launch.constexprs.update({k: v for k, v in kwargs.items() if k in self.constexprs})
        values = dict(zip(names, args_dev, strict=False)) | {k: v for k, v in kwargs.items() if k in names}
        launch.types = {k: t for k, v in values.items() if k not in self.constexprs and (t := _signature_type(v))}
        grid_of = self.grid
        twin: _Launch | None = None

        def sampled(arguments: Any) -> tuple[int, ...]:
            nonlocal twin
            real = grid_of(arguments) if callable(grid_of) else grid_of
            real = tuple(int(g) for g in real) + (1,) * (3 - len(real))
            launch.grid = (real[0], real[1], real[2])
            if counter.hollow and counter.first_call and not launch.tuning:
                counter.plan = [[], [], []]  # counted by no one, read by no one: no program runs
                return (0, 0, 0)
            if launch.tuning:
                # A trial whose Config differs from an earlier one only in what the kernel cannot
                # see (`num_warps`, `num_stages`) runs the same programs: it takes their counts.
                key = (launch.tuning.get("group"), launch.kernel, repr(sorted(launch.constexprs.items())), launch.grid)
                earlier = counter.trials.setdefault(key, launch)
                if earlier is not launch:
                    twin = earlier
                    counter.plan = [[], [], []]
                    return (0, 0, 0)
            limits = FIRST_SAMPLES_PER_AXIS if launch.tuning and counter.hollow else counter.limits
            counter.plan = [program_sample(n, limit, counter.rng) for n, limit in zip(real, limits, strict=True)]
            return tuple(len(p) for p in counter.plan)

        self.grid = sampled
        patched_for.clear()
        counter.current, counter.weight = launch, 1.0
        counter.in_kernel += 1
        try:
            return original_call(self, *args_dev, **kwargs)
        finally:
            counter.in_kernel -= 1
            self.grid = grid_of
            counter.current = None
            counter.launches.append(launch if twin is None else _counted_as(twin, launch))

    patch("create_masked_load", masked_load)
    patch("create_masked_store", masked_store)
    patch("create_atomic_rmw", atomic_rmw)
    patch("create_atomic_cas", atomic_cas)
    patch("create_dot", dot)
    for name in original:
        if name in _ALU or name in _SFU:
            patch(name, elementwise(name))
    patch("set_grid_dim", set_grid_dim)
    patch("set_grid_idx", set_grid_idx)
    executor.__call__ = call
    function.__call__ = function_call
    try:
        with _torch_ops(counter), _autotuning(counter), _sampled_loops(counter):
            yield
    finally:
        executor.__call__ = original_call
        function.__call__ = original_function_call
        for name, before in patched.items():
            if before is _MISSING:
                with contextlib.suppress(AttributeError):
                    delattr(builder, name)
            else:
                setattr(builder, name, before)


_MISSING = object()
_TORCH_TYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "int8": "i8",
                "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "i1",
                "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5"}


def _signature_type(value: Any) -> str | None:
    """The compile signature's type of a launch argument, as Triton's launcher would type it."""
    if type(value).__name__ == "TensorWrapper":
        return "*" + _TORCH_TYPES.get(str(value.dtype).removeprefix("torch."), "fp32")
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        return "*" + _TORCH_TYPES.get(str(value.dtype).removeprefix("torch."), "fp32")
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    return None


def _itemsize(pointers: Any) -> int:
    element = pointers.get_element_ty()
    bits = int(getattr(element, "primitive_bitwidth", 32) or 32)
    return max(1, bits // 8)


def _tensor_args(names: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[int, int, str]]:
    """(address, bytes, name) of each tensor argument: the storage it may reach from its offset."""
    found: list[tuple[int, int, str]] = []
    pairs = list(zip(list(names), args, strict=False)) + list(kwargs.items())
    for name, value in pairs:
        base = value.base if type(value).__name__ == "TensorWrapper" else value  # tl.reinterpret's wrapper
        if hasattr(base, "data_ptr") and hasattr(base, "untyped_storage"):
            storage = base.untyped_storage()
            start = int(base.data_ptr())
            end = int(storage.data_ptr()) + int(storage.nbytes())
            if end > start:
                found.append((start, end - start, str(name)))
    return found


@contextlib.contextmanager
def _torch_ops(counter: _Counter) -> Iterator[None]:
    """Record PyTorch operators outside kernels: name -> calls, bytes in and out, FLOPs."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    def nbytes(values: Any) -> int:
        total = 0
        for value in values if isinstance(values, (list, tuple)) else [values]:
            if isinstance(value, torch.Tensor):
                total += value.numel() * value.element_size()
            elif isinstance(value, (list, tuple)):
                total += nbytes(value)
        return total

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            result = func(*args, **(kwargs or {}))
            if counter.in_kernel:
                return result
            counter.host_ops += 1  # each costs the host a dispatch, views and allocations too
            name = func.overloadpacket.__name__.rstrip("_") or func.overloadpacket.__name__
            if name in _VIEWS or name.removesuffix("_") in _VIEWS:
                return result
            entry = counter.torch_ops.setdefault(name, {"calls": 0.0, "bytes": 0.0, "flops": 0.0})
            entry["calls"] += 1
            entry["bytes"] += nbytes(list(args)) + nbytes(result) + _implicit_cast_bytes(name, args, kwargs)
            if name in _MATMULS:
                tensors = [a for a in args if isinstance(a, torch.Tensor)]
                if len(tensors) >= 2 and isinstance(result, torch.Tensor) and tensors[-1].dim() >= 2:
                    k = tensors[-1].shape[-2]
                    entry["flops"] += 2.0 * result.numel() * int(k)
            return result

    with Recorder():
        yield


def _implicit_cast_bytes(name: str, args: Any, kwargs: Any) -> int:
    """The bytes of the copy a reduction makes when its `dtype=` differs from its input's
    (`_CASTING_REDUCTIONS`): written once and read back by the reduction."""
    import torch

    dtype = (kwargs or {}).get("dtype")
    if name not in _CASTING_REDUCTIONS or not isinstance(dtype, torch.dtype):
        return 0
    source = next((a for a in args if isinstance(a, torch.Tensor)), None)
    if source is None or source.dtype == dtype:
        return 0
    if source.dtype in (torch.float16, torch.bfloat16) and dtype == torch.float32:
        return 0  # ATen reads low precision into a float32 accumulator without a copy
    return 2 * source.numel() * dtype.itemsize


def handle_profile(payload: dict[str, Any]) -> dict[str, Any]:
    """profile: build the candidate as the timing worker does, draw one set of inputs, run one
    forward pass with sampled programs, and return what each launch and PyTorch did."""
    import torch

    from .progress import progress

    device = _prepare(payload)
    module = import_file(payload["candidate"], "candidate", written(payload, payload["candidate"]))
    problem = load_problem(module, payload)
    inputs_problem = load_problem(import_file(payload["inputs_file"], "inputs",
                                              written(payload, payload["inputs_file"])), payload)
    init = _load(Path(payload["data_dir"]) / "init.pt")
    seed = int(payload.get("seed", 42))
    counter = _Counter()
    counter.rng = random.Random(int(payload.get("sample_seed", 0)))
    hollow_pass = bool(payload.get("hollow"))
    if hollow_pass:
        counter.limits, counter.hollow = HOLLOW_SAMPLES_PER_AXIS, True
    with hollow(lambda: counter.in_kernel > 0) if hollow_pass else contextlib.nullcontext():
        torch.manual_seed(seed)
        with torch.no_grad():
            model = problem.model("candidate", _to(init["init_inputs"], device))
        torch.manual_seed(seed)
        inputs = _to(inputs_problem.inputs(device), device)
        progress("built")
        output = _steady_pass(counter, model, inputs)
        uncovered = _uncovered(counter, output)
    if uncovered and hollow_pass:  # every program at the sizes as written would take hours
        raise HollowError(uncovered)
    if uncovered:  # the work is not where the sample looked: every program, exactly
        for tuner in counter.tuners:  # so that they try their Configs again, counted
            tuner.cache.clear()
        counter = _Counter()
        counter.limits = (None, None, None)
        _steady_pass(counter, model, inputs)
    return {"launches": [launch.to_json() for launch in counter.launches],
            "torch_ops": counter.torch_ops, "host_ops": counter.host_ops, "every_program": bool(uncovered),
            "uncovered": uncovered}


@contextlib.contextmanager
def _sampled_loops(counter: _Counter) -> Iterator[None]:
    """Kernels' loops, counted and, in a hollow pass, sampled. Every `for` over `range`/`tl.range`
    and every `while` counts its innermost iterations (`_Launch.loop_iterations`: what a register
    spill inside a loop repeats, `predict.py`). In a hollow pass a `for` loop runs `LOOP_SAMPLES`
    iterations (`loop_sample`), each weighting what it counts by the iterations it stands for; a
    `while` loop runs every iteration (its condition is the kernel's state), unless it is a
    counted one (`_counted_while`: `while i < n: ... i += step`), sampled as the `for` loop it is.
    The interpreter's rewrite of each kernel (its AST transformer, its cache of rewritten functions) is swapped for
    the pass and put back after: a verification in the same worker runs the kernel as written."""
    import ast

    import triton.runtime.interpreter as interpreter

    name, while_name, counted_name = "__tritonsmith_loop__", "__tritonsmith_while__", "__tritonsmith_counted__"

    def count() -> None:
        """After an iteration: an innermost one adds what it stands for."""
        if not counter.nested and counter.current is not None:
            counter.current.loop_iterations += counter.weight
        counter.nested = False

    def loop(iterations: Any) -> Iterator[Any]:
        drawn: Iterable[tuple[Any, float]]
        if counter.hollow and isinstance(iterations, range) and len(iterations) > LOOP_SAMPLES:
            drawn = [(iterations[index], share) for index, share in loop_sample(len(iterations), LOOP_SAMPLES,
                                                                                  counter.rng)]
        else:
            drawn = ((item, 1.0) for item in iterations)
        weight, loop_weight = counter.weight, counter.loop_weight
        try:
            for item, share in drawn:
                counter.weight, counter.loop_weight = weight * share, loop_weight * share
                counter.nested = False
                yield item
                count()
        finally:
            counter.weight, counter.loop_weight = weight, loop_weight
            counter.nested = True  # the enclosing loop's iteration held this one

    def while_loop(test: Any) -> Iterator[None]:
        try:
            while test():
                counter.nested = False
                yield None
                count()
        finally:
            counter.nested = True

    def counted_loop(test: Any, current: Any, bound: Any, step: Any, inclusive: bool) -> Iterator[Any]:
        """A counted `while`'s iterations as `loop` runs a `range`: the variable's value at each
        test. Where the values are not integers when the loop starts, every test runs as written."""
        try:
            start, stop, stride = (operator.index(current()), operator.index(bound()), operator.index(step()))
        except Exception:  # noqa: BLE001 - a block, a float, an unreadable value: not a counted loop
            stride = 0
        if stride <= 0:
            for _ in while_loop(test):
                yield current()
            return
        yield from loop(range(start, stop + 1 if inclusive else stop, stride))

    class Sampling(interpreter.ASTTransformer):  # type: ignore[misc,name-defined]
        def visit_For(self, node: ast.For) -> Any:
            node = self.generic_visit(node)
            call = node.iter
            if isinstance(call, ast.Call) and (
                    (isinstance(call.func, ast.Name) and call.func.id == "range")
                    or (isinstance(call.func, ast.Attribute) and call.func.attr == "range")):
                node.iter = ast.copy_location(
                    ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[call], keywords=[]), call)
            return node

        def visit_While(self, node: ast.While) -> Any:
            # `while T: B` as `for _ in counted(lambda: T): B`: the lambda reads the loop's
            # variables as they are at each test; `break`, `continue` and `else` mean the same.
            node = self.generic_visit(node)
            if counted := _counted_while(node):
                variable, bound, step, inclusive = counted
                load = ast.Name(id=variable, ctx=ast.Load())
                loop_node = ast.For(target=ast.Name(id=variable, ctx=ast.Store()),
                                    iter=ast.Call(func=ast.Name(id=counted_name, ctx=ast.Load()),
                                                  args=[_thunk(node.test), _thunk(load), _thunk(bound), _thunk(step),
                                                        ast.Constant(value=inclusive)], keywords=[]),
                                    body=node.body, orelse=node.orelse, type_comment=None)
                return ast.fix_missing_locations(ast.copy_location(loop_node, node))
            loop_node = ast.For(target=ast.Name(id="__tritonsmith_iteration__", ctx=ast.Store()),
                                iter=ast.Call(func=ast.Name(id=while_name, ctx=ast.Load()), args=[_thunk(node.test)],
                                              keywords=[]),
                                body=node.body, orelse=node.orelse, type_comment=None)
            return ast.fix_missing_locations(ast.copy_location(loop_node, node))

    rewriter, function = interpreter.FunctionRewriter, interpreter.InterpretedFunction
    saved_transformer, saved_cache = rewriter.ast_transformer, function.rewritten_fn
    original_exec = rewriter._compile_and_exec

    def compile_and_exec(self: Any, transformed: Any) -> Any:
        self.fn.__globals__[name], self.fn.__globals__[while_name] = loop, while_loop
        self.fn.__globals__[counted_name] = counted_loop
        return original_exec(self, transformed)

    rewriter.ast_transformer, function.rewritten_fn = Sampling(), {}
    rewriter._compile_and_exec = compile_and_exec  # type: ignore[method-assign]
    try:
        yield
    finally:
        rewriter.ast_transformer, function.rewritten_fn = saved_transformer, saved_cache
        rewriter._compile_and_exec = original_exec  # type: ignore[method-assign]


def _thunk(expression: Any) -> Any:
    """`lambda: expression`, read where the loop starts (or at each test)."""
    import ast

    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                      body=expression)


def _counted_while(node: Any) -> tuple[str, Any, Any, bool] | None:
    """(variable, bound, step, inclusive) when `node` is `while i < n:` (`<=`, or `n > i`,
    `n >= i`) whose body moves `i` only by one top-level `i += step`, assigns neither `n` nor the
    names of `step`, and has no `break`: its iterations are those of `range(i, n, step)`,
    whatever the body computes. Else None (the loop's condition is the kernel's state)."""
    import ast

    test = node.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, (ast.Lt, ast.LtE)) and isinstance(left, ast.Name):
        variable, bound, inclusive = left.id, right, isinstance(op, ast.LtE)
    elif isinstance(op, (ast.Gt, ast.GtE)) and isinstance(right, ast.Name):
        variable, bound, inclusive = right.id, left, isinstance(op, ast.GtE)
    else:
        return None
    steps = [statement for statement in node.body if isinstance(statement, ast.AugAssign)
             and isinstance(statement.op, ast.Add) and isinstance(statement.target, ast.Name)
             and statement.target.id == variable]
    if len(steps) != 1:
        return None
    step = steps[0].value
    inner = [n for statement in node.body for n in ast.walk(statement)]
    if any(isinstance(n, ast.Break) for n in inner):
        return None
    stored = {n.id for n in inner if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))
              and n is not steps[0].target}  # a walrus's target is a stored Name too
    read = {n.id for part in (bound, step) for n in ast.walk(part) if isinstance(n, ast.Name)}
    if variable in stored or read & (stored | {variable}):
        return None
    return variable, bound, step, inclusive


def loop_sample(n: int, limit: int, rng: random.Random | None = None) -> list[tuple[int, float]]:
    """Which of a loop's `n` iterations run, and how many each stands for: the first and the
    last standing for themselves, `limit - 2` of the others (drawn by `rng`; evenly spread
    without one) sharing the rest. Every iteration when `n <= limit`."""
    if n <= limit:
        return [(i, 1.0) for i in range(n)]
    inner = limit - 2
    if rng is not None:
        picks = sorted(rng.sample(range(1, n - 1), inner))
    else:
        picks = [1 + round(i * (n - 3) / max(1, inner - 1)) for i in range(inner)]
    return [(0, 1.0)] + [(p, (n - 2) / inner) for p in picks] + [(n - 1, 1.0)]


@contextlib.contextmanager
def _autotuning(counter: _Counter) -> Iterator[None]:
    """Autotuners try every Config they keep (after the kernel's own `prune_configs_by` and
    `early_config_prune`), each launch recorded as a trial of the autotuner's group, and then
    launch the first: the parent predicts each trial and takes the fastest that can launch on
    the target, as the autotuner on that GPU would (`predict.py`). Under the interpreter the
    trials cannot be timed, so each runs once, sampled like any launch."""
    from triton.runtime.autotuner import Autotuner

    saved = {name: Autotuner.__dict__[name] for name in ("run", "_bench", "do_bench") if name in Autotuner.__dict__}
    original_run, original_bench = Autotuner.run, Autotuner._bench

    def once(kernel_call: Any, quantiles: Any = None, **_: Any) -> Any:
        kernel_call()
        return [1.0] * len(quantiles) if quantiles else 1.0

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        named = {**dict(zip(self.arg_names, args, strict=False)), **kwargs}
        key = [named[k] for k in self.keys if k in named] + [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
        name = getattr(getattr(self, "base_fn", None), "__name__", "kernel")
        group = counter.groups.setdefault((id(self), repr(key)), f"{name}#{len(counter.groups) + 1}")
        if not any(tuner is self for tuner in counter.tuners):
            counter.tuners.append(self)
        outer, counter.group = counter.group, group
        try:
            return original_run(self, *args, **kwargs)
        finally:
            counter.group = outer

    def bench(self: Any, *args: Any, config: Any, **meta: Any) -> Any:
        group = counter.group or "autotune"
        tried = sum(1 for launch in counter.launches if (launch.tuning or {}).get("group") == group)
        counter.trial = {"group": group, "config": tried}
        try:
            return original_bench(self, *args, config=config, **meta)
        finally:
            counter.trial = None

    Autotuner.run, Autotuner._bench = run, bench  # type: ignore[method-assign]
    Autotuner.do_bench = property(lambda self: once)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        for name in ("run", "_bench", "do_bench"):
            if name in saved:
                setattr(Autotuner, name, saved[name])
            else:
                with contextlib.suppress(AttributeError):
                    delattr(Autotuner, name)


def _steady_pass(counter: _Counter, model: Any, inputs: Any) -> Any:
    """The forward pass as a GPU benchmark times it: after a first call, which may tune (an
    autotuner trying its Configs, a launcher timing its own candidates with CUDA events) and
    prepare what later calls reuse (weights cast or transposed once). What the second call does
    is counted, with the first call's autotuner trials (the Configs the tuned launches chose
    from); CUDA events, which cannot time anything here, all read the same time."""
    import torch

    with torch.no_grad(), counting(counter), _untimed_events():
        counter.first_call = True
        try:
            model(*inputs)
        finally:
            counter.first_call = False
        counter.launches = [launch for launch in counter.launches if launch.tuning]
        counter.torch_ops, counter.host_ops = {}, 0
        return model(*inputs)


@contextlib.contextmanager
def _untimed_events() -> Iterator[None]:
    import torch

    class Event:
        def __init__(self, *_: Any, **__: Any) -> None:
            pass

        def record(self, *_: Any, **__: Any) -> None:
            pass

        def synchronize(self) -> None:
            pass

        def wait(self, *_: Any, **__: Any) -> None:
            pass

        def query(self) -> bool:
            return True

        def elapsed_time(self, _other: Any) -> float:
            return 1.0

    saved = torch.cuda.Event
    torch.cuda.Event = Event  # type: ignore[misc,assignment]
    try:
        yield
    finally:
        torch.cuda.Event = saved  # type: ignore[misc]


def _uncovered(counter: _Counter, output: Any) -> str | None:
    """Why the sample cannot stand for the launches: an output a kernel writes of which the
    sampled programs, scaled up, wrote under half. None when every such output is covered."""
    import torch

    for tensor in output if isinstance(output, (list, tuple)) else [output]:
        if not isinstance(tensor, torch.Tensor) or tensor.numel() == 0:
            continue
        start = int(tensor.data_ptr())
        size = tensor.numel() * tensor.element_size()
        written, touched = 0.0, False
        for launch in counter.launches:
            for address, extent, name in launch.args:
                if address < start + size and start < address + extent:  # the argument reaches the output
                    touched = True
                    written += launch.per_arg.get(name, [0.0, 0.0])[1]
        if touched and written < 0.5 * size:
            return (f"the sampled programs wrote {written:.0f} of the {size} bytes of an output: the work is "
                    "not spread over the programs, so every program ran")
    return None
