"""Size scaling (tritonsmith/evaluator/sizes.py): every form a problem writes its sizes in is
understood and rewritten alike; the real sizes are kept within the interpreter's budget; scaling
bounds the total, never lets a size gain a power-of-two factor (a tail stays a tail), keeps the
relations between sizes (groups divide channels); and the odd-size trial runs for KernelBench
problems too. The planner tests need no torch; the end-to-end ones run Triton's interpreter.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from tritonsmith.evaluator.pool import WorkerPool
from tritonsmith.evaluator.sizes import (
    ELEMENT_BUDGET,
    GPU_ELEMENT_BUDGET,
    WORK_BUDGET,
    block_exponent,
    interpreter_budget,
    plan_sizes,
    rewrite_constants,
    size_branches,
    size_constants,
    uniform_plan,
)
from tritonsmith.evaluator.verify import Verdict, detect_specs, verify_spec

pytestmark = [pytest.mark.compiler]


def _problem(sizes: str, inputs: str, init: str = "[]", extra: str = "") -> str:
    """A KernelBench-format reference with `sizes` at module level."""
    return textwrap.dedent(sizes) + extra + (
        f"\n\ndef get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return {init}\n")


def _valuation(n: int) -> int:
    return (n & -n).bit_length() - 1


def _used(plan_main: dict[str, tuple[int, int]]) -> dict[str, int]:
    return {name: used for name, (_, used) in plan_main.items()}


# -- every form sizes are written in --------------------------------------------------------


@pytest.mark.parametrize(("sizes", "inputs", "expected"), [
    ("N = 4096\n", "[torch.randn(N)]", {"N": 4096}),
    ("N: int = 4096\n", "[torch.randn(N)]", {"N": 4096}),
    ("M = 1024 * 2\n", "[torch.randn(M)]", {"M": 2048}),
    ("height = width = 256\n", "[torch.randn(3, height, width)]", {"height": 256, "width": 256}),
    ("D, H, W = 16, 32, 32\n", "[torch.randn(D, H, W)]", {"D": 16, "H": 32, "W": 32}),
    ("depth, height, width = (24, 48, 48)\n", "[torch.randn(depth, height, width)]",
     {"depth": 24, "height": 48, "width": 48}),
    ("batch_size = 32768\ninput_shape = (32768,)\n", "[torch.randn(batch_size, *input_shape)]",
     {"batch_size": 32768, "input_shape[0]": 32768}),
    ("hidden = 512\ndim = 2 * hidden\n", "[torch.randn(8, dim)]", {"hidden": 512, "dim": 1024}),
    ("in_features = 1024\nout = in_features // 2\n", "[torch.randn(out)]", {"in_features": 1024, "out": 512}),
    ("in_channels = 64\ngroups = in_channels\n", "[torch.randn(groups)]", {"in_channels": 64, "groups": 64}),
])
def test_each_form_of_size_is_read(sizes: str, inputs: str, expected: dict[str, int]) -> None:
    assert size_constants(_problem(sizes, inputs)) == expected


def test_constants_read_through_functions_and_init_inputs_count() -> None:
    source = _problem("rows = 4096\ncols = 1000\nclasses = 1000\nunused = 99999\n",
                      "[make()]", init="[classes]",
                      extra="\n\ndef make():\n    return torch.randn(rows, cols)\n")
    assert size_constants(source) == {"rows": 4096, "cols": 1000, "classes": 1000}


def test_scaling_rewrites_every_form_and_derived_sizes_follow() -> None:
    source = _problem(
        "batch_size = 4096\nheight = width = 256\nC, K = 64, 1024 * 2\nhidden = 512\n"
        "dim = 2 * hidden\ninput_shape = (4096,)\n",
        "[torch.randn(batch_size, C, height, width), torch.randn(batch_size, *input_shape), "
        "torch.randn(K, dim)]")
    plan = plan_sizes(source)
    assert plan.scaled and plan.within_budget
    rewritten = rewrite_constants(source, plan.main)
    after = size_constants(rewritten)
    for name, (_, used) in plan.main.items():
        assert after[name] == used, name
    assert after["height"] == after["width"]  # one literal, one value
    assert after["dim"] == 2 * after["hidden"]  # derived, not rewritten: it follows
    assert "dim = 2 * hidden" in rewritten
    assert plan.elements <= ELEMENT_BUDGET and plan.work <= WORK_BUDGET


def test_rewrite_touches_only_literals_that_still_hold_the_original() -> None:
    source = "dim = 393216\nother = 393216\nM = 1024 * 2\nshape = (4096, 17)\n"
    sizes = {"dim": (393216, 384), "M": (2048, 256), "shape[0]": (4096, 64)}
    assert rewrite_constants(source, sizes) == "dim = 384\nother = 393216\nM = 256\nshape = (64, 17)\n"
    assert rewrite_constants(source, {"dim": (1000, 10)}) == source  # not the value written


# -- the budget -----------------------------------------------------------------------------


@pytest.mark.parametrize(("sizes", "inputs"), [
    ("batch_size = 16\ndim = 4000\n", "[torch.randn(batch_size, dim)]"),  # the 64k ReLU
    ("N = 60000\n", "[torch.randn(N), torch.randn(N)]"),  # far above any per-dimension limit
    ("rows = 64\ncols = 781\n", "[torch.randn(rows, cols), torch.randn(cols)]"),
])
def test_problems_within_the_budget_keep_their_real_sizes(sizes: str, inputs: str) -> None:
    plan = plan_sizes(_problem(sizes, inputs))
    assert plan.scaled == {} and plan.within_budget
    assert all(written == used for written, used in plan.main.values())


def test_scaling_bounds_the_total_not_each_dimension() -> None:
    """A 3-D convolution: with 256 per dimension its input would hold 800M elements."""
    source = _problem(
        "batch_size = 16\nin_channels = 3\nout_channels = 64\nkernel_size = 3\n"
        "depth, height, width = 64, 128, 128\n",
        "[torch.randn(batch_size, in_channels, depth, height, width)]",
        init="[in_channels, out_channels, kernel_size]")
    plan = plan_sizes(source)
    used = _used(plan.main)
    assert plan.within_budget
    assert math.prod(used[n] for n in ("batch_size", "in_channels", "depth", "height", "width")) <= ELEMENT_BUDGET
    assert plan.work <= WORK_BUDGET
    assert used["kernel_size"] == 3 and used["in_channels"] == 3  # small constants stay
    assert min(used["depth"], used["height"], used["width"]) >= 2 * 3  # room for the kernel


def test_a_gemm_is_bounded_by_its_arithmetic() -> None:
    source = _problem("M = 4096\nK = 4096\nN = 4096\n", "[torch.randn(M, K), torch.randn(K, N)]")
    plan = plan_sizes(source)
    used = _used(plan.main)
    assert used["M"] * used["K"] * used["N"] <= WORK_BUDGET


def test_the_output_a_model_builds_counts_too() -> None:
    """A linear layer widening 64 features to 4096: its output (and an epilogue kernel over it)
    is 64 times its input."""
    source = _problem("batch_size = 64\nin_features = 64\nout_features = 4096\n",
                      "[torch.randn(batch_size, in_features)]", init="[in_features, out_features]")
    plan = plan_sizes(source)
    used = _used(plan.main)
    assert plan.scaled and used["batch_size"] * used["out_features"] <= ELEMENT_BUDGET


def test_a_gpu_checks_larger_sizes() -> None:
    source = _problem("batch_size = 4096\ndim = 393216\n", "[torch.randn(batch_size, dim)]")
    cpu, gpu = plan_sizes(source), plan_sizes(source, gpu=True)
    assert cpu.elements <= ELEMENT_BUDGET < gpu.elements <= GPU_ELEMENT_BUDGET


# -- power-of-two factors -------------------------------------------------------------------


def test_a_size_that_is_not_a_multiple_of_a_block_stays_one() -> None:
    """The issue's case, scaled: 4000 = 32·125 becomes 32·odd, never 256."""
    source = _problem("batch_size = 4096\ndim = 4000\n", "[torch.randn(batch_size, dim)]")
    plan = plan_sizes(source)
    dim = plan.main["dim"][1]
    assert dim < 4000 and _valuation(dim) == 5 and dim % 64 != 0
    numel = plan.main["batch_size"][1] * dim
    assert numel % 1024 != 0 or numel % (1 << _valuation(4096 * 4000)) != 0


