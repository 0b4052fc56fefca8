"""PyTorch compute the dispatch recorder did not see (worker side: imports torch).

`attribution.WorkRecorder` sees the aten operations of the thread that runs `forward`, through a
`TorchDispatchMode`. Code can compute out of its sight: with the modes switched off
(`torch.utils._python_dispatch._disable_current_modes`, `torch._C._DisableTorchDispatch`), or on
another thread (modes are per thread; `integrity.Fence` refuses threads under the interpreter,
not on a GPU). PyTorch's profiler records operator events below the Python dispatch key, on every
thread (`profile_all_threads`), whatever the modes. So the first trial's forward pass runs under
both, and every top-most compute event of the profile (one with no compute operation above it:
`aten::softmax` over `aten::_softmax`, a custom operator over what it runs) must be matched by an
operation the recorder saw in its subtree. What is left was computed out of the recorder's sight.

Triton launches run in a profiler scope named with a per-process nonce (`LAUNCH_SCOPE`, entered
by the launch guard): the interpreter emulates a launch with aten operations, which are the
kernel's work, not PyTorch's.
"""

from __future__ import annotations

import functools
import secrets
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from .attribution import BOOKKEEPING, CASTS

__all__ = ["LAUNCH_SCOPE", "Accounting", "warm"]

LAUNCH_SCOPE = f"tritonsmith::launch::{secrets.token_hex(8)}"
"""The profiler scope around each Triton launch (guards.py); events inside it are the kernel's."""


def _config() -> Any:
    from torch._C._profiler import _ExperimentalConfig

    return _ExperimentalConfig(profile_all_threads=True)


_warmed = False


def warm() -> None:
    """The profiler's first session costs most of a second and starts its threads: paid once per
    worker, in `prestart` or before the candidate's threads are counted."""
    global _warmed
    if not _warmed:
        with profile(activities=[ProfilerActivity.CPU], experimental_config=_config()):
            torch.ones(2).add(1)
        _warmed = True


def _name(event_name: str) -> str:
    """`aten::_softmax` -> `_softmax`; `mylib::whole` -> `whole` (as `attribution.op_name`)."""
    return event_name.rsplit("::", 1)[-1]


@functools.cache
def _composite(qualified: str) -> bool:
    """Whether every overload of the aten operator is CompositeImplicitAutograd: its work is the
    operators it calls, which the profiler records below it, so one with no event below it
    computed nothing. Only aten's: a custom operator's implementation is the candidate's."""
    namespace, _, name = qualified.partition("::")
    if namespace != "aten":
        return False
    try:
        overloads = getattr(torch.ops.aten, name).overloads()
        return bool(overloads) and all(
            torch._C._dispatch_has_kernel_for_dispatch_key(qualified if o == "default" else f"{qualified}.{o}",
                                                           "CompositeImplicitAutograd")
            for o in overloads)
    except (AttributeError, RuntimeError):
        return False


def _compute(name: str) -> bool:
    return name not in BOOKKEEPING and name not in CASTS


class Accounting:
    """One forward pass under the profiler: what PyTorch computed, on any thread."""

    def __init__(self) -> None:
        self.tops: list[tuple[str, set[str]]] = []  # top-most compute events: (name, names in their subtree)

    def read(self, events: Any) -> None:
        for event in events:
            if not event.name.startswith(("aten::", "prims::")) and "::" not in event.name:
                continue
            name = _name(event.name)
            if not _compute(name) or event.name == LAUNCH_SCOPE:
                continue
            if not event.cpu_children and _composite(event.name):
                continue  # returned an input as it is (dropout at p=0 or in eval): nothing computed
            above, parent, in_launch = False, event.cpu_parent, False
            while parent is not None:
                if parent.name == LAUNCH_SCOPE:
                    in_launch = True
                    break
                if "::" in parent.name and _compute(_name(parent.name)):
                    above = True
                parent = parent.cpu_parent
            if in_launch or above:
                continue
            subtree: set[str] = set()
            stack = [event]
            while stack:
                node = stack.pop()
                subtree.add(_name(node.name))
                stack.extend(node.cpu_children)
            self.tops.append((name, subtree))

    def unseen(self, seen: Counter[str]) -> Counter[str]:
        """The top-most compute events no operation the recorder saw accounts for, by name."""
        left = Counter(seen)
        missing: Counter[str] = Counter()
        for name, subtree in self.tops:
            match = next((n for n in sorted(subtree) if left[n] > 0), None)
            if match is None:
                missing[name] += 1
            else:
                left[match] -= 1
        return missing


@contextmanager
def profiled() -> Iterator[Accounting]:
    """Profile the block on every thread; the `Accounting` is filled when the block ends."""
    accounting = Accounting()
    with profile(activities=[ProfilerActivity.CPU], experimental_config=_config()) as session:
        yield accounting
    accounting.read(session.events())
