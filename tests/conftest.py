"""Test-session setup shared by every test folder: `gpu` tests run only where CUDA works."""

from __future__ import annotations

import functools

import pytest


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
