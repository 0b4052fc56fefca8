"""Bounds checks for Triton's interpreter (worker side: imports numpy, torch and triton inside
functions; only interpreter workers call `check_bounds`).

On a GPU an unmasked load past a tensor's end reads garbage or faults with an illegal address.
Under `TRITON_INTERPRET=1` every load and store is a raw access to the worker's own heap, so the
same bug does whatever that memory allows: the worker dies (SIGSEGV, SIGABRT when the allocator
notices), hangs on a heap it corrupted (a "hang" verdict after the full timeout), or goes on
with garbage that a masked store may hide. None of these says what went wrong, and which one
happens changes from run to run.

So every load, store and atomic a kernel makes under the interpreter is checked first: each
address its mask lets through must lie, whole element included, inside the storage of a tensor
the launch was given (positional, keyword, in a tuple, or a TensorDescriptor's base). An
address outside all of them is looked up once more among every tensor alive in the process
(a grouped GEMM passes a tensor of other tensors' addresses; a launcher may pass
`x.data_ptr()` as an integer): first among those the last scan of the process found that are
still alive, then by a new scan; outside those too, the access raises `OutOfBounds` naming the
operation, the program, how many lanes were outside and where the first one lies relative to
the nearest argument, before any byte is read or written.

What it is not: a defence against a hostile candidate. The candidate's code runs in the same
process and can remove these checks, and its verdict is protected by the worker protocol
(reference and candidate in separate workers, outputs compared by hash) whatever it does to its
own memory. Nor does it catch an access that lands inside another live tensor (the GPU would
not either). What it does is turn the ordinary bug, a missing mask, into one clear verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["OutOfBounds", "check_bounds"]


class OutOfBounds(Exception):
    """A load, store or atomic under the interpreter outside every tensor it may touch."""

    def __repr__(self) -> str:  # the interpreter reports a kernel's exception by its repr
        return str(self)


@dataclass
class _Storages:
    """The storages one launch may touch, sorted by start address."""

    starts: Any = None  # numpy uint64 arrays
    ends: Any = None
    names: list[str] = field(default_factory=list)
    program: tuple[int, int, int] = (0, 0, 0)
    widened: int = 0  # after a miss: 1, tensors the last scan found still alive added; 2, a new scan's


_launch = _Storages()
_installed = False
# The tensors the last scan of the process found (weak references: alive, their storage is
# valid). A launch that reads through a table of addresses misses once per launch; most of
# the time the tensors it reaches are still these, and a scan costs tens of milliseconds.
_remembered: list[Any] = []


def check_bounds() -> None:
    """Wrap the interpreter's memory operations with the check; process-wide and once."""
    global _installed
    if _installed:
        return
    try:
        from triton.runtime.interpreter import GridExecutor, InterpreterBuilder
    except ImportError:  # pragma: no cover - an interpreter laid out differently
        return
    init_args, set_grid_idx = GridExecutor._init_args_hst, InterpreterBuilder.set_grid_idx
    load, store = InterpreterBuilder.create_masked_load, InterpreterBuilder.create_masked_store
    rmw, cas = InterpreterBuilder.create_atomic_rmw, InterpreterBuilder.create_atomic_cas

    def launch_args(self: Any, args: Any, kwargs: Any) -> Any:
        args_hst, kwargs_hst = init_args(self, args, kwargs)
        names = list(getattr(self, "arg_names", ()))
        named = [(names[i] if i < len(names) else f"argument {i + 1}", a) for i, a in enumerate(args_hst)]
        _start_launch(_storages([*named, *kwargs_hst.items()]))
        return args_hst, kwargs_hst

    def grid_idx(self: Any, x: int, y: int, z: int) -> Any:
        _launch.program = (x, y, z)
        return set_grid_idx(self, x, y, z)

    def masked_load(self: Any, ptrs: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        _check(ptrs, mask, "load")
        return load(self, ptrs, mask, *args, **kwargs)

    def masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        _check(ptrs, mask, "store")
        return store(self, ptrs, value, mask, *args, **kwargs)

    def atomic_rmw(self: Any, op: Any, ptr: Any, val: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        _check(ptr, mask, "atomic")
        return rmw(self, op, ptr, val, mask, *args, **kwargs)

    def atomic_cas(self: Any, ptr: Any, *args: Any, **kwargs: Any) -> Any:
        _check(ptr, None, "atomic_cas")
        return cas(self, ptr, *args, **kwargs)

    GridExecutor._init_args_hst = launch_args
    InterpreterBuilder.set_grid_idx = grid_idx
    InterpreterBuilder.create_masked_load = masked_load
    InterpreterBuilder.create_masked_store = masked_store
    InterpreterBuilder.create_atomic_rmw = atomic_rmw
    InterpreterBuilder.create_atomic_cas = atomic_cas
    _installed = True


def _storages(named: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, int, int]]:
    """(name, start, end) of each tensor's whole storage among launch arguments: a view may
    legitimately reach any of its storage (a transpose, a slice's neighbours)."""
    for name, value in named:
        if isinstance(value, tuple):
            yield from _storages((f"{name}[{i}]", v) for i, v in enumerate(value))
            continue
        base = getattr(value, "base", None)  # a TensorDescriptor, or Triton's TensorWrapper
        if base is not None and not hasattr(value, "untyped_storage"):
            value = base
        storage = getattr(value, "untyped_storage", None)
        if storage is None:
            continue
        storage = storage()
        start = int(storage.data_ptr())
        yield name, start, start + int(storage.nbytes())


def _start_launch(ranges: Iterable[tuple[str, int, int]]) -> None:
    _launch.names, _launch.starts, _launch.ends = [], None, None
    _launch.widened, _launch.program = 0, (0, 0, 0)
    _set_ranges(list(ranges))


def _set_ranges(ranges: list[tuple[str, int, int]]) -> None:
    import numpy as np

    by_start = sorted({(start, end, name) for name, start, end in ranges if end > start})
    _launch.starts = np.array([r[0] for r in by_start], dtype=np.uint64)
    _launch.ends = np.array([r[1] for r in by_start], dtype=np.uint64)
    _launch.names = [r[2] for r in by_start]


def _remembered_tensors() -> Iterator[tuple[str, int, int]]:
    for reference in _remembered:
        tensor = reference()
        if tensor is not None:
            try:
                yield from _storages([("", tensor)])
            except RuntimeError:  # a sparse or otherwise storage-less tensor
                continue


def _scan() -> Iterator[tuple[str, int, int]]:
    """Every tensor alive in the process, remembered for the next launches."""
    import gc
    import weakref

    import torch

    global _remembered
    found: list[Any] = []
    is_tensor: dict[type, bool] = {}
    for obj in gc.get_objects():
        kind = type(obj)  # not isinstance: that reads `__class__`, which some objects warn on
        known = is_tensor.get(kind)
        if known is None:
            known = is_tensor[kind] = issubclass(kind, torch.Tensor)
        if known and not obj.is_meta:
            try:
                found.append(weakref.ref(obj))
            except TypeError:
                continue
    _remembered = found
    return _remembered_tensors()


def _outside(addresses: Any, size: int) -> Any:
    """A boolean array: which addresses' elements do not lie whole inside one storage."""
    import numpy as np

    starts, ends = _launch.starts, _launch.ends
    if starts is None or not len(starts):
        return np.ones(addresses.shape, dtype=bool)
    index = np.searchsorted(starts, addresses, side="right").astype(np.int64) - 1
    below = index < 0
    index[below] = 0
    return below | (addresses + np.uint64(size) > ends[index])


def _inside_one(low: int, high: int) -> bool:
    """Whether [low, high) lies inside one storage."""
    import numpy as np

    starts = _launch.starts
    if starts is None or not len(starts) or low < 0 or high > 2**64 - 1:
        return False
    index = int(np.searchsorted(starts, np.uint64(low), side="right")) - 1
    return index >= 0 and high <= int(_launch.ends[index])


def _element_size(ptrs: Any) -> int:
    pointee = getattr(getattr(ptrs.dtype, "scalar", ptrs.dtype), "element_ty", None)
    bits = getattr(pointee, "primitive_bitwidth", 64)  # a pointer to pointers: 64 bits
    return max(1, int(bits) // 8)


def _check(ptrs: Any, mask: Any, operation: str) -> None:
    import numpy as np

    data = getattr(ptrs, "data", None)
    if not isinstance(data, np.ndarray) or data.dtype.kind not in "iu":
        return  # not an address block (the interpreter itself will say what it is)
    addresses = data.astype(np.uint64, copy=False).ravel()
    lanes = addresses.size
    if mask is not None:
        try:
            allowed = np.broadcast_to(np.asarray(mask.data, dtype=bool), data.shape).ravel()
        except (TypeError, ValueError):
            return  # a mask of another shape: the interpreter's own error says so
        addresses = addresses[allowed]
    if not addresses.size:
        return
    size = _element_size(ptrs)
    if _inside_one(int(addresses.min()), int(addresses.max()) + size):
        return  # the usual case, decided without looking at each lane
    outside = _outside(addresses, size)
    if not outside.any():
        return
    while outside.any() and _launch.widened < 2:
        _launch.widened += 1
        ranges = [(n, int(s), int(e)) for n, s, e in zip(_launch.names, _launch.starts, _launch.ends)]
        _set_ranges(ranges + list(_remembered_tensors() if _launch.widened == 1 else _scan()))
        outside = _outside(addresses, size)
    if not outside.any():
        return
    raise OutOfBounds(_message(operation, addresses[outside], lanes, size))


def _message(operation: str, bad: Any, lanes: int, size: int) -> str:
    first = int(bad[0])
    where = "outside every tensor the kernel was given"
    nearest = _nearest(first)
    if nearest is not None:
        name, start, end = nearest
        offset = first - start
        where += (f"; the first at byte {offset} of {name}'s {end - start}-byte storage"
                  + (f" (element {offset // size})" if offset >= 0 and offset % size == 0 else ""))
    program = ", ".join(map(str, _launch.program))
    return (f"{operation} out of bounds in program ({program}): {len(bad)} of its {lanes} lanes "
            f"({size}-byte elements) {where}; check the mask")


def _nearest(address: int) -> tuple[str, int, int] | None:
    """The named argument storage closest to `address`."""
    best: tuple[int, tuple[str, int, int]] | None = None
    for name, start, end in zip(_launch.names, _launch.starts, _launch.ends):
        if not name:
            continue  # a live tensor found in the process, not an argument
        start, end = int(start), int(end)
        distance = address - end + 1 if address >= end else start - address if address < start else 0
        if best is None or distance < best[0]:
            best = (distance, (name, start, end))
    return best[1] if best else None
