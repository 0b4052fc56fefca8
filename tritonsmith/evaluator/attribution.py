"""Work attribution in the candidate worker: who computed the result, the Triton kernels or
PyTorch (worker side: imports torch; only worker processes import this module).

A name in the syntax tree says little: `getattr(torch, "relu")` fetched in `__init__`, a tensor
method (`x.amax()`), an operator (`x * (x > 0)`), an in-place op or an `nn` layer all compute
without naming `torch.*` on the path from `forward`. So `WorkRecorder` watches at the
dispatcher (a `TorchDispatchMode`): every aten operation the forward pass executes passes
through it, whatever it was called.

Each operation is classified as bookkeeping (allocation, views, reshapes, data movement,
dtype-preserving copies, fills) or compute, and marked *input-derived* when it reads data that
came from the forward's inputs: the inputs are tainted, an operation that reads tainted data
taints what it writes, and a Triton launch that reads tainted data taints the arguments it
changed. Triton launches are recorded by the launch guard (guards.py), which pauses the recorder
around them (the interpreter itself runs aten operations to emulate a launch) and hands each
launch's arguments before and after, so the record says which arguments the kernel wrote, and
whether it only copied one of its arguments.

The judgement (which policy rejects what) is server side, in `policy.py`; this module only
records and summarises.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from .integrity import host_bytes

__all__ = ["BOOKKEEPING", "CASTS", "Held", "LaunchRecord", "WorkRecorder", "tensors_in", "token_kernels"]

ALLOCATORS = frozenset({
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
    "zeros", "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like",
    "new_full", "scalar_tensor", "arange", "linspace", "logspace", "eye", "randn", "rand",
    "randint", "randperm", "randn_like", "rand_like", "randint_like", "normal", "tensor",
    "lift_fresh", "lift_fresh_copy",
})
"""Operations whose output is fresh memory that holds nothing of the inputs."""

BOOKKEEPING = ALLOCATORS | frozenset({
    # views and reshapes
    "view", "_unsafe_view", "reshape", "_reshape_alias", "view_as", "as_strided", "expand",
    "expand_as", "permute", "transpose", "t", "squeeze", "unsqueeze", "flatten", "unflatten",
    "slice", "select", "narrow", "split", "split_with_sizes", "chunk", "unbind", "movedim",
    "diagonal", "alias", "detach", "unfold", "view_as_real", "view_as_complex", "_conj",
    "resolve_conj", "resolve_neg", "as_strided_", "set_", "resize_", "_resize_output_",
    # data movement without arithmetic
    "contiguous", "clone", "copy_", "detach_", "_copy_from", "_copy_from_and_resize", "cat", "stack",
    "hstack", "vstack", "repeat", "tile", "constant_pad_nd", "pad", "flip", "roll",
    # fills and initialisation
    "fill_", "zero_", "fill", "normal_", "uniform_", "random_", "bernoulli_",
    # queries
    "_local_scalar_dense", "item", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset",
    "is_same_size", "_has_compatible_shallow_copy_type", "is_nonzero", "equal",
})
"""Operations that move or describe data without computing on it. Everything else is compute.
Casts (`_to_copy`, `to`) are bookkeeping when they keep the dtype and a precision change when
they do not."""

CASTS = frozenset({"_to_copy", "to", "_to_dtype"})


def op_name(func: Any) -> str:
    """`aten._softmax.default` -> "_softmax"."""
    packet = getattr(func, "overloadpacket", None)
    return str(getattr(packet, "__name__", None) or getattr(func, "__name__", func))


def tensors_in(value: Any) -> list[torch.Tensor]:
    """Every tensor in a nest of lists, tuples and dicts."""
    leaves, _ = tree_flatten(value)
    return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]


def _key(tensor: torch.Tensor) -> int | None:
    """What taint is kept by: the storage, so views share their base's taint."""
    try:
        pointer = tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None
    return int(pointer) or None


