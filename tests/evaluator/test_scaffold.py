"""The harness scaffold (evaluator/scaffold.py): what "Create verification harness" writes for a
launcher, and that a scaffold whose reference is filled in is a harness the verifier accepts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tritonsmith.evaluator.scaffold import (
    Launcher,
    apply_scaffold,
    find_launchers,
    launcher_at,
    scaffold_harness,
)
from tritonsmith.evaluator.specs import detect_harnesses

VECTOR_ADD = '''"""Vector addition."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = out.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    return out


if __name__ == "__main__":
    print(add(torch.ones(3), torch.ones(3)))
'''

SOFTMAX = '''import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * row_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * row_stride + offs, num / tl.sum(num, axis=0), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](out, x, cols, x.stride(0), BLOCK=1024)
    return out
'''

# No `import torch`; int, float and defaulted parameters; a class method that launches too.
SCALE = '''"""Scale a vector."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * alpha, mask=offs < n)


def scale(x, n_elements: int, alpha: float, BLOCK=256, *, check=False):
    out = x.new_empty(x.shape)
    scale_kernel[(triton.cdiv(n_elements, BLOCK),)](x, out, n_elements, alpha, BLOCK=BLOCK)
    return out


class Wrapper:
    def run(self, x):
        scale_kernel[(1,)](x, x, 1, 1.0, BLOCK=16)
'''


def _harness_text(source: str, launcher: str) -> str:
    """The text the scaffold inserts after the launcher."""
    scaffold = scaffold_harness(source, launcher)
    assert scaffold is not None
    return scaffold.insertions[-1].text


def test_vector_add_scaffold_is_one_dimensional_with_a_shared_length() -> None:
    (launcher,) = find_launchers(VECTOR_ADD)
    assert launcher.name == "add" and not launcher.has_harness
    scaffold = scaffold_harness(VECTOR_ADD, "add")
    assert scaffold is not None
    assert len(scaffold.insertions) == 1  # torch is imported already
    assert scaffold.constants == {"ADD_N": 1024}
    result = apply_scaffold(VECTOR_ADD, scaffold)
    expected = '''    return out


# Verification harness for add() (docs/harness.md): fill in add_reference.
ADD_N = 1024


def add_inputs():
    """One trial's arguments for add(), drawn fresh under each trial's seed."""
    return [torch.randn(ADD_N, device="cuda"), torch.randn(ADD_N, device="cuda")]


def add_reference(x, y):
    """What add(x, y) must return, in plain PyTorch.

    Compared with what add() returns, output by output: a tensor element by element within its
    dtype's tolerance (atol = rtol = 1e-4 for float32, 1e-2 for float16 and bfloat16), with the
    same shape and dtype; an int, bool or str must be equal, a float within the float32
    tolerance.
    """
    raise NotImplementedError("write what add(x, y) must return, in PyTorch")


if __name__ == "__main__":
'''
    assert expected in result
    compile(result, "vector_add.py", "exec")  # still Python


def test_a_launcher_returning_a_tuple_is_told_what_is_compared() -> None:
    """Issue 34: a library launcher returns `(y, BLOCK_SIZE, num_warps, multi_block)`; the
    scaffold's reference says it must return the same values, each compared as its kind."""
    source = VECTOR_ADD.replace("    return out\n", "    return out, 1024, False\n")
    scaffold = scaffold_harness(source, "add")
    assert scaffold is not None
    words = " ".join(apply_scaffold(source, scaffold).split())
    assert "must return, in plain PyTorch, the same 3 values as `return out, 1024, False`." in words
    assert "a tensor element by element within its dtype's tolerance" in words and "an int, bool or str must be equal" in words


def test_two_dimensional_launcher_names_its_sizes_from_the_shape_unpacking() -> None:
    text = _harness_text(SOFTMAX, "softmax")
    assert "SOFTMAX_ROWS = 1024\nSOFTMAX_COLS = 1024\n" in text
    assert 'return [torch.randn(SOFTMAX_ROWS, SOFTMAX_COLS, device="cuda")]' in text
    assert "def softmax_reference(x):" in text
    # The file ended after the launcher: the insertion ends the file with a newline.
    assert apply_scaffold(SOFTMAX, scaffold_harness(SOFTMAX, "softmax")).endswith('PyTorch")\n')  # type: ignore[arg-type]


def test_int_and_float_parameters_defaults_skipped_and_torch_imported() -> None:
    launchers = find_launchers(SCALE)
    assert [launcher.name for launcher in launchers] == ["scale"]  # not the method
    scaffold = scaffold_harness(SCALE, "scale")
    assert scaffold is not None
    result = apply_scaffold(SCALE, scaffold)
    # `import torch` goes first among the imports, after the `__future__` one.
    assert "from __future__ import annotations\n\nimport torch\nimport triton\n" in result
    assert 'return [torch.randn(SCALE_N, device="cuda"), SCALE_N, 0.5]' in result
    assert "def scale_reference(x, n_elements, alpha):" in result  # no BLOCK, no check
    assert scaffold.constants == {"SCALE_N": 1024}
    compile(result, "scale.py", "exec")


