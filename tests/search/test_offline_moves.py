"""The offline proposer's moves: block sizes wherever a launcher sets them, every kernel a
launcher runs, and never an edit the timing cannot see (issue 15)."""

from __future__ import annotations

from tritonsmith.search.model import apply_edits
from tritonsmith.search.proposers.offline import config_moves

TWO_KERNELS = '''import torch
import triton
import triton.language as tl

SCALE_BLOCK = 128


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@triton.jit
def row_sum_kernel(y_ptr, out_ptr, n_cols, BLOCK_COLS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_COLS)
    v = tl.load(y_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(v, axis=0))


def launcher(x, n_rows, n_cols):
    y = torch.empty_like(x)
    BLOCK = 256
    scale_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, y, x.numel(), BLOCK=BLOCK)
    out = torch.empty(n_rows, device=x.device)
    block_cols = triton.next_power_of_2(n_cols)
    row_sum_kernel[(n_rows,)](y, out, n_cols, BLOCK_COLS=block_cols)
    return out
'''


def _moves(source: str, kernel: str, device: str = "gpu") -> dict[str, str]:
    return {m.description: apply_edits(source, [m.edit]) for m in config_moves(source, kernel, device)}


def test_a_block_size_in_a_launchers_local_variable_moves_where_it_is_set():
    moves = _moves(TWO_KERNELS, "scale_kernel")
    doubled = moves["BLOCK=512 at the launch (was 256)"]
    # The local changes, so the grid that reads it follows.
    assert "    BLOCK = 512\n" in doubled and "BLOCK=BLOCK)" in doubled


def test_every_kernel_the_launcher_runs_is_tuned_and_named():
    moves = _moves(TWO_KERNELS, "scale_kernel")
    other = {d: s for d, s in moves.items() if d.startswith("row_sum_kernel: ")}
    assert other, sorted(moves)
    # A `next_power_of_2` block size is scaled either way, in place.
    doubled = other["row_sum_kernel: BLOCK_COLS doubled at the launch (was triton.next_power_of_2(n_cols))"]
    assert "block_cols = triton.next_power_of_2(n_cols) * 2\n" in doubled
    halved = other["row_sum_kernel: BLOCK_COLS halved at the launch (was triton.next_power_of_2(n_cols))"]
    assert "block_cols = max(triton.next_power_of_2(n_cols) // 2, 16)\n" in halved


AUTOTUNED = '''import triton
import triton.language as tl


@triton.autotune(configs=[
    triton.Config({"BLOCK": 64}, num_warps=4),
    triton.Config({"BLOCK": 128}, num_warps=4),
], key=["n"])
@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def run(x):
    scale_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, x.numel())
'''


def test_under_the_interpreter_only_the_config_that_runs_is_moved():
    interpreter = _moves(AUTOTUNED, "scale_kernel", "interpreter")
    assert interpreter and all(d.startswith("Config #1:") for d in interpreter), sorted(interpreter)
    # Warps and cache hints never reach the interpreter either: no step is spent on them.
    assert not any("num_warps" in d or "eviction" in d for d in interpreter)
    gpu = _moves(AUTOTUNED, "scale_kernel", "gpu")
    assert any(d.startswith("Config #2:") for d in gpu) and "drop Config #2" in gpu


def test_no_move_makes_a_config_a_copy_of_another():
    gpu = _moves(AUTOTUNED, "scale_kernel", "gpu")
    # Config #1 doubled to 128 with 4 warps would be Config #2 again.
    assert "Config #1: BLOCK=128 (was 64)" not in gpu and "Config #2: BLOCK=64 (was 128)" not in gpu
    assert "Config #1: BLOCK=256 (was 64)" in gpu


def test_a_block_jump_stays_near_the_pool_kernels_size_and_scales_its_warps():
    import random

    from tritonsmith.search.proposers.offline import transformations

    source = TWO_KERNELS.replace("BLOCK=BLOCK)", "BLOCK=BLOCK, num_warps=4)")
    jump = transformations()["block-jump"]
    seen = set()
    for seed in range(8):
        out = jump(source, "scale_kernel", random.Random(seed))
        assert out is not None
        block = next(line for line in out.splitlines() if line.strip().startswith("BLOCK = "))
        warps = out.split("num_warps=")[1].split(")")[0]
        seen.add((block.strip(), warps))
    # 256 moves to 1024 or 64, never to an unrelated size; warps follow (x4 capped at 16, /4 -> 1).
    assert seen == {("BLOCK = 1024", "16"), ("BLOCK = 64", "1")}