@pytest.mark.parametrize("value", [4000, 781, 1000, 1152, 393216, 98432, 4097, 3 * 2**11, 40960])
def test_no_size_gains_a_power_of_two_factor(value: int) -> None:
    for other in (16, 4096, 1 << 14):
        plan = plan_sizes(_problem(f"batch_size = {other}\nwidth = {value}\n", "[torch.randn(batch_size, width)]"))
        for name, (written, used) in plan.main.items():
            assert _valuation(used) <= _valuation(written), (name, written, used)
            if written & (written - 1):  # not a power of two: never becomes one
                assert used & (used - 1), (name, written, used)
        assert plan.within_budget


def test_tail_free_sizes_stay_tail_free_while_the_budget_allows() -> None:
    """128 × 3072: the width keeps being a multiple of 1024 (the largest block in play) if the
    batch can pay for it... here it cannot (a power of two below 2^10 keeps its factor too),
    so the width gives up one power at a time and the flat size stays a multiple of 1024."""
    plan = plan_sizes(_problem("batch_size = 128\nwidth = 3072\n", "[torch.randn(batch_size, width)]"))
    batch, width = plan.main["batch_size"][1], plan.main["width"][1]
    assert plan.within_budget and (batch * width) % 1024 == 0
    assert width % 3 == 0 and width & (width - 1)


