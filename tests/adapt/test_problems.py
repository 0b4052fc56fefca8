"""The project's task suite (bench/problems/): every problem is a KernelBench-format file whose
Triton `ModelNew` verifies against its `Model` on the CPU, passes `tritonsmith check`, and is
listed in the suite's README."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tritonsmith.adapt.run import first_kernel, task_files
from tritonsmith.cli import main
from tritonsmith.evaluator.sizes import size_constants
from tritonsmith.evaluator.specs import detect_kernelbench

PROBLEMS = Path(__file__).resolve().parents[2] / "bench" / "problems"
FILES = sorted(PROBLEMS.glob("*.py"))


def test_the_suite_has_at_least_twelve_problems_each_listed_in_the_readme():
    assert len(FILES) >= 12
    assert task_files(PROBLEMS) == FILES
    readme = (PROBLEMS / "README.md").read_text()
    for path in FILES:
        assert f"`{path.name}`" in readme, path.name


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_problem_is_a_one_file_kernelbench_spec_with_a_kernel_and_realistic_sizes(path: Path):
    source = path.read_text()
    spec = detect_kernelbench(path, source)
    assert spec is not None and spec.same_file
    assert first_kernel(source) is not None
    sizes = size_constants(source)
    assert max(sizes.values()) >= 1024, sizes  # written for a GPU; the verifier scales them down


def test_each_problem_passes_check(capsys):
    assert main(["check", *map(str, FILES)]) == 0, capsys.readouterr().out


@pytest.mark.compiler
@pytest.mark.timeout(900)
def test_every_problem_verifies_on_the_cpu():
    pytest.importorskip("triton")
    pytest.importorskip("numpy")
    from tritonsmith.evaluator.pool import WARM_MODULES, WorkerPool
    from tritonsmith.evaluator.protocol import Job
    from tritonsmith.evaluator.verify import verify_spec

    env = dict(os.environ, TRITON_INTERPRET="1")
    failed, slow = [], []
    with WorkerPool(1, env=env) as reference, WorkerPool(1, env=env) as candidate:
        for pool in (reference, candidate):  # the first problem's time is not the workers' start
            pool.run(Job("preload", {"modules": [*WARM_MODULES, "torch._dynamo"]}, timeout_s=300, memory_mb=4096))
        for path in FILES:
            spec = detect_kernelbench(path)
            assert spec is not None
            began = time.monotonic()
            verdict = verify_spec(spec, mode="interpreter", pools=(reference, candidate), time_it=False)
            seconds = time.monotonic() - began
            if not verdict.ok:
                failed.append(f"{path.name}: {verdict.summary()}")
            if seconds > 15:
                slow.append(f"{path.name}: {seconds:.0f} s")
    assert not failed, failed
    assert not slow, slow  # "in seconds": each problem must stay cheap under the interpreter
