"""The proposers' prompts (stable system blocks, per-step messages) and answer parsers."""

from __future__ import annotations

import pytest

from tritonsmith.search import prompts
from tritonsmith.search.model import (
    Edit,
    Evaluation,
    Outcome,
    PoolEntry,
    ProposalError,
    StepContext,
    Task,
    apply_edits,
)

SOURCE = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    return out
'''

TASK = Task(
    path="kernels/add.py", kernel="add_kernel", source=SOURCE, spec="harness:add", device="gpu",
    target="sm_90", target_facts="NVIDIA H200, 132 SMs, 228 KB shared memory per SM",
)
CORRECT = Evaluation(Outcome.CORRECT, speedup=1.3, time_ms=0.0123,
                     resources=[{"config": "BLOCK=256", "resources": {"registers": 32, "spills": 0, "shared": 0}}])
WRONG = Evaluation(Outcome.WRONG, message="max abs error 0.5 at out[1023] (tolerance 1e-05)")
BROKEN = Evaluation(Outcome.NOT_COMPILED, message="line 9: tl.arange's range must be a power of 2")


def context(**kwargs) -> StepContext:
    return StepContext(task=TASK, **kwargs)


# -- builders --------------------------------------------------------------------------------

def test_pitfalls_block_lists_rules_in_order_under_adaexplores_heading():
    block = prompts.pitfalls_block(("You cannot call `tl.float32` as a function.",
                                    "You cannot use `break` inside a kernel loop."))
    lines = block.splitlines()
    assert lines[0] == "## Common Pitfalls (from previous optimization attempts)"
    assert lines[2:] == ["- You cannot call `tl.float32` as a function.",
                         "- You cannot use `break` inside a kernel loop."]
    assert prompts.pitfalls_block(()) == ""


def test_system_blocks_hold_guidance_then_pitfalls_demonstrations_task():
    ctx = context(pitfalls=("You cannot call `tl.float32` as a function.",),
                  demonstrations=("@triton.jit\ndef demo_kernel(x):\n    pass\n",))
    guidance, stable = prompts.system_blocks(ctx)
    assert "Triton" in guidance and "tl.constexpr" in guidance
    assert stable.index(prompts.PITFALLS_HEADING) < stable.index("demo_kernel") < stable.index("## Task")
    assert "NVIDIA H200, 132 SMs" in stable and "sm_90" in stable
    assert "def add_kernel" in stable and "`add`" in stable  # the file and the launcher to keep


def test_system_blocks_are_the_same_for_every_kind_of_step():
    """The cacheable part must not vary between calls of one search."""
    ctx = context(pitfalls=("You cannot x.",), chain=((SOURCE, CORRECT),),
                  pool=(PoolEntry(SOURCE, CORRECT),))
    systems = {prompts.reviser_prompt(ctx).system, prompts.tuner_prompt(ctx, "advice").system,
               prompts.regenerate_prompt(ctx).system}
    assert len(systems) == 1


def test_no_pitfalls_or_demonstrations_means_no_empty_sections():
    _, stable = prompts.system_blocks(context())
    assert "Pitfalls" not in stable and "Verified examples" not in stable


def test_interpreter_task_says_timings_are_interpreter_timings():
    task = Task(path="a.py", kernel="k", source="x = 1\n", spec="kernelbench", device="interpreter")
    block = prompts.task_block(task)
    assert "interpreter" in block and "ModelNew" in block


def test_tuner_prompt_carries_the_chain_with_feedback_and_the_format():
    ctx = context(chain=((SOURCE, WRONG), (SOURCE.replace("256", "512"), CORRECT)))
    user = prompts.tuner_prompt(ctx, "1. Use BLOCK=1024.").user
    assert "Kernel 1 of 2" in user and "Kernel 2 of 2 (current kernel)" in user
    assert "compiled but wrong: max abs error 0.5" in user
    assert "correct; 1.30x against the original (0.0123 ms)" in user
    assert "32 regs, 0 spills" in user  # the resource report
    assert "1. Use BLOCK=1024." in user
    assert "<old_str_1>" in user and "<new_str_1>" in user


def test_reviser_asks_for_one_to_three_improvements_without_code():
    user = prompts.reviser_prompt(context(chain=((SOURCE, CORRECT),))).user
    assert "1-3 most important improvements" in user
    assert "Do not write code" in user


def test_regenerate_prompt_has_the_kernel_pool_with_metrics():
    ctx = context(pool=(PoolEntry(SOURCE, CORRECT), PoolEntry(SOURCE.replace("256", "1024"), CORRECT)))
    user = prompts.regenerate_prompt(ctx).user
    assert "## Kernel Pool" in user and "outperforms them all" in user
    assert "Pool kernel 2" in user and "BLOCK=1024" in user
    assert "```python" in user and "complete new file" in user


def test_regenerate_without_pool_asks_for_a_first_correct_kernel():
    user = prompts.regenerate_prompt(context()).user
    assert "No verified kernel yet" in user


def test_sources_containing_fences_are_fenced_longer():
    ctx = context(chain=(('doc = """```x```"""\n', BROKEN),))
    assert "````python" in prompts.tuner_prompt(ctx).user


# -- parse_edits -----------------------------------------------------------------------------

TUNER_ANSWER = """\
I will widen the block and add `other`.

<reasoning_1>Larger blocks halve the number of programs.</reasoning_1>
<old_str_1>
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
</old_str_1>
<new_str_1>
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, num_warps=4)
</new_str_1>

<reasoning_2>Masked lanes need a value.</reasoning_2>
<old_str_2>
    x = tl.load(x_ptr + offsets, mask=mask)
</old_str_2>
<new_str_2>
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
</new_str_2>
"""


def test_parse_edits_reads_numbered_blocks_that_apply_exactly():
    edits = prompts.parse_edits(TUNER_ANSWER)
    assert edits[0] == Edit(
        old="    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)",
        new="    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, num_warps=4)",
        reasoning="Larger blocks halve the number of programs.",
    )
    result = apply_edits(SOURCE, edits)
    assert "BLOCK=1024, num_warps=4" in result and "mask=mask, other=0.0)" in result


def test_parse_edits_orders_by_index_and_unwraps_code_fences():
    answer = ("<old_str_2>b</old_str_2><new_str_2>B</new_str_2>"
              "<old_str_1>\n```python\na = 1\n```\n</old_str_1><new_str_1>```python\na = 2\n```</new_str_1>")
    edits = prompts.parse_edits(answer)
    assert [(e.old, e.new) for e in edits] == [("a = 1", "a = 2"), ("b", "B")]


def test_parse_edits_keeps_multiline_indentation():
    answer = "<old_str_1>\n    if x:\n        y = 1\n</old_str_1>\n<new_str_1>\n    if x:\n        y = 2\n</new_str_1>"
    (edit,) = prompts.parse_edits(answer)
    assert edit.old == "    if x:\n        y = 1" and edit.new == "    if x:\n        y = 2"


@pytest.mark.parametrize(("answer", "reason"), [
    ("Increase BLOCK to 1024 for better occupancy.", "no <old_str_1>/<new_str_1> edit blocks"),
    ("<old_str_1>x</old_str_1>", "edit 1 has <old_str_1> but no <new_str_1>"),
    ("<new_str_3>x</new_str_3>", "edit 3 has <new_str_3> but no <old_str_3>"),
    ("<old_str_1>\n\n</old_str_1><new_str_1>x</new_str_1>", "edit 1 has an empty <old_str_1>"),
    ("<old_str_1>a = 1\n<new_str_1>a = 2</new_str_1>", "edit 1's <old_str_1> block is not closed"),
    ("<old_str_1>a</old_str_1><new_str_1>a</new_str_1>", "leaves the kernel unchanged"),
])
def test_malformed_edits_raise_a_one_line_reason(answer, reason):
    with pytest.raises(ProposalError, match=reason.replace("(", r"\(")) as info:
        prompts.parse_edits(answer)
    assert "\n" not in str(info.value)


# -- parse_file ------------------------------------------------------------------------------

def test_parse_file_takes_the_python_block_after_the_plan():
    answer = f"Plan: use 1024-wide blocks.\n\n```python\n{SOURCE}```\n\nThis should be faster."
    assert prompts.parse_file(answer) == SOURCE


def test_parse_file_prefers_the_longest_block_with_triton():
    answer = f"```python\nx = add(a, b)\n```\n\n```python\n{SOURCE}```\n```bash\npip install triton\n```"
    assert prompts.parse_file(answer) == SOURCE


def test_parse_file_accepts_an_unlabelled_fence_and_nested_fences():
    assert prompts.parse_file(f"```\n{SOURCE}```") == SOURCE
    nested = 'import triton\ndoc = """\n```\nexample\n```\n"""\n'
    assert prompts.parse_file(f"````python\n{nested}````") == nested


@pytest.mark.parametrize(("answer", "reason"), [
    ("I cannot improve this kernel further.", "no ```python block"),
    (f"```python\n{SOURCE}", "not closed"),
    ("```python\n\n```", "no ```python block"),
])
def test_malformed_files_raise_a_one_line_reason(answer, reason):
    with pytest.raises(ProposalError, match=reason):
        prompts.parse_file(answer)