def test_streaming_loads_leave_alone_a_load_that_other_programs_read_again():
    """`bias_ptr + offsets % features` is read by every row's programs: evicting it first would
    fetch it again each time; the activations are read once."""
    import random
    from pathlib import Path

    from tritonsmith.search.proposers.offline import transformations

    source = (Path(__file__).resolve().parents[2] / "bench" / "problems" / "bias_silu.py").read_text()
    hinted = transformations()["streaming-loads"](source, "bias_add_kernel", random.Random(0))
    assert hinted is not None
    assert 'x = tl.load(x_ptr + offsets, mask=mask, other=0.0, eviction_policy="evict_first")' in hinted
    assert "b = tl.load(bias_ptr + offsets % features, mask=mask, other=0.0)\n" in hinted


def test_warps_move_under_the_predicted_objective_and_cache_hints_do_not():
    """The predicted time sees num_warps (registers, occupancy, instructions issued); the
    interpreter does not; neither has a term for eviction hints."""
    predicted = _moves(TWO_KERNELS, "scale_kernel", "predicted")
    interpreter = _moves(TWO_KERNELS, "scale_kernel", "interpreter")
    assert any("num_warps" in d for d in predicted) and not any("num_warps" in d for d in interpreter)
    assert not any("eviction_policy" in d for d in predicted)
    assert any("eviction_policy" in d for d in _moves(TWO_KERNELS, "scale_kernel", "gpu"))


def _sizes(source: str) -> dict[tuple[str, str], int]:
    from tritonsmith.search.proposers.offline import block_sizes

    return block_sizes(source)


def test_block_sizes_are_read_where_the_launcher_sets_them():
    assert _sizes(TWO_KERNELS) == {("scale_kernel", "BLOCK"): 256}  # next_power_of_2(n): no number


def test_the_trend_is_the_way_a_faster_kernels_blocks_moved():
    from tritonsmith.search.proposers.offline import block_trend

    grown = TWO_KERNELS.replace("    BLOCK = 256\n", "    BLOCK = 1024\n")
    assert block_trend(TWO_KERNELS, grown, 3.0) == {("scale_kernel", "BLOCK"): True}
    assert block_trend(grown, TWO_KERNELS, 1.5) == {("scale_kernel", "BLOCK"): False}
    assert block_trend(TWO_KERNELS, grown, 0.8) == {}  # slower: nothing paid
    assert block_trend(TWO_KERNELS, grown, None) == {}


def _first_refinement(base: str, speedup: float, seed: int) -> str:
    import random

    from tritonsmith.search.model import Evaluation, Outcome, StepContext, Task
    from tritonsmith.search.proposers.offline import OfflineProposer

    task = Task(path="k.py", kernel="scale_kernel", source=TWO_KERNELS, spec="harness:launcher", device="gpu")
    context = StepContext(task=task, chain=((base, Evaluation(Outcome.CORRECT, speedup=speedup)),))
    candidate, _ = OfflineProposer(random.Random(seed)).refine(context)
    return candidate


def test_a_refinement_mostly_pushes_a_block_further_the_way_that_paid():
    """From a kernel whose block grew 256 -> 1024 and measured 3x faster, most first refinements
    grow it again; from the same kernel measured slower, the block moves no more often than
    any other knob (one draw among some twenty moves)."""
    grown = TWO_KERNELS.replace("    BLOCK = 256\n", "    BLOCK = 1024\n")
    seeds = range(40)
    paid = [_sizes(_first_refinement(grown, 3.0, seed)).get(("scale_kernel", "BLOCK")) for seed in seeds]
    unpaid = [_sizes(_first_refinement(grown, 0.9, seed)).get(("scale_kernel", "BLOCK")) for seed in seeds]
    assert sum(1 for size in paid if size is not None and size > 1024) >= 24, paid  # about 3 in 4
    assert sum(1 for size in unpaid if size is not None and size > 1024) <= 12, unpaid
    assert any(size == 1024 for size in paid), "a quarter of the steps still try other knobs"


def test_a_block_jump_goes_the_way_that_paid():
    import random

    from tritonsmith.search.proposers.offline import _block_jump

    up = {("scale_kernel", "BLOCK"): True}
    jumps = [_sizes(_block_jump(TWO_KERNELS, "scale_kernel", random.Random(seed), up) or "")
             .get(("scale_kernel", "BLOCK")) for seed in range(40)]
    assert set(jumps) <= {1024, 64} and jumps.count(1024) >= 28, jumps
    plain = [_sizes(_block_jump(TWO_KERNELS, "scale_kernel", random.Random(seed)) or "")
             .get(("scale_kernel", "BLOCK")) for seed in range(40)]
    assert 10 <= plain.count(1024) <= 30, plain