def test_small_blocks_lower_the_budget() -> None:
    """The interpreter's time goes by program instances: 16-wide blocks get a 4096-element budget,
    1024-wide ones the whole 64k (`n // 2` is no block)."""
    assert interpreter_budget("k[grid](x, BLOCK_SIZE=16)\nhalf = n // 2\n") == (4096, 1 << 20)
    assert interpreter_budget("k[grid](x, BLOCK_SIZE=1024)\nhalf = n // 2\n") == (ELEMENT_BUDGET, WORK_BUDGET)
    source = _problem("batch_size = 16\ndim = 4000\n", "[torch.randn(batch_size, dim)]")
    assert plan_sizes(source, blocks_from=source + "BLOCK = 1024\n").scaled == {}
    small = plan_sizes(source, blocks_from=source + "BLOCK = 16\n")
    assert small.elements <= 4096 and _valuation(small.main["dim"][1]) <= 5


def test_the_largest_block_in_the_file_is_kept_in_play() -> None:
    assert block_exponent("x = 1\n") == 10
    assert block_exponent("k[grid](x, BLOCK_SIZE=4096)\n") == 12
    assert block_exponent('configs = [triton.Config({"BLOCK_N": 8192}, num_warps=8)]\n') == 13
    assert block_exponent("grid = (n // 2048,)\n") == 11
    assert block_exponent("grid = (triton.cdiv(n, 16384),)\n") == 14
    assert block_exponent("batch_size = 65536\nother = 32768\n") == 10  # sizes are not blocks
    # A width that is a multiple of 4096 stays one when the file's blocks are 4096 wide; with
    # blocks of at most 1024 in play, a multiple of 1024 is enough.
    source = _problem("rows = 2\ncols = 4096 * 9\n", "[torch.randn(rows, cols)]")
    wide = plan_sizes(source, blocks_from=source + "\nBLOCK = 4096\n")
    assert wide.main["cols"][1] % 4096 == 0 and wide.within_budget
    narrow = plan_sizes(source)
    assert narrow.main["cols"][1] % 1024 == 0 and narrow.main["cols"][1] % 4096 != 0


# -- relations between sizes ----------------------------------------------------------------


def test_groups_keep_dividing_channels_with_two_channels_at_least() -> None:
    source = _problem(
        "batch_size = 128\nchannels = 512\nnum_groups = 32\nheight = width = 256\n",
        "[torch.randn(batch_size, channels, height, width)]", init="[num_groups, channels]")
    plan = plan_sizes(source)
    for sizes in (plan.main, plan.tail_run):
        used = _used(sizes)
        assert used["channels"] % used["num_groups"] == 0, sizes
        assert used["channels"] // used["num_groups"] >= 2, sizes
    assert plan.within_budget


def test_heads_keep_dividing_the_width_and_fixed_groups_keep_two_channels() -> None:
    heads = _problem("batch_size = 64\nseq_len = 4096\nembed_dim = 1024\nnum_heads = 16\n",
                     "[torch.randn(seq_len, batch_size, embed_dim)]", init="[embed_dim, num_heads]")
    for sizes in (plan_sizes(heads).main, plan_sizes(heads).tail_run):
        used = _used(sizes)
        assert used["embed_dim"] % used["num_heads"] == 0 and used["embed_dim"] >= 2 * used["num_heads"]
    groups = _problem("batch_size = 128\nchannels = 64\ngroups = 8\nheight = width = 512\n",
                      "[torch.randn(batch_size, channels, height, width)]", init="[channels, groups]")
    plan = plan_sizes(groups)
    for sizes in (plan.main, plan.tail_run):
        used = _used(sizes)
        assert used["groups"] == 8 and used["channels"] % 8 == 0 and used["channels"] >= 16