@pytest.mark.parametrize(("body", "inputs"), [
    ("    m = x.shape[0]\n    n = x.shape[-1]\n", 'torch.randn(F_M, F_N, device="cuda")'),
    ("    assert x.ndim == 3\n    c = x.size(1)\n", 'torch.randn(F_DIM0, F_C, F_DIM2, device="cuda")'),
    ("    s = x.stride(1)\n", 'torch.randn(F_DIM0, F_DIM1, device="cuda")'),
    ("    *batch, n = x.shape\n", 'torch.randn(F_N, device="cuda")'),  # open rank: 1-D
])
def test_rank_and_dimension_names_from_the_body(body: str, inputs: str) -> None:
    source = f"import torch\nimport triton\n\n\n@triton.jit\ndef k(p):\n    pass\n\n\ndef f(x):\n{body}    k[(1,)](x)\n    return x\n"
    assert f"return [{inputs}]" in _harness_text(source, "f")


def test_equal_dimensions_share_a_constant_and_torch_aliases_are_used() -> None:
    source = '''import torch as th
import triton


@triton.jit
def mm_kernel(a, b, c, M, N, K):
    pass


def matmul(a: th.Tensor, b: th.Tensor, batch_size: int) -> th.Tensor:
    M, K = a.shape
    K2, N = b.shape
    assert K == K2
    c = th.empty((M, N))
    mm_kernel[(1,)](a, b, c, M, N, K)
    return c
'''
    scaffold = scaffold_harness(source, "matmul")
    assert scaffold is not None and len(scaffold.insertions) == 1
    assert scaffold.constants == {"MATMUL_M": 1024, "MATMUL_K": 1024, "MATMUL_N": 1024, "MATMUL_BATCH_SIZE": 16}
    text = scaffold.insertions[0].text
    assert 'th.randn(MATMUL_M, MATMUL_K, device="cuda"),' in text
    assert 'th.randn(MATMUL_K, MATMUL_N, device="cuda"),' in text


def test_a_launcher_with_a_harness_gets_no_scaffold() -> None:
    with_harness = VECTOR_ADD + "\n\ndef add_inputs():\n    return [torch.randn(8)]\n"
    (launcher,) = find_launchers(with_harness)
    assert launcher.has_harness
    assert scaffold_harness(with_harness, "add") is None
    assert scaffold_harness(VECTOR_ADD, "add_kernel") is None  # a kernel is no launcher
    assert scaffold_harness(VECTOR_ADD, "missing") is None


def test_launcher_at_covers_the_definition_rows() -> None:
    (launcher,) = find_launchers(VECTOR_ADD)
    assert launcher == Launcher("add", (17, 0), (22, 14), False)
    assert launcher_at([launcher], (17, 5)) == launcher  # the def line
    assert launcher_at([launcher], (21, 0)) == launcher  # the body
    assert launcher_at([launcher], (10, 0)) is None  # the kernel
    assert launcher_at([launcher], (10, 0), (18, 0)) == launcher  # a selection reaching it


def test_broken_code_gives_no_launchers() -> None:
    assert find_launchers("def f(:\n    k[(1,)](\n") == []
    assert find_launchers("") == []


# -- the scaffold, filled in, verifies --------------------------------------------------------


@pytest.mark.compiler
@pytest.mark.parametrize(("source", "launcher", "reference"), [
    (VECTOR_ADD, "add", "    return x + y"),
    (SOFTMAX, "softmax", "    return torch.softmax(x, dim=-1)"),
    (SCALE, "scale", "    return x * alpha"),
])
def test_filled_in_scaffold_is_a_harness_that_verifies(
    tmp_path: Path, source: str, launcher: str, reference: str
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    pytest.importorskip("numpy", reason="Triton's interpreter needs numpy")
    scaffold = scaffold_harness(source, launcher)
    assert scaffold is not None
    filled = apply_scaffold(source, scaffold)
    placeholder = next(line for line in filled.splitlines() if "raise NotImplementedError" in line)
    filled = filled.replace(placeholder, reference)
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / f"{launcher}.py"
    path.write_text(filled)

    (spec,) = detect_harnesses(path)
    assert spec.launcher == launcher

    proc = subprocess.run(
        [sys.executable, "-m", "tritonsmith", "verify", str(path), "--device", "cpu"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{launcher}: verified" in proc.stdout
