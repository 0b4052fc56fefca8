"""Hollow tensors (evaluator/hollow.py): PyTorch at the sizes as written, computing nothing, and
the prediction profiled that way (or, where it cannot be, with data at scaled sizes)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _resident_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    pytest.skip("no /proc/self/status")


def test_operators_allocate_their_outputs_and_compute_nothing():
    torch = pytest.importorskip("torch")
    from tritonsmith.evaluator.hollow import HollowError, hollow

    before = _resident_mb()
    began = time.perf_counter()
    with hollow():
        x = torch.randn(4096, 393216)  # 6 GiB, if it were drawn
        w = torch.nn.Linear(393216, 64, bias=False).weight  # initialised in place: skipped
        y = torch.relu(x) @ w.t()
        z = x.add_(1.0)
        rows = x[:, :8].sum(dim=1, keepdim=True)
        index = torch.argmax(x, dim=1)
        cast = x.to(torch.float16)
        with pytest.raises(HollowError, match="value"):
            x.max().item()  # a value read back would steer the pass by noise
        with pytest.raises(HollowError, match="nonzero"):
            torch.nonzero(x[0])  # its shape depends on the values
    assert time.perf_counter() - began < 5
    assert _resident_mb() - before < 512  # the pages were never touched
    assert y.shape == (4096, 64) and rows.shape == (4096, 1) and cast.dtype == torch.float16
    assert z is x  # an in-place operator returns what it would have written
    assert index.dtype == torch.int64 and int(index[:16].abs().sum()) == 0  # integers zeroed: indices in bounds


def _pools():
    from tritonsmith.evaluator.pool import WorkerPool

    env = dict(os.environ, TRITON_INTERPRET="1")
    return WorkerPool(1, env=env), WorkerPool(1, env=env), WorkerPool(1)


def _predict(path: Path):
    pytest.importorskip("triton")
    from tritonsmith.evaluator.predicted import predict_spec
    from tritonsmith.evaluator.specs import detect_specs

    spec = detect_specs(path)[0]
    reference, candidate, compiler = _pools()
    with reference, candidate, compiler:
        return predict_spec(spec, path.read_text(), path=str(path), target="sm_90", pools=(reference, candidate),
                            compile_pool=compiler)


@pytest.mark.compiler
def test_a_6_gib_relu_is_predicted_at_its_sizes_as_written_without_drawing_them(tmp_path: Path):
    """KernelBench's ReLU at 4096 x 393216: every byte counted at the real size (one read and
    one write of 6 GiB), although the pass never drew the input."""
    path = tmp_path / "relu.py"
    path.write_text((ROOT / "examples" / "kernelbench_relu.py").read_text())
    began = time.perf_counter()
    predicted = _predict(path)
    assert predicted.prediction is not None, predicted.error
    assert time.perf_counter() - began < 60
    assert predicted.sizes_text() == "as written" and predicted.profiled == "without data"
    launch = predicted.prediction.launches[0]
    n = 4096 * 393216
    assert launch.programs == n // 1024
    assert launch.dram_bytes == pytest.approx(8.0 * n, rel=1e-3)
    # 12.9 GB at the H100's 3.35 TB/s: about 3.8 ms, whatever the interpreter's speed.
    assert 3e-3 < predicted.seconds < 6e-3


@pytest.mark.compiler
def test_a_forward_pass_that_needs_values_is_profiled_with_data_and_says_so(tmp_path: Path):
    """`nonzero` has no shape without values: the hollow pass gives up, and the prediction is
    profiled with real data at sizes the interpreter runs, with a note saying why."""
    source = (ROOT / "examples" / "kernelbench_relu.py").read_text()
    needs_values = source.replace("    out = torch.empty_like(x)\n",
                                  "    out = torch.empty_like(x)\n    assert torch.nonzero(x[:1, :1]).shape[1] == 2\n")
    assert needs_values != source
    path = tmp_path / "relu.py"
    path.write_text(needs_values)
    predicted = _predict(path)
    assert predicted.prediction is not None, predicted.error
    assert predicted.profiled == "with data" and "of 4096" in predicted.sizes_text()
    assert any("without data" in note and "nonzero" in note for note in predicted.prediction.notes)


def test_loop_samples_stand_for_every_iteration_and_keep_the_first_and_last():
    import random

    from tritonsmith.evaluator.profile import loop_sample

    for n in (1, 4, 5, 384, 100_003):
        for rng in (None, random.Random(n)):
            sample = loop_sample(n, 4, rng)
            assert sum(weight for _, weight in sample) == pytest.approx(n)
            assert len(sample) == min(n, 4) and sample[0][0] == 0 and sample[-1][0] == n - 1
            assert len({index for index, _ in sample}) == len(sample)



@pytest.mark.parametrize(("loop", "counted"), [
    ("while k < K:\n    a = k\n    k += B", ("k", "K", "B", False)),
    ("while k <= n - 1:\n    k += 2 * B", ("k", "n - 1", "2 * B", True)),
    ("while K > k:\n    k += B\n    x = k", ("k", "K", "B", False)),
    ("while k < K:\n    k += B\n    K = K - 1", None),  # the bound moves
    ("while k < K:\n    k += B\n    B = 2 * B", None),  # the step moves
    ("while k < K:\n    k += B\n    k = k * 2", None),  # the variable moves otherwise
    ("while k < K:\n    k += B\n    if k > 9:\n        break", None),
    ("while k < K:\n    if c:\n        k += B", None),  # the step is not every iteration's
    ("while k < K:\n    k += B\n    k += B", None),
    ("while k < K:\n    k -= B", None),
    ("while (k := k + 1) < K:\n    pass", None),
    ("while x.sum() < K:\n    x += 1", None),  # the kernel's state
    ("while k < K and j < J:\n    k += B", None),
])
def test_a_counted_while_is_told_from_one_whose_condition_is_the_kernels_state(loop, counted):
    import ast

    from tritonsmith.evaluator.profile import _counted_while

    found = _counted_while(ast.parse(loop).body[0])
    if counted is None:
        assert found is None
    else:
        assert found is not None
        assert (found[0], ast.unparse(found[1]), ast.unparse(found[2]), found[3]) == counted

ROW_SUM = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


rows = 4096
cols = 393216


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + row * n_cols + offsets, mask=offsets < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(total, axis=0))


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=1024)
        return out
'''


@pytest.mark.compiler
def test_a_kernel_looping_over_a_6_gib_row_block_is_counted_exactly_from_a_few_iterations(tmp_path: Path):
    """384 iterations per row at the real width: the pass runs four of each sampled program's,
    each standing for its share, and the bytes come out exact."""
    path = tmp_path / "row_sum.py"
    path.write_text(ROW_SUM)
    began = time.perf_counter()
    predicted = _predict(path)
    assert predicted.prediction is not None, predicted.error
    assert time.perf_counter() - began < 60
    assert predicted.profiled == "without data" and predicted.sizes_text() == "as written"
    launch = predicted.prediction.launches[0]
    assert launch.programs == 4096
    assert launch.dram_bytes == pytest.approx(4.0 * 4096 * 393216 + 4.0 * 4096, rel=1e-6)


def test_a_reduction_that_casts_its_input_pays_for_the_copy():
    """`x.sum(dtype=torch.float16)` on float32 copies x to half inside the one operator (ATen's
    make_reduction), so it moves more than its argument and result; a half input summed in
    float32 is read as it is. Seen on a published kernel measured at twice its neighbour's time."""
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from tritonsmith.evaluator.hollow import hollow
    from tritonsmith.evaluator.profile import _torch_ops

    def traffic(run) -> float:
        counter = SimpleNamespace(in_kernel=False, host_ops=0, torch_ops={})
        with hollow(), _torch_ops(counter):
            run()
        return counter.torch_ops["sum"]["bytes"]

    x = torch.empty(16, 64, 128, 128)  # 64 MiB of float32 (hollow: never touched)
    h = torch.empty(16, 64, 128, 128, dtype=torch.float16)
    plain = traffic(lambda: x.sum(dim=(2, 3)))
    cast = traffic(lambda: x.sum(dim=(2, 3), dtype=torch.float16))
    assert plain == x.numel() * 4 + 16 * 64 * 4
    assert cast == x.numel() * 4 + 2 * x.numel() * 2 + 16 * 64 * 2  # the half copy, written and read back
    assert traffic(lambda: h.sum(dim=(2, 3), dtype=torch.float32)) == h.numel() * 2 + 16 * 64 * 4