def test_coincidences_do_not_bind_the_odd_sizes() -> None:
    """A batch of 128 divides 512 features by coincidence: the extra trial makes both odd."""
    source = _problem("batch_size = 128\nin_features = 1024\nout_features = 512\n",
                      "[torch.randn(batch_size, in_features)]", init="[in_features, out_features]")
    plan = plan_sizes(source)
    assert set(plan.tail) == {"batch_size", "in_features", "out_features"}
    assert all(value % 2 == 1 for _, value in plan.tail.values())


def test_odd_sizes_are_odd_near_three_quarters_and_never_powers_of_two() -> None:
    plan = plan_sizes(_problem("batch_size = 16\ndim = 4000\n", "[torch.randn(batch_size, dim)]"))
    assert plan.tail == {"batch_size": (16, 11), "dim": (4000, 2999)}
    for _, value in plan.tail.values():
        assert value % 2 == 1 and value & (value - 1)


# -- end to end under the interpreter --------------------------------------------------------

_FLOOR_RELU = '''\
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 16
dim = 4000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        grid = (n // 1024,)  # floor: the last 512 elements are never written
        relu_kernel[grid](x, out, n, BLOCK=1024)
        return out
'''

_CEIL_RELU = _FLOOR_RELU.replace("grid = (n // 1024,)  # floor: the last 512 elements are never written",
                                 "grid = (triton.cdiv(n, 1024),)")

_RESHAPING_REFERENCE = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)


def double(x):
    out = torch.empty_like(x)
    double_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out


ROWS = 96
COLS = 640


def double_inputs():
    return [torch.randn(ROWS, COLS, device="cuda")]


def double_reference(x):
    return (x.view(x.shape[0], -1, 64) * 2.0).view(x.shape)  # only widths that are multiples of 64
