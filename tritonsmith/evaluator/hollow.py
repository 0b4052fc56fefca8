"""Hollow tensors: a forward pass at the sizes as written, without its arithmetic.

A predicted time needs what each launch does at the sizes as written (its grid, its block
sizes, its loops' trip counts), not the values it computes. Profiling with real data at those
sizes costs minutes (a 4096 x 393216 softmax under the interpreter; a convolution PyTorch runs
on the CPU), so under `hollow()`:

- PyTorch operators allocate their outputs and compute nothing: the output's shape, strides and
  type come from running the operator on `meta` tensors; its memory is allocated uninitialised
  (large allocations are fresh pages, never touched unless a kernel writes them), integer and
  boolean outputs zeroed so that an index read from memory stays in bounds;
- operators that change a tensor in place (`uniform_`, `copy_`, `add_`, an `out=`) return it
  unchanged; views, allocations and metadata run as usual;
- Triton launches run as the profile runs them (a sample of their programs, `profile.py`), on
  that memory: their loads, stores, loops and dots are those of the real sizes, their values
  meaningless.

What it cannot follow raises `HollowError`, and the caller profiles at scaled sizes with real
data instead: an operator whose output shape depends on values (`nonzero`, `unique`,
`masked_select`), or a value read back to the host outside a kernel (`.item()`, a data-dependent
branch), which would steer the pass by meaningless numbers.

Imported by the worker only (imports torch).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["HollowError", "hollow"]

_RUN_AS_IS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "view", "_unsafe_view",
    "reshape", "as_strided", "expand", "permute", "transpose", "t", "unsqueeze", "squeeze", "select",
    "slice", "detach", "alias", "lift_fresh", "set_", "size", "stride", "sym_size", "sym_stride",
    "sym_numel", "sym_storage_offset", "is_contiguous", "resize_", "split", "split_with_sizes", "chunk",
    "unbind", "numel", "dim", "view_as_real", "view_as_complex", "_reshape_alias", "unfold", "diagonal",
    "expand_as", "view_as", "narrow", "movedim", "squeeze_", "unsqueeze_", "transpose_", "t_", "as_strided_",
    "is_same_size", "_has_compatible_shallow_copy_type", "is_pinned", "is_coalesced",
})
"""Operators that move no data (views, metadata, uninitialised allocations): they run as usual."""

_READS_VALUES = frozenset({"_local_scalar_dense", "is_nonzero", "equal", "allclose"})
"""Operators that hand a tensor's values to Python: outside kernels, they would steer the pass
by values that mean nothing here."""


class HollowError(RuntimeError):
    """The forward pass needs values a hollow pass does not have."""


@contextlib.contextmanager
def hollow(passthrough: Callable[[], bool] = lambda: False) -> Iterator[None]:
    """Run PyTorch operators hollow (module docstring) while the context is open.

    `passthrough()` True: run operators as usual (inside a Triton launch, whose interpreter
    moves its arguments with PyTorch), except copying a tensor onto itself, which is skipped."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_map

    def to_meta(value: Any) -> Any:
        return value.to("meta") if isinstance(value, torch.Tensor) else value

    def materialise(value: Any) -> Any:
        if not isinstance(value, torch.Tensor) or value.device.type != "meta":
            return value
        made = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="cpu")
        return made if value.dtype.is_floating_point or value.dtype.is_complex else made.zero_()

    class Hollow(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            name = func.overloadpacket.__name__
            if passthrough():
                if name == "copy_" and _same_memory(args):
                    return args[0]
                return func(*args, **kwargs)
            if name in _RUN_AS_IS:
                return func(*args, **kwargs)
            if name in _READS_VALUES:
                raise HollowError(f"the forward pass reads a tensor's value on the host ({name}), "
                                  "which a pass without data cannot give")
            if "out" in kwargs:
                return kwargs["out"]
            if func._schema.is_mutable:
                return _mutated(func, args, kwargs)
            meta_kwargs = {k: ("meta" if k == "device" else to_meta(v)) for k, v in kwargs.items()}
            try:
                result = func(*tree_map(to_meta, args), **meta_kwargs)
            except (NotImplementedError, RuntimeError) as exc:
                raise HollowError(f"{name} cannot run without data ({str(exc).splitlines()[0][:120]})") from exc
            return tree_map(materialise, result)

    with Hollow():
        yield


def _same_memory(args: Any) -> bool:
    """`copy_(dst, src)` where both are the same memory (the interpreter's copy back to a CPU
    tensor of what it ran on that tensor)."""
    dst, src = args[0], args[1]
    return bool(dst.data_ptr() == src.data_ptr() and dst.shape == src.shape and dst.stride() == src.stride())


def _mutated(func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    """What an in-place operator returns (the tensors it writes), without writing them."""
    schema = func._schema
    written = []
    for position, argument in enumerate(schema.arguments):
        if argument.alias_info is not None and argument.alias_info.is_write:
            written.append(args[position] if position < len(args) else kwargs.get(argument.name))
    if not schema.returns:
        return None
    if len(schema.returns) == 1:
        return written[0] if written else None
    return tuple(written[: len(schema.returns)])