def _profile(path: Path) -> dict:
    pytest.importorskip("triton")
    from tritonsmith.evaluator.specs import detect_specs
    from tritonsmith.evaluator.verify import profile_spec

    spec = detect_specs(path)[0]
    reference, candidate, _ = _pools()
    with reference, candidate:
        profile, _, error = profile_spec(spec, pools=(reference, candidate))
    assert profile is not None, error
    return profile


@pytest.mark.slow
def test_innermost_loop_iterations_are_counted_for_for_while_and_nested_loops(tmp_path: Path):
    """What a register spill inside a loop repeats (`predict._spill_traffic`): the innermost
    iterations of every program, counted from sampled `for` loops, from `while` loops (run whole:
    their condition is the kernel's state) and from a loop nest (the inner loop's, not the
    outer's), at the sizes as written."""
    kernels = {
        "for": """    for start in range(0, n_cols, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + row * n_cols + offsets, mask=offsets < n_cols, other=0.0)""",
        "while": """    start = 0
    while start < n_cols:
        offsets = start + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + row * n_cols + offsets, mask=offsets < n_cols, other=0.0)
        start += BLOCK""",
        "nested": """    half = n_cols // 2
    for part in range(2):
        for start in range(0, half, BLOCK):
            offsets = part * half + start + tl.arange(0, BLOCK)
            total += tl.load(x_ptr + row * n_cols + offsets, mask=offsets < n_cols, other=0.0)""",
    }
    loop = kernels["for"]
    for name, body in kernels.items():
        path = tmp_path / f"row_sum_{name}.py"
        path.write_text(ROW_SUM.replace(loop, body))
        launch = _profile(path)["launches"][0]
        assert launch["loop_iterations"] == pytest.approx(4096 * 384), name  # 393216 / 1024 a row
        assert launch["load_bytes"] == pytest.approx(4.0 * 4096 * 393216, rel=1e-6), name


