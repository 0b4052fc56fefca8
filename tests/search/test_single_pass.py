"""A multi-pass row reduction made single-pass (issue 15): one block covers the row, the loops
become one pass, and a load the row already made is not made again."""

from __future__ import annotations

from pathlib import Path

import pytest
from rewritten import verify_on_cpu

from tritonsmith.search.proposers.single_pass import single_pass

PROBLEMS = Path(__file__).resolve().parents[2] / "bench" / "problems"
SOFTMAX = (PROBLEMS / "softmax.py").read_text()

SINGLE_PASS_SOFTMAX = '''def softmax_kernel(x_ptr, out_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = x_ptr + row * row_stride
    out_row = out_ptr + row * row_stride
    offsets = tl.arange(0, BLOCK_SIZE)
    row_max = tl.full([BLOCK_SIZE], float("-inf"), dtype=tl.float32)
    cols = offsets
    x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf"))
    row_max = tl.maximum(row_max, x)
    m = tl.max(row_max, axis=0)
    total = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    total += tl.exp(x - m)
    s = tl.sum(total, axis=0)
    mask = cols < n_cols
    tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
'''


def test_softmax_reads_its_row_in_one_block_and_the_second_pass_reuses_the_first_load():
    out = single_pass(SOFTMAX, "softmax_kernel")
    assert out is not None
    assert SINGLE_PASS_SOFTMAX in out
    assert "softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK_SIZE=triton.next_power_of_2(cols))" in out


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "layer_norm", "rms_norm", "row_sum", "row_max"])
def test_every_looping_row_reduction_of_the_suite_applies(name: str):
    from tritonsmith.adapt.run import first_kernel

    source = (PROBLEMS / f"{name}.py").read_text()
    kernel = first_kernel(source)
    assert kernel is not None
    out = single_pass(source, kernel)
    assert out is not None and "for start in range" not in out.split(f"def {kernel}(")[1].split("class ModelNew")[0]


@pytest.mark.parametrize("name, kernel", [("mean_dim", "mean_dim1_kernel"), ("linear_bias_relu", "matmul_kernel")])
def test_tiles_and_matmul_k_loops_keep_their_loops(name: str, kernel: str):
    """A whole row times a tile's other dimension, or a whole K for a dot, would not fit a GPU's
    registers: the interpreter would time it faster, a GPU would spill."""
    assert single_pass((PROBLEMS / f"{name}.py").read_text(), kernel) is None


def test_the_single_pass_carries_no_dead_code():
    """The loop variable, now 0, goes where it is added (`cols = start + offsets` is `cols =
    offsets`); a load that reads what an earlier one read through a name for its mask goes; an
    assignment nothing reads again goes, one that stores stays."""
    source = SOFTMAX.replace("        s = tl.sum(total, axis=0)\n",
                             "        s = tl.sum(total, axis=0)\n        unused = tl.sum(x, axis=0)\n")
    out = single_pass(source, "softmax_kernel")
    assert out is not None and SINGLE_PASS_SOFTMAX in out and "unused" not in out and "start" not in out
    # A use of the loop variable that is not a sum keeps it, as 0.
    scaled = SOFTMAX.replace("        cols = start + offsets\n        x = tl.load(x_row + cols, mask=cols < n_cols, "
                             "other=float(\"-inf\"))\n        row_max",
                             "        cols = start * 1 + offsets\n        x = tl.load(x_row + cols, mask=cols < n_cols, "
                             "other=float(\"-inf\"))\n        row_max")
    assert scaled != SOFTMAX
    out = single_pass(scaled, "softmax_kernel")
    assert out is not None and "    start = 0\n    cols = start * 1 + offsets\n" in out
    # A different `other=` is a different load: kept.
    log = (PROBLEMS / "log_softmax.py").read_text()
    out = single_pass(log, "log_softmax_kernel")
    assert out is not None and out.count("tl.load(") == 2


def test_a_repeated_accumulation_is_not_a_repeat():
    """`total += x` twice is twice the sum: only plain assignments that do not read their own
    target are dropped as repeats."""
    source = SOFTMAX.replace("        total += tl.exp(x - m)\n", "        total = total + tl.exp(x - m)\n        total = total + tl.exp(x - m)\n")
    out = single_pass(source, "softmax_kernel")
    assert out is not None and out.count("    total = total + tl.exp(x - m)\n") == 2


@pytest.mark.parametrize("change, why", [
    (("        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)\n",
      "        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)\n    tl.store(out_row, start)\n"),
     "the loop variable is read after its loop"),
    (("        row_max = tl.maximum(row_max, x)\n", "        row_max = tl.maximum(row_max, x)\n        if start > 64:\n            break\n"),
     "a loop can stop early"),
    (("    for start in range(0, n_cols, BLOCK_SIZE):\n        cols = start + offsets\n        x = tl.load(x_row + cols, mask=cols < n_cols, other=float(\"-inf\"))\n        total",
      "    for start in range(0, n_cols, 2 * BLOCK_SIZE):\n        cols = start + offsets\n        x = tl.load(x_row + cols, mask=cols < n_cols, other=float(\"-inf\"))\n        total"),
     "a loop steps by something else than the block"),
    (("softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK_SIZE=16)",
      "softmax_kernel[(rows,)](x, out, cols, x.stride(0), 16)"), "the launch passes the block by position"),
    (("softmax_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK_SIZE=16)",
      "softmax_kernel[lambda meta: (rows * meta['BLOCK_SIZE'] // 16,)](x, out, cols, x.stride(0), BLOCK_SIZE=16)"),
     "the grid reads the block"),
    (("import triton\n", ""), "the module does not import triton (no next_power_of_2 to call)"),
])
def test_no_single_pass_where_a_precondition_fails(change: tuple[str, str], why: str):
    old, new = change
    assert SOFTMAX.count(old) == 1, why
    assert single_pass(SOFTMAX.replace(old, new), "softmax_kernel") is None, why


@pytest.mark.compiler
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ["softmax", "layer_norm", "rms_norm"])
def test_the_single_pass_problem_verifies_on_the_cpu(name: str, tmp_path: Path):
    from tritonsmith.adapt.run import first_kernel

    source = (PROBLEMS / f"{name}.py").read_text()
    kernel = first_kernel(source)
    assert kernel is not None
    out = single_pass(source, kernel)
    assert out is not None
    verify_on_cpu(out, tmp_path / f"{name}.py")