'''


def _needs_interpreter() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    pytest.importorskip("numpy", reason="Triton's interpreter needs numpy")


def _verify(tmp_path: Path, name: str, source: str, pools: tuple[WorkerPool, WorkerPool]) -> Verdict:
    path = tmp_path / name
    path.write_text(source)
    [spec] = detect_specs(path)
    return verify_spec(spec, mode="interpreter", pools=pools, timeout_s=120)


def test_a_floor_grid_over_16x4000_fails_on_the_cpu(tmp_path: Path, interpreter_pools: tuple[WorkerPool, WorkerPool]) -> None:
    """16 × 4000 is within the budget and runs as written: 62 blocks of 1024 leave the last 512
    elements unwritten (it used to pass at 16 × 256, a multiple of 1024)."""
    _needs_interpreter()
    verdict = _verify(tmp_path, "relu_floor.py", _FLOOR_RELU, interpreter_pools)
    assert not verdict.ok, verdict.summary()
    assert verdict.stage in ("candidate", "compare", "shapes"), verdict.summary()
    assert "(15, 3" in verdict.message  # the tail of the last row
    assert verdict.sizes == {"batch_size": (16, 16), "dim": (4000, 4000)}
    assert "sizes: as written (batch_size=16, dim=4000)" in verdict.summary()


def test_the_same_kernel_with_a_ceil_grid_verifies_at_real_and_odd_sizes(
        tmp_path: Path, interpreter_pools: tuple[WorkerPool, WorkerPool]) -> None:
    _needs_interpreter()
    verdict = _verify(tmp_path, "relu_ceil.py", _CEIL_RELU, interpreter_pools)
    assert verdict.ok, verdict.summary()
    assert verdict.tail == {"batch_size": (16, 11), "dim": (4000, 2999)}  # KernelBench, no any-shape comment
    summary = verdict.summary()
    assert "sizes: as written (batch_size=16, dim=4000)" in summary and "also at batch_size=11, dim=2999" in summary
    data = verdict.to_json()
    assert data["sizes"] == {"batch_size": [16, 16], "dim": [4000, 4000]} and data["sizes_as_written"]
    assert data["extra_sizes"] == {"batch_size": [16, 11], "dim": [4000, 2999]}
    assert verdict.details["tail.inputs"]["input_shapes"][0] == [[11, 2999]]


def test_a_reference_that_cannot_run_at_odd_sizes_is_a_note(
        tmp_path: Path, interpreter_pools: tuple[WorkerPool, WorkerPool]) -> None:
    _needs_interpreter()
    verdict = _verify(tmp_path, "double.py", _RESHAPING_REFERENCE, interpreter_pools)
    assert verdict.ok, verdict.summary()
    assert verdict.tail == {} and "no odd-size trial" in verdict.summary()
    assert any("skipped: the reference fails at them" in note for note in verdict.notes), verdict.notes


def test_a_common_factor_keeps_relations_the_planner_cannot_see() -> None:
    """LayerNorm(out_channels) over the width a stride-2 transposed convolution doubles
    (KernelBench level 2, problem 3): scaled one by one, 2·width no longer equals out_channels;
    divided by one power of two, it does."""
    fixture = Path(__file__).parent / "fixtures" / "tricks" / "ok_tied_sizes.py"
    plan = uniform_plan(fixture.read_text())
    assert plan is not None
    used = {name: value for name, (_, value) in plan.main.items()}
    assert used["out_channels"] == 2 * used["width"] and used["width"] < 64
    assert plan.within_budget
    odd = "n = 4096\nm = 4095\ndef get_inputs():\n    return [torch.randn(n, m)]\n"
    assert uniform_plan(odd) is None  # no factor of two divides 4095


def test_sizes_written_in_place_in_the_inputs_scale_too() -> None:
    """`torch.rand(batch_size, in_channels, 224, 224)` (KernelBench level 3): the 224s are
    sizes like any constant, move together, and are rewritten where they are written."""
    source = textwrap.dedent("""\
        import torch
        batch_size = 10
        in_channels = 64

        def get_inputs():
            return [torch.rand(batch_size, in_channels, 224, 224)]

        def get_init_inputs():
            return [in_channels]
        """)
    plan = plan_sizes(source)
    first, second = plan.main["get_inputs_line6_dim2"], plan.main["get_inputs_line6_dim3"]
    assert first == second and first[0] == 224 and 16 <= first[1] < 224
    assert plan.within_budget
    rewritten = rewrite_constants(source, plan.main)
    assert f"torch.rand(batch_size, in_channels, {first[1]}, {first[1]})" in rewritten
    assert "def get_init_inputs():\n    return [in_channels]" in rewritten


# A launcher that picks its path by size: the large path (the task's) is right, the small one,
# which only the scaled-down check reaches, drops the tail.
_SIZED_PATHS = _FLOOR_RELU.replace("batch_size = 16\ndim = 4000", "batch_size = 4096\ndim = 393216").replace(
    "grid = (n // 1024,)  # floor: the last 512 elements are never written",
    "grid = (triton.cdiv(n, 1024),) if n >= 1048576 else (n // 1024,)  # the small path drops the tail")


def test_a_failure_on_a_path_only_smaller_sizes_take_is_not_verified_not_failed(
        tmp_path: Path, interpreter_pools: tuple[WorkerPool, WorkerPool]) -> None:
    _needs_interpreter()
    verdict = _verify(tmp_path, "relu_paths.py", _SIZED_PATHS, interpreter_pools)
    assert not verdict.ok and verdict.stage == "sizes", verdict.summary()
    assert verdict.summary().startswith("NOT VERIFIED · interpreter · sizes: the launcher chooses its path by size "
                                        "(line 42: `n >= 1048576`)")
    # The checked sizes (16 × 3072) are a multiple of the block; the odd-size trial reaches the tail.
    assert any(note.startswith("at the checked sizes the candidate failed: shapes: at sizes batch_size=11")
               for note in verdict.notes), verdict.notes
    # The same bug with no size branch stays a failure (test_a_floor_grid_over_16x4000_fails_on_the_cpu),
    # and so does a shape hard-coded by equality (exploit 14).
    assert size_branches("def f(n):\n    return fast(n) if n == 393216 else slow(n)\n") == []
    assert size_branches("def f(n):\n    return min(16, n)\n") == [(2, "min(16, n)")]


_POOLED_TO_NOTHING = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


class Model(nn.Module):
    def forward(self, x):
        for _ in range(6):  # 64 px -> 1 px: smaller inputs pool to nothing
            x = F.max_pool2d(x, 2)
        return torch.relu(x)


batch_size = 512
channels = 64


def get_inputs():
    return [torch.randn(batch_size, channels, 64, 64)]


def get_init_inputs():
    return []


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        for _ in range(6):
            x = F.max_pool2d(x, 2)
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
        return out
'''


def test_a_task_that_cannot_run_smaller_says_so_on_the_reference_side(
        tmp_path: Path, interpreter_pools: tuple[WorkerPool, WorkerPool]) -> None:
    _needs_interpreter()
    verdict = _verify(tmp_path, "pooled.py", _POOLED_TO_NOTHING, interpreter_pools)
    assert not verdict.ok and verdict.stage == "inputs", verdict.summary()
    assert verdict.message.startswith("the reference failed at the scaled sizes and with every size divided by one "
                                      "power of two (RuntimeError: ")
    assert "the task may not run smaller than it is written, or the reference is broken" in verdict.message