@pytest.mark.slow
def test_a_counted_while_is_sampled_as_its_for_loop_is_and_one_whose_bound_moves_runs_whole(tmp_path: Path):
    """`while start < n_cols: ... start += BLOCK` is a `range` (a GEMM's K loop written as a while
    ran all its iterations under the interpreter, for every Config: seconds of a prediction).
    Only every 7th iteration loads, so a sample of 4 of 384 cannot count it exactly: the counted
    loop's loads stand for the 1 + 191 k iterations its draws make of them (the first and last
    iterations standing for themselves, two drawn ones for 191 each), the loop whose bound the
    body reassigns runs all 384 (55 of them load)."""
    body = """    start = 0
    limit = n_cols
    while start < limit:
        if start % (7 * BLOCK) == 0:
            offsets = start + tl.arange(0, BLOCK)
            total += tl.load(x_ptr + row * n_cols + offsets, mask=offsets < n_cols, other=0.0)
        start += BLOCK{moves}"""
    row_loop = ROW_SUM[ROW_SUM.index("    for start"):ROW_SUM.index("    tl.store")].rstrip("\n")
    row_bytes = 4.0 * 4096 * 1024  # one iteration's loads, over the 4096 rows
    for moves, expected in (("", None), ("\n        limit = limit + 0", 55)):
        path = tmp_path / f"row_sum_{bool(moves)}.py"
        path.write_text(ROW_SUM.replace(row_loop, body.format(moves=moves)))
        launch = _profile(path)["launches"][0]
        assert launch["loop_iterations"] == pytest.approx(4096 * 384)
        if expected is not None:
            assert launch["load_bytes"] == pytest.approx(expected * row_bytes, rel=1e-6)
        else:
            assert launch["load_bytes"] / row_bytes == pytest.approx(
                min((1, 192, 383), key=lambda k: abs(k - launch["load_bytes"] / row_bytes)), rel=1e-6)


def _autotuned_row_sum(configs: list[tuple[int, int, int]]) -> str:
    """ROW_SUM with an autotuner over (BLOCK, num_warps, num_stages) Configs."""
    listed = ", ".join(f"triton.Config({{'BLOCK': {b}}}, num_warps={w}, num_stages={s})" for b, w, s in configs)
    tuned = ROW_SUM.replace("@triton.jit\ndef row_sum_kernel",
                            f"@triton.autotune(configs=[{listed}], key=['n_cols'])\n@triton.jit\ndef row_sum_kernel")
    return tuned.replace("row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=1024)",
                         "row_sum_kernel[(x.shape[0],)](x, out, x.shape[1])")


@pytest.mark.slow
def test_configs_that_differ_only_in_warps_or_stages_run_their_programs_once(tmp_path: Path):
    """An autotuner's Configs often cross a few tile sizes with `num_warps` and `num_stages`,
    which the kernel cannot see: the programs of a trial whose tile an earlier trial had run are
    not run again (a 32-Config list cost a second under the interpreter), and its counts are the
    ones it would have counted, its warp instructions issued on its own warps."""
    configs = [(block, warps, stages) for block in (512, 1024) for warps in (1, 8) for stages in (1, 2)]
    path = tmp_path / "row_sum_tuned.py"
    path.write_text(_autotuned_row_sum(configs))
    trials = [launch for launch in _profile(path)["launches"] if launch.get("tuning")]
    assert [(t["constexprs"]["BLOCK"], t["num_warps"], t["num_stages"]) for t in trials] == configs
    assert [t["tuning"].get("counts_of") for t in trials] == [None, 0, 0, 0, None, 4, 4, 4]
    # Each as if its programs had run: in a list where no other Config has its tile.
    for index in (3, 6):
        alone_path = tmp_path / f"row_sum_alone_{index}.py"
        alone_path.write_text(_autotuned_row_sum([configs[index], (256, 4, 1)]))
        alone = next(launch for launch in _profile(alone_path)["launches"] if launch.get("tuning"))
        assert alone["tuning"].get("counts_of") is None and alone["num_warps"] == configs[index][1]
        for field in ("load_bytes", "store_bytes", "memory_ops", "loop_iterations", "warp_instructions"):
            assert trials[index][field] == pytest.approx(alone[field], rel=1e-9), (index, field)
    assert trials[3]["warp_instructions"] != trials[0]["warp_instructions"]  # 8 warps issue more than 1
