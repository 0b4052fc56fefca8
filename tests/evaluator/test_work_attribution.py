"""Work attribution: "verified" means the Triton kernels did the work.

fixtures/tricks/ holds KernelBench-format candidates that pass every older check (the output
matches, a kernel launches, skipping it changes the output) while PyTorch, a cache or
`__init__` computes the answer; each must be rejected with the trick named. The `ok_*`
fixtures are legitimate solutions of the kinds real KernelBench level-1/2 answers are
(PyTorch keeps the GEMM, device queries, an input-independent zero-fill beside real work) and
must verify, with the account of who computed what in the verdict.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tritonsmith.evaluator.policy import judge_work, parse_policy
from tritonsmith.evaluator.pool import WorkerPool
from tritonsmith.evaluator.verify import Verdict, detect_specs, verify_spec

TRICKS = Path(__file__).parent / "fixtures" / "tricks"


@pytest.fixture(scope="module")
def verify() -> Iterator[Callable[..., Verdict]]:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    pools = (WorkerPool(1, env=env), WorkerPool(1, env=env))

    def run(name: str, **options: object) -> Verdict:
        [spec] = detect_specs(TRICKS / name)
        return verify_spec(spec, mode="interpreter", pools=pools, timeout_s=120, **options)  # type: ignore[arg-type]

    yield run
    for pool in pools:
        pool.close()


@pytest.mark.compiler
@pytest.mark.parametrize(("fixture", "stage", "words"), [
    ("t01_flag_token.py", "work", "PyTorch computes on the inputs: gt ×1, mul ×2 (the task is a single operator: relu"),
    ("t02_getattr_in_init.py", "work", "PyTorch computes on the inputs: relu ×1"),
    ("t03_methods_softmax.py", "work", "PyTorch computes on the inputs: amax ×1, div ×1, exp ×1"),
    ("t04_fusion_all_torch.py", "work", "copy_kernel only copies one of its arguments"),
    ("t05_constant_kernel.py", "work", "fill_kernel reads nothing derived from the inputs"),
    ("t06_unused_output.py", "work", "PyTorch computes every operator of the reference (addmm, mul, relu)"),
    ("t07_precision_downgrade.py", "compare", "float32→float16 ×1; exploit 11: precision downgrade"),
    ("t08_cached_result.py", "candidate", "trial 2 returned exactly trial 1's output for different inputs (exploit 12"),
    ("t09_precomputed_in_init.py", "work", "copy_kernel reads nothing derived from the inputs (token kernel"),
    ("t10_partial_triton.py", "work", "PyTorch computes on the inputs: clamp ×1"),
    ("t11_operator_math.py", "work", "PyTorch computes on the inputs: add ×1, div ×1"),
    ("t12_inplace_alias.py", "work", "PyTorch computes on the inputs: relu ×1"),
    ("t13_weights_only_kernel.py", "work", "relu_scale_kernel reads nothing derived from the inputs"),
    ("t14_copy_on_degenerate_task.py", "compare", "on standard-normal inputs; the task's own cannot tell"),
])
def test_every_trick_is_rejected_and_named(verify: Callable[..., Verdict], fixture: str, stage: str,
                                           words: str) -> None:
    verdict = verify(fixture)
    assert not verdict.ok and verdict.stage == stage, verdict.summary()
    assert words in verdict.message, verdict.message


@pytest.mark.compiler
@pytest.mark.parametrize(("fixture", "work"), [
    ("ok_fusion_torch_gemm.py", "Triton computes: relu_scale_kernel ×1; PyTorch computes: addmm ×1 (~"),
    ("ok_device_checks.py", "Triton computes: relu_kernel ×1; PyTorch computes: nothing"),
    ("ok_zero_init_and_atomics.py", "Triton computes: fill_kernel ×1, row_sum_kernel ×1; PyTorch computes: nothing"),
    ("ok_degenerate_inputs.py", "Triton computes: elu_kernel ×1; PyTorch computes: nothing"),
    ("ok_batch_norm_running_stats.py", "Triton computes: column_sums_kernel ×1, normalize_kernel ×1, "
                                       "running_stats_kernel ×1; PyTorch computes: div ×2, mul ×1, sub ×1"),
    ("ok_scalar_loss_and_scalar_mask.py", "Triton computes: triplet_kernel ×1; PyTorch computes: nothing"),
    ("ok_tied_sizes.py", "Triton computes: gelu_kernel ×1; PyTorch computes: convolution ×1, native_layer_norm ×1"),
])
def test_legitimate_solutions_verify_with_the_account(verify: Callable[..., Verdict], fixture: str,
                                                      work: str) -> None:
    verdict = verify(fixture)
    assert verdict.ok, verdict.summary()
    assert work in verdict.work and work in verdict.summary()
    assert verdict.to_json()["attribution"]["triton"]


@pytest.mark.compiler
def test_the_device_answers_as_a_gpu_would(verify: Callable[..., Verdict]) -> None:
    """`is_cuda`, `device.type` and the SM count answer as on a GPU, so the Triton path runs
    and the PyTorch fallback the syntax tree sees is cleared by the run."""
    verdict = verify("ok_device_checks.py")
    assert verdict.ok, verdict.summary()
    assert any("torch.relu computes" in note and "cleared" in note for note in verdict.notes), verdict.notes


@pytest.mark.compiler
def test_a_degenerate_task_is_checked_on_standard_normal_inputs(verify: Callable[..., Verdict]) -> None:
    """ELU on torch.rand inputs is the identity: the task's fault, not the kernel's. A real ELU
    kernel verifies on standard-normal draws (a copy does not, above)."""
    verdict = verify("ok_degenerate_inputs.py")
    assert verdict.ok, verdict.summary()
    assert any("checked on standard-normal inputs of the same shapes instead" in n for n in verdict.notes)


@pytest.mark.compiler
def test_a_stricter_policy_is_a_setting(verify: Callable[..., Verdict]) -> None:
    """The GEMM kept in PyTorch passes by default on a fusion task; with no PyTorch compute
    allowed, or only other operators, it is rejected with the operator named."""
    strict = verify("ok_fusion_torch_gemm.py", torch_ops="none")
    assert not strict.ok and strict.stage == "work"
    assert "PyTorch computes on the inputs: addmm ×1 (the policy allows no PyTorch compute" in strict.message
    listed = verify("ok_fusion_torch_gemm.py", torch_ops=["convolution"])
    assert not listed.ok and "PyTorch computes addmm on the inputs, which the policy does not allow" in listed.message
    assert verify("ok_fusion_torch_gemm.py", torch_ops=["addmm"]).ok


# -- the judgement alone (no workers) --------------------------------------------------------


def _attribution(torch_ops: dict[str, int], kernels: dict[str, int], tokens: dict[str, str] | None = None) -> dict[str, object]:
    return {
        "triton": {name: {"launches": count, "elements": 100} for name, count in kernels.items()},
        "torch": {name: {"count": count, "work": 100} for name, count in torch_ops.items()},
        "tokens": tokens or {},
    }


def test_a_single_operator_reference_makes_pytorch_compute_a_rejection() -> None:
    judged = judge_work(_attribution({"exp": 1}, {"softmax_kernel": 1}), {"_softmax": 1})
    assert judged.error is not None and "single operator: softmax" in judged.error
    fused = judge_work(_attribution({"convolution": 1}, {"fused_kernel": 1}), {"convolution": 1, "relu": 1, "add": 1})
    assert fused.error is None
    assert fused.summary == ("Triton computes: fused_kernel ×1; PyTorch computes: convolution ×1 "
                             "(~50% of the recorded work)")


def test_a_harness_is_a_fusion_task_unless_it_says_otherwise() -> None:
    attribution = _attribution({"exp": 1}, {"k": 1})
    reference = {"exp": 1, "sum": 1, "div": 1}
    assert judge_work(attribution, reference, single_operator=False).error is None
    assert judge_work(attribution, reference, policy=parse_policy("none"), single_operator=False).error
    assert judge_work(attribution, {"exp": 1}, single_operator=False).error  # PyTorch computes all of it


def test_policies_parse_from_settings_flags_and_files() -> None:
    assert parse_policy(None) == "auto"
    assert parse_policy("none") == parse_policy("strict") == "strict"
    assert parse_policy("any") == "allow"
    assert parse_policy("conv2d, _softmax") == ("conv2d", "softmax")
    assert parse_policy([]) == "strict"


def test_token_kernels_beside_real_work_are_noted_not_rejected() -> None:
    judged = judge_work(_attribution({}, {"zero": 1, "accumulate": 1}, {"zero": "reads nothing derived from the inputs"}),
                        {"sum": 1})
    assert judged.error is None
    assert judged.notes == ["kernel zero reads nothing derived from the inputs; other kernels do the work"]
    alone = judge_work(_attribution({}, {"zero": 1}, {"zero": "writes nothing"}), {"sum": 1})
    assert alone.error is not None and "no Triton kernel does input-dependent work: zero writes nothing" in alone.error


def test_a_small_finish_in_pytorch_is_allowed_for_a_single_operator_only_under_auto() -> None:
    """BatchNorm with Triton per-channel sums and `sum / count` in PyTorch (l1_033): the kernels
    did the work; the same ops at a real share, or under an explicit strict policy, reject."""
    attribution = {"triton": {"reduce": {"launches": 1, "elements": 65536}, "apply": {"launches": 1, "elements": 65536}},
                   "torch": {"div": {"count": 2, "work": 128}, "mul": {"count": 1, "work": 64}}, "tokens": {},
                   "input_elements": 65536, "largest_torch_operand": 64}
    judged = judge_work(attribution, {"native_batch_norm": 1})
    assert judged.error is None
    assert any(note.startswith("PyTorch finishes on reduced data: div ×2, mul ×1") for note in judged.notes)
    assert judge_work(attribution, {"native_batch_norm": 1}, policy=parse_policy("strict")).error
    whole = {**attribution, "largest_torch_operand": 65536}  # PyTorch touched the whole input
    assert "PyTorch computes on the inputs: div ×2, mul ×1" in (judge_work(whole, {"native_batch_norm": 1}).error or "")
    by_rows = {**attribution, "torch": {"relu": {"count": 256, "work": 65536}}}  # small operands, all the work
    assert "PyTorch computes on the inputs: relu ×256" in (judge_work(by_rows, {"relu": 1}).error or "")


def test_a_copying_kernel_stands_in_only_for_a_reference_op_that_copies_too() -> None:
    """ResNet18 at checked sizes where the last map is 1×1 (l3_009): the reference's mean is a
    copy there, so the Triton average pool only copies; a copy with no such op, or standing in
    for an op PyTorch ran itself, stays a token."""
    attribution = {"triton": {"avgpool": {"launches": 1, "elements": 64}},
                   "torch": {"convolution": {"count": 20, "work": 10**6}, "relu": {"count": 17, "work": 10**4}},
                   "tokens": {"avgpool": "only copies one of its arguments (no arithmetic)"}}
    reference = {"convolution": 20, "relu": 17, "mean": 1}
    judged = judge_work(attribution, reference, identity_ops={"mean": 1, "relu": 3})
    assert judged.error is None
    assert judged.notes == ["kernel avgpool only copies at the checked sizes, as the reference's mean does there "
                            "(the sizes make it an identity); larger sizes would show its arithmetic"]
    assert judge_work(attribution, reference).error
    assert judge_work(attribution, reference, identity_ops={"relu": 3}).error