def content_hash(tensor: torch.Tensor, *, shape: bool = True) -> str:
    """Shape, dtype and bytes: equal hashes mean equal tensors. Without `shape`, the values
    only (a reshaped or contiguous copy of a tensor hashes as the tensor)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{tuple(tensor.shape) if shape else ''}|{tensor.dtype}".encode())
    flat = tensor.detach().contiguous().reshape(-1).cpu()
    if flat.numel():
        digest.update(host_bytes(flat))
    return digest.hexdigest()


HELD_LIMIT = 64
"""At most this many launch arguments are held per forward pass (`WorkRecorder.held`)."""


@dataclass
class Held:
    """A floating-point argument of a Triton launch as it was before the launch, when its values
    came from neither the inputs nor an earlier Triton launch: if it already equals the answer,
    the answer was computed elsewhere and the kernel only passed it on (correctness.py judges it
    against the reference's outputs, in the reference's worker)."""

    kernel: str
    launch: int  # 0-based, in the forward pass
    argument: int  # 0-based among the launch's tensor arguments
    tensor: torch.Tensor
    source: str  # "PyTorch <op>" when the dispatcher saw the op that last wrote it, else "outside"


def _work(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> int:
    """A rough size of an operation's work: its FLOPs where torch's flop counter knows the
    operation (matmuls, convolutions, attention), else the elements it produced."""
    from torch.utils.flop_counter import flop_registry

    formula = flop_registry.get(getattr(func, "overloadpacket", None))
    if formula is not None:
        try:
            return int(formula(*args, **kwargs, out_val=out))
        except Exception:  # a formula that does not fit these arguments: fall back
            pass
    return sum(t.numel() for t in tensors_in(out))


def _written(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    """The arguments an in-place or out= operation writes, from its schema."""
    schema = getattr(func, "_schema", None)
    if schema is None:
        return []
    out: list[torch.Tensor] = []
    for i, argument in enumerate(schema.arguments):
        alias = argument.alias_info
        if alias is None or not alias.is_write:
            continue
        value = args[i] if i < len(args) else kwargs.get(argument.name)
        out += tensors_in(value)
    return out


@dataclass
class LaunchRecord:
    """One Triton launch: which arguments it wrote and what they held afterwards."""

    kernel: str
    reads_inputs: bool
    written: list[str] = field(default_factory=list)  # content hashes of the written arguments
    copies: bool = False  # every written argument now equals another argument as given
    elements: int = 0  # written, plus input-derived arguments read


class WorkRecorder(TorchDispatchMode):
    """Records, for one forward pass, the compute operations on input-derived data (by name,
    with their work), precision changes, compute on other data, and Triton launches."""

    def __init__(self, inputs: Any, *, identities: bool = False, hold: bool = False) -> None:
        super().__init__()
        # With `identities` (the reference's record), the compute ops whose output holds
        # exactly the values of one of their inputs at these sizes (an average pool over a 1×1
        # map): a kernel doing that op's work then only copies, and is no token for it.
        self.track_identities = identities
        self.identity_ops: Counter[str] = Counter()
        self.tainted: set[int] = set()
        self.torch_ops: Counter[str] = Counter()
        self.torch_work: Counter[str] = Counter()
        self.other_ops: Counter[str] = Counter()
        self.seen: Counter[str] = Counter()  # every operation outside launches (accounting.py)
        self.casts: Counter[str] = Counter()
        self.launches: list[LaunchRecord] = []
        self.paused = 0
        given = tensors_in(inputs)
        self.input_elements = sum(t.numel() for t in given)
        self.largest_operand = 0  # of the PyTorch compute on input-derived data
        self._taint(given)
        # With `hold`, the launch arguments whose values nobody recorded producing (`Held`).
        # Values a launch wrote, or recorded data movement carried from one, are Triton's own;
        # the last recorded writer of each storage names where the rest came from.
        self.hold = hold
        self.held: list[Held] = []
        self.given_values = {content_hash(t, shape=False) for t in given} if hold else set()
        self.triton_values: set[str] = set()
        self.triton_storages: set[int] = set()
        self.writer: dict[int, str] = {}

    # -- taint ---------------------------------------------------------------------------------
    def _taint(self, tensors: list[torch.Tensor]) -> None:
        for tensor in tensors:
            if (key := _key(tensor)) is not None:
                self.tainted.add(key)

    def derived(self, tensor: torch.Tensor) -> bool:
        key = _key(tensor)
        return key is not None and key in self.tainted

    def taint_outputs(self, outputs: Any) -> None:
        self._taint(tensors_in(outputs))

    # -- aten operations -----------------------------------------------------------------------
    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        name = op_name(func)
        derived = not self.paused and any(self.derived(t) for t in tensors_in((args, kwargs)))
        out = func(*args, **kwargs)
        if self.paused:
            return out
        self.seen[name] += 1
        produced = tensors_in(out)
        if self.hold:
            self._wrote(name, args, kwargs, produced + _written(func, args, kwargs))
        if name in ALLOCATORS:
            # Fresh memory: a freed tainted block reused by the allocator is clean again.
            for tensor in produced:
                self.tainted.discard(_key(tensor) or 0)
            return out
        if not derived:
            if name not in BOOKKEEPING and name not in CASTS:
                self.other_ops[name] += 1
            for tensor in produced:  # a result of clean data is clean (memory may be reused)
                self.tainted.discard(_key(tensor) or 0)
            return out
        self._taint(produced + _written(func, args, kwargs))
        if name in CASTS:
            source = next((t for t in tensors_in(args) if self.derived(t)), None)
            for tensor in produced:
                if source is not None and tensor.dtype != source.dtype:
                    self.casts[f"{_dtype(source)}→{_dtype(tensor)}"] += 1
        elif name == "copy_" and len(args) >= 2 and isinstance(args[0], torch.Tensor) \
                and isinstance(args[1], torch.Tensor) and args[0].dtype != args[1].dtype:
            self.casts[f"{_dtype(args[1])}→{_dtype(args[0])}"] += 1
        elif name not in BOOKKEEPING:
            self.torch_ops[name] += 1
            self.torch_work[name] += _work(func, args, kwargs, out)
            self.largest_operand = max([self.largest_operand, *(t.numel() for t in tensors_in((args, kwargs)))])
            if self.track_identities and _identity(args, produced):
                self.identity_ops[name] += 1
        return out

    def _wrote(self, name: str, args: Any, kwargs: Any, written: list[torch.Tensor]) -> None:
        """Who last wrote each storage: data movement from a Triton result carries its values
        on (a reshape, a copy, a cast of what a kernel wrote is still the kernel's work)."""
        moved = name in BOOKKEEPING and name not in ALLOCATORS or name in CASTS
        sources = [t for t in tensors_in((args, kwargs)) if all(t is not w for w in written)]
        from_triton = moved and any(_key(t) in self.triton_storages for t in sources)
        for tensor in written:
            key = _key(tensor)
            if key is None:
                continue
            if from_triton:
                self.triton_storages.add(key)
                self.triton_values.add(content_hash(tensor, shape=False))
                continue
            self.triton_storages.discard(key)
            if moved:  # a copy carries its source's writer
                self.writer[key] = next((self.writer[k] for t in sources if (k := _key(t)) in self.writer),
                                        "outside")
            else:
                self.writer[key] = "outside" if name in ALLOCATORS else f"PyTorch {name}"

    def _hold(self, kernel: str, arguments: list[torch.Tensor]) -> None:
        for i, tensor in enumerate(arguments):
            if len(self.held) >= HELD_LIMIT or not tensor.is_floating_point() or tensor.numel() < 2:
                continue
            values = content_hash(tensor, shape=False)
            if values in self.triton_values or values in self.given_values:
                continue
            self.held.append(Held(kernel, len(self.launches), i, tensor.detach().cpu().clone(),
                                  self.writer.get(_key(tensor) or 0, "outside")))

    # -- Triton launches (called by the launch guard) -------------------------------------------
    def before_launch(self, kernel: str, arguments: list[torch.Tensor]) -> tuple[str, list[torch.Tensor], list[str], bool]:
        self.paused += 1
        before = [content_hash(t) for t in arguments]
        if self.hold:
            self._hold(kernel, arguments)
        return kernel, arguments, before, any(self.derived(t) for t in arguments)

    def after_launch(self, token: tuple[str, list[torch.Tensor], list[str], bool]) -> None:
        kernel, arguments, before, reads_inputs = token
        try:
            after = [content_hash(t) for t in arguments]
            changed = [i for i, (b, a) in enumerate(zip(before, after, strict=True)) if a != b]
            # Its work: the elements it wrote, and those of the input-derived arguments it was
            # given to read (a reduction reads a block of inputs to write a few sums).
            read = sum(t.numel() for i, t in enumerate(arguments) if i not in changed and self.derived(t)) \
                if changed else 0
            record = LaunchRecord(kernel, reads_inputs, written=[after[i] for i in changed],
                                  elements=sum(arguments[i].numel() for i in changed) + read)
            # A kernel that only copies: each written argument now holds exactly what another
            # argument held when the kernel was launched.
            record.copies = bool(changed) and all(
                any(after[i] == before[j] for j in range(len(arguments)) if j != i) for i in changed)
            if reads_inputs:
                self._taint([arguments[i] for i in changed])
            if self.hold:
                for i in changed:
                    self.triton_values.add(content_hash(arguments[i], shape=False))
                    if (key := _key(arguments[i])) is not None:
                        self.triton_storages.add(key)
                        self.writer.pop(key, None)
            self.launches.append(record)
        finally:
            self.paused -= 1

    def summary(self) -> dict[str, Any]:
        """The forward pass's record, as plain data for the verdict."""
        kernels: dict[str, dict[str, Any]] = {}
        for record in self.launches:
            entry = kernels.setdefault(record.kernel, {"launches": 0, "elements": 0, "reads_inputs": False,
                                                       "writes": False, "copies_only": True})
            entry["launches"] += 1
            entry["elements"] += record.elements
            entry["reads_inputs"] |= record.reads_inputs
            entry["writes"] |= bool(record.written)
            entry["copies_only"] &= record.copies or not record.written
        return {
            "triton": kernels,
            "torch": {name: {"count": count, "work": int(self.torch_work[name])}
                      for name, count in sorted(self.torch_ops.items())},
            "casts": dict(self.casts),
            "other_torch": dict(self.other_ops),
            "input_elements": self.input_elements,
            "largest_torch_operand": self.largest_operand,
        }


def _identity(args: Any, produced: list[torch.Tensor]) -> bool:
    """Whether every output holds exactly the values of one tensor argument (shape aside)."""
    given = [t for t in tensors_in(args) if t.is_floating_point()]
    return bool(produced) and all(
        any(t.numel() == out.numel() and t.dtype == out.dtype and torch.equal(t.reshape(-1), out.reshape(-1))
            for t in given) for out in produced)


def _dtype(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def token_kernels(first: list[LaunchRecord], second: list[LaunchRecord]) -> dict[str, str]:
    """Kernels that did no input-dependent work in two forward passes on different inputs:
    kernel name -> why. A kernel is a token when it reads nothing derived from the inputs,
    writes nothing, only copies an argument, or writes the same values for both draws."""
    reasons: dict[str, str] = {}
    names = {r.kernel for r in first} | {r.kernel for r in second}
    for name in sorted(names):
        a = [r for r in first if r.kernel == name]
        b = [r for r in second if r.kernel == name]
        launches = a + b
        if not any(r.reads_inputs for r in launches):
            reasons[name] = "reads nothing derived from the inputs"
        elif not any(r.written for r in launches):
            reasons[name] = "writes nothing"
        elif all(r.copies or not r.written for r in launches):
            reasons[name] = "only copies one of its arguments (no arithmetic)"
        elif len(a) == len(b) and all(x.written == y.written for x, y in zip(a, b, strict=True)):
            reasons[name] = "writes the same values for two different input draws"
    return reasons
