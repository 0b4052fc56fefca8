"""What every test folder shares: `gpu` tests run only where CUDA works; tests that run Triton's
interpreter skip where it cannot run (`needs_interpreter`) and share its worker pools
(`interpreter_pools`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tritonsmith.evaluator.pool import WorkerPool


@functools.cache
def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if gpu_items and not _cuda():  # torch is imported only when a gpu test was collected
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in gpu_items:
            item.add_marker(skip)


def needs_interpreter() -> None:
    """Skip the calling test unless Triton's interpreter can run: torch, Triton and numpy (the
    interpreter computes with it) installed."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    pytest.importorskip("numpy", reason="Triton's interpreter needs numpy")


@pytest.fixture(scope="module")
def interpreter_pools() -> Iterator[tuple[WorkerPool, WorkerPool]]:
    """(reference, candidate) worker pools running Triton's interpreter, one worker each as the
    editor and `verify` run them; kept warm across a module's tests (a killed worker is replaced)."""
    from tritonsmith.evaluator.pool import WorkerPool

    needs_interpreter()
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    with WorkerPool(1, env=env) as reference, WorkerPool(1, env=env) as candidate:
        yield reference, candidate
