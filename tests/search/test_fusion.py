"""Fusing two consecutively launched elementwise kernels (issue 15): the rewrite a kernel
engineer makes, and each precondition that keeps it from changing what the launcher computes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from rewritten import verify_on_cpu

from tritonsmith.analysis import Document, index_module
from tritonsmith.search.model import StepContext, Task
from tritonsmith.search.proposers.fusion import fuse_elementwise
from tritonsmith.search.proposers.offline import OfflineProposer, launched_kernels

PROBLEMS = Path(__file__).resolve().parents[2] / "bench" / "problems"
TWO_KERNEL_PROBLEMS = ["bias_silu", "residual_add_clamp", "scale_bias_relu", "linear_bias_relu"]
LINEAR = (PROBLEMS / "linear_bias_relu.py").read_text()

PAIR = '''import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def clamp_kernel(x_ptr, out_ptr, n_elements, low, high, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.minimum(tl.maximum(x, low), high), mask=mask)


def launch(x, residual):
    n = x.numel()
    tmp = torch.empty_like(x)
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, residual, tmp, n, BLOCK_SIZE=16)
    clamp_kernel[grid](tmp, out, n, -1.0, 1.0, BLOCK_SIZE=16)
    return out
'''

FUSED_KERNEL = '''@triton.jit
def add_clamp_kernel(x_ptr, y_ptr, n_elements, out_ptr, low, high, BLOCK_SIZE: tl.constexpr):
    """add_kernel and clamp_kernel fused: tmp stays in registers."""
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    tmp = x + y
    tl.store(out_ptr + offsets, tl.minimum(tl.maximum(tmp, low), high), mask=mask)
'''


def launches(source: str) -> list[str]:
    index = index_module(Document(source).root)
    return sorted(k.name for k in index.kernels for _ in k.launches)


def test_two_elementwise_launches_become_one_kernel_and_the_temporary_goes():
    fused = fuse_elementwise(PAIR)
    assert fused is not None
    assert FUSED_KERNEL in fused
    assert "        add_clamp_kernel[grid](x, residual, n, out, -1.0, 1.0, BLOCK_SIZE=16)\n" not in fused  # 4 spaces
    assert "    add_clamp_kernel[grid](x, residual, n, out, -1.0, 1.0, BLOCK_SIZE=16)\n" in fused
    assert "tmp = torch.empty_like(x)" not in fused
    assert launches(fused) == ["add_clamp_kernel"]
    # The old kernels stay (another module may import them); the file still parses cleanly.
    assert "def add_kernel(" in fused and "def clamp_kernel(" in fused
    assert not Document(fused).root.has_error


@pytest.mark.parametrize("name", TWO_KERNEL_PROBLEMS)
def test_every_two_kernel_elementwise_problem_of_the_suite_fuses(name: str):
    fused = fuse_elementwise((PROBLEMS / f"{name}.py").read_text())
    assert fused is not None
    assert len(launches(fused)) == 1


@pytest.mark.parametrize("change, why", [
    (("    return out\n", "    return out, tmp\n"), "the temporary is read after the second launch"),
    (("clamp_kernel[grid](", "clamp_kernel[(triton.cdiv(n, 16),)]("), "the grids differ"),
    (("clamp_kernel[grid](tmp, out, n, -1.0, 1.0, BLOCK_SIZE=16)", "clamp_kernel[grid](tmp, out, n, -1.0, 1.0, BLOCK_SIZE=32)"),
     "the block sizes differ, so lane i is not the same element"),
    (("x = tl.load(x_ptr + offsets, mask=mask, other=0.0)\n    tl.store(out_ptr + offsets, tl.minimum",
      "x = tl.load(x_ptr + offsets + 1, mask=mask, other=0.0)\n    tl.store(out_ptr + offsets, tl.minimum"),
     "the consumer reads a neighbour's element"),
    (("tl.store(out_ptr + offsets, tl.minimum(tl.maximum(x, low), high), mask=mask)",
      "tl.store(out_ptr + offsets, tl.minimum(tl.maximum(x, low), high), mask=offsets < n_elements + 1)"),
     "the consumer stores lanes the producer did not compute"),
    (("tl.store(out_ptr + offsets, x + y, mask=mask)", "tl.store(out_ptr + offsets, x + tl.sum(y, axis=0), mask=mask)"),
     "the producer reduces across lanes"),
    (("    pid = tl.program_id(axis=0)\n    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n    mask = offsets < n_elements\n    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)\n    tl.store(",
      "    pid = tl.program_id(axis=0)\n    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n    mask = offsets < n_elements\n    if pid == 0:\n        low = low * 2\n    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)\n    tl.store("),
     "the consumer has control flow"),
    (("add_kernel[grid](x, residual, tmp, n, BLOCK_SIZE=16)", "add_kernel[grid](x, tmp, tmp, n, BLOCK_SIZE=16)"),
     "the temporary is also the producer's input"),
    (("    tmp = torch.empty_like(x)\n", ""), "the temporary is not the launcher's own allocation"),
    (("    clamp_kernel[grid](tmp, out, n, -1.0, 1.0, BLOCK_SIZE=16)\n    return out\n",
      "    clamp_kernel[grid](tmp, residual, n, -1.0, 1.0, BLOCK_SIZE=16)\n    return residual\n"),
     "the consumer writes into a tensor the producer reads"),
    (("    add_kernel[grid](x, residual, tmp, n, BLOCK_SIZE=16)\n",
      "    add_kernel[grid](x, residual, tmp, n, BLOCK_SIZE=16)\n    n = n // 2\n"),
     "a statement between the launches rebinds an argument"),
    (("    add_kernel[grid](x, residual, tmp, n, BLOCK_SIZE=16)\n",
      "    add_kernel[grid](x, residual, tmp, n, BLOCK_SIZE=16)\n    print(tmp.sum())\n"),
     "a statement between the launches reads the temporary"),
    (("    pid = tl.program_id(axis=0)\n    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n    mask = offsets < n_elements\n    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)\n    y",
      "    pid = tl.program_id(axis=1)\n    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n    mask = offsets < n_elements\n    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)\n    y"),
     "a second program axis"),
])
def test_no_fusion_where_a_precondition_fails(change: tuple[str, str], why: str):
    old, new = change
    assert PAIR.count(old) == 1, why
    assert fuse_elementwise(PAIR.replace(old, new)) is None, why


def test_clashing_names_get_a_suffix_and_shared_arguments_one_parameter():
    source = PAIR.replace("def clamp_kernel(x_ptr, out_ptr, n_elements, low, high,",
                          "def clamp_kernel(x_ptr, out_ptr, n_elements, y_ptr, high,")
    source = source.replace("tl.minimum(tl.maximum(x, low), high)", "tl.minimum(tl.maximum(x, tl.load(y_ptr)), high)")
    source = source.replace("clamp_kernel[grid](tmp, out, n, -1.0, 1.0,", "clamp_kernel[grid](tmp, out, n, lo, 1.0,")
    fused = fuse_elementwise(source)
    assert fused is not None
    assert "def add_clamp_kernel(x_ptr, y_ptr, n_elements, out_ptr, y_ptr_2, high, BLOCK_SIZE: tl.constexpr):" in fused
    assert "tl.maximum(tmp, tl.load(y_ptr_2))" in fused
    assert "add_clamp_kernel[grid](x, residual, n, out, lo, 1.0, BLOCK_SIZE=16)" in fused


def test_an_elementwise_kernel_after_a_matmul_becomes_its_epilogue_on_the_accumulator():
    fused = fuse_elementwise(LINEAR)
    assert fused is not None
    assert launches(fused) == ["matmul_bias_relu_kernel"]
    kernel = fused[fused.index("def matmul_bias_relu_kernel("):fused.index("class ModelNew")]
    # The consumer's flat offsets become the memory offsets the matmul stored y at; its mask,
    # the matmul's store mask; its load of y, the accumulator.
    assert kernel.rstrip().endswith(
        "    out_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)\n"
        "    offsets = offs_m[:, None] * stride_om + offs_n[None, :] * stride_on\n"
        "    b = tl.load(b_ptr + offsets % N, mask=out_mask, other=0.0)\n"
        "    tl.store(out_ptr + offsets, tl.maximum(acc + b, 0.0), mask=out_mask)")
    assert "matmul_bias_relu_kernel[grid](x, w, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1), " \
        "y.stride(0), y.stride(1), self.linear.bias, out, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)" in fused
    # What only the consumer's launch read goes with it; y stays (its strides are passed).
    assert "epilogue_grid" not in fused and "n = y.numel()" not in fused
    assert "y = torch.empty((M, N), device=x.device, dtype=x.dtype)" in fused


def test_the_launchers_own_dead_code_is_left_alone():
    source = PAIR.replace("    n = x.numel()\n", "    n = x.numel()\n    unused = n * 2\n")
    fused = fuse_elementwise(source)
    assert fused is not None and "    unused = n * 2\n" in fused


@pytest.mark.parametrize("change, why", [
    (("        n = y.numel()\n", "        n = y.numel() // 2\n"), "the consumer covers part of the temporary only"),
    (("    b = tl.load(b_ptr + offsets % n_cols, mask=mask, other=0.0)\n",
      "    b = tl.load(b_ptr + pid % n_cols, mask=mask, other=0.0)\n"), "the consumer reads its program id"),
    (("    b = tl.load(b_ptr + offsets % n_cols, mask=mask, other=0.0)\n",
      "    b = tl.load(b_ptr + offsets % BLOCK_SIZE, mask=mask, other=0.0)\n"), "the consumer reads its block size"),
    (("        out = torch.empty_like(y)\n", "        out = torch.empty_like(y)\n        print(y.sum())\n"),
     "a statement between the launches reads the temporary's data"),
    (("    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)\n", "    y = tl.load(y_ptr + offsets + 1, mask=mask, other=0.0)\n"),
     "the consumer reads a neighbour's element"),
    (("        return out\n", "        return out + y\n"), "the temporary is read after the second launch"),
    (("        bias_relu_kernel[epilogue_grid](y, self.linear.bias, out, n, N, BLOCK_SIZE=16)\n        return out\n",
      "        bias_relu_kernel[epilogue_grid](y, self.linear.bias, x, n, N, BLOCK_SIZE=16)\n        return x\n"),
     "the consumer writes into the matmul's input, which other tiles still read once fused"),
])
def test_no_epilogue_fusion_where_a_precondition_fails(change: tuple[str, str], why: str):
    old, new = change
    assert LINEAR.count(old) == 1, why
    assert fuse_elementwise(LINEAR.replace(old, new)) is None, why


def test_the_regeneration_fuses_first_and_then_transforms_the_fused_kernel():
    """The kernel asked for (`add_kernel`) is no longer launched after the fusion: the block
    jump moves the fused kernel's launch instead of finding nothing to do."""
    assert launched_kernels(PAIR, "clamp_kernel") == ["clamp_kernel", "add_kernel"]
    task = Task(path="pair.py", kernel="add_kernel", source=PAIR, spec="oracle", device="interpreter")
    candidate = OfflineProposer(random.Random(0)).regenerate(StepContext(task=task))
    assert launches(candidate) == ["add_clamp_kernel"]
    assert "add_clamp_kernel[grid](x, residual, n, out, -1.0, 1.0, BLOCK_SIZE=64)" in candidate


@pytest.mark.compiler
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", TWO_KERNEL_PROBLEMS)
def test_the_fused_problem_verifies_on_the_cpu(name: str, tmp_path: Path):

    fused = fuse_elementwise((PROBLEMS / f"{name}.py").read_text())
    assert fused is not None
    verify_on_cpu(fused, tmp_path / f"{name}.py")
    assert len(launches(fused)) == 1
