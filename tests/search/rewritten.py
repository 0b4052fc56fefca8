"""What the rewrite tests check of a rewritten KernelBench problem: it compiles for sm_90 and
its `ModelNew` verifies against its `Model` under the interpreter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def compile_reports(source: str, name: str, kernels: list[str] | None = None) -> list:
    """The sm_90 compile reports of the file's launched kernels (or the named ones)."""
    pytest.importorskip("triton")
    from tritonsmith.evaluator.pool import WorkerPool
    from tritonsmith.evaluator.reports import compile_file

    with WorkerPool(1) as pool:
        return compile_file(pool, source, path=name, targets=["sm_90"], kernels=kernels)


def verify_on_cpu(source: str, path: Path) -> None:
    """Write `source` to `path` and assert its `ModelNew` verifies under the interpreter."""
    pytest.importorskip("triton")
    from tritonsmith.evaluator.pool import WorkerPool
    from tritonsmith.evaluator.specs import detect_kernelbench
    from tritonsmith.evaluator.verify import verify_spec

    path.write_text(source)
    spec = detect_kernelbench(path)
    assert spec is not None
    env = dict(os.environ, TRITON_INTERPRET="1")
    with WorkerPool(1, env=env) as reference, WorkerPool(1, env=env) as candidate:
        verdict = verify_spec(spec, mode="interpreter", pools=(reference, candidate), time_it=False)
    assert verdict.ok, verdict.summary()
