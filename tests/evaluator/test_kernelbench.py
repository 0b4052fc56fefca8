"""KernelBench correctness verification: detection, size scaling, static checks that name the
trick they stop, and the three-job protocol under Triton's interpreter (no GPU needed).

The candidates in fixtures/kb/ each try one exploit from shared/reference/verification.md,
section 4; the tests check that each is rejected and that the message names the trick.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tritonsmith.cli import main
from tritonsmith.evaluator.verify import (
    detect_kernelbench,
    rewrite_constants,
    scaled_constants,
    static_checks,
    verify_kernelbench,
)

pytestmark = [pytest.mark.compiler]

ROOT = Path(__file__).resolve().parents[2]
KB = Path(__file__).parent / "fixtures" / "kb"
EXAMPLE = ROOT / "examples" / "kernelbench_relu.py"


def _needs_interpreter() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    pytest.importorskip("numpy", reason="Triton's interpreter needs numpy")


# -- detection and sizes (no torch) ---------------------------------------------------------


def test_detects_one_file_and_sibling_problems(tmp_path: Path) -> None:
    spec = detect_kernelbench(EXAMPLE)
    assert spec is not None and spec.same_file and spec.reference == EXAMPLE
    sibling = detect_kernelbench(KB / "sibling.py")
    assert sibling is not None and sibling.reference == KB / "sibling_reference.py"
    assert detect_kernelbench(KB / "sibling_reference.py") is None  # no ModelNew
    assert detect_kernelbench(ROOT / "examples" / "vector_add.py") is None
    # A reference named by a comment.
    (tmp_path / "problem.py").write_text((KB / "sibling_reference.py").read_text())
    candidate = tmp_path / "attempt.py"
    candidate.write_text("# tritonsmith: reference=problem.py\nclass ModelNew:\n    pass\n")
    named = detect_kernelbench(candidate)
    assert named is not None and named.reference == tmp_path / "problem.py"


def test_constants_are_rewritten_alike_in_reference_and_candidate() -> None:
    # The scaling policy itself is tested in test_sizes.py.
    source = EXAMPLE.read_text()
    sizes = scaled_constants(source)
    # The batch keeps its parity only; the columns keep 2^10 (3·2^10) against 1024-wide blocks.
    assert sizes == {"batch_size": (4096, 16), "dim": (393216, 3072)}
    rewritten = rewrite_constants(source, sizes)
    assert "batch_size = 16\n" in rewritten and "dim = 3072\n" in rewritten
    assert rewrite_constants("dim = 393216\nother = 393216\n", sizes) == "dim = 3072\nother = 393216\n"


# -- static checks (no torch) ---------------------------------------------------------------

_GOOD = textwrap.dedent('''\
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl


    @triton.jit
    def k(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


    def launch(x):
        out = torch.empty_like(x)
        k[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
        return out


    class ModelNew(nn.Module):
        def forward(self, x):
            return self.helper(x)

        def helper(self, x):
            return launch(x)
    ''')


def test_a_clean_candidate_passes_static_checks() -> None:
    assert static_checks(_GOOD) == []


@pytest.mark.parametrize(("extra", "exploit", "words"), [
    ("torch.cuda.synchronize = lambda: None\n", 10, "monkey-patching"),
    ("import time\ntime.perf_counter = lambda: 0.0\n", 10, "assigns time.perf_counter"),
    ("setattr(torch, 'relu', abs)\n", 10, "setattr on torch"),
    ("import gc\n", 17, "introspection"),
    ("import sys\nframe = sys._getframe(1)\n", 17, "sys._getframe"),
    ("from concurrent.futures import ThreadPoolExecutor\n", 8, "background thread"),
    ("class Lazy(torch.Tensor):\n    pass\n", 9, "tensor subclass"),
])
def test_static_checks_name_the_trick(extra: str, exploit: int, words: str) -> None:
    rejections = static_checks(_GOOD + extra)
    assert [r.exploit for r in rejections] == [exploit], rejections
    assert words in str(rejections[0])


def test_a_sibling_candidate_may_not_import_the_reference() -> None:
    source = _GOOD.replace("import torch\n", "import torch\nfrom problem import Model\n", 1)
    found = [str(r) for r in static_checks(source, reference_module="problem") if r.exploit == 4]
    assert any("imports the reference module problem" in f for f in found), found
    assert any("imports Model from problem" in f for f in found), found


@pytest.mark.parametrize(("fixture", "exploit", "words"), [
    ("try_except.py", 3, "try/except"),
    ("inherits_model.py", 4, "ModelNew must subclass nn.Module only, not Model"),
    ("thread_import.py", 8, "imports threading"),
])
def test_exploit_fixtures_are_rejected_before_running(fixture: str, exploit: int, words: str) -> None:
    spec = detect_kernelbench(KB / fixture)
    assert spec is not None
    verdict = verify_kernelbench(spec)  # static rejections start no worker
    assert not verdict.ok and verdict.stage == "static"
    matching = [r for r in verdict.rejections if r.exploit == exploit]
    assert matching and words in str(matching[0]), verdict.rejections
    assert f"exploit {exploit}:" in verdict.message


def test_name_based_findings_are_warnings_the_run_settles() -> None:
    """KernelBench's own policy: PyTorch compute found by name is a warning; the forward pass's
    record at the dispatcher confirms or clears it. Here no Triton kernel runs at all."""
    _needs_interpreter()
    spec = detect_kernelbench(KB / "torch_relu.py")
    assert spec is not None
    found = static_checks((KB / "torch_relu.py").read_text())
    assert {(r.exploit, r.strict) for r in found} >= {(1, False), (2, False)}
    verdict = verify_kernelbench(spec)
    assert not verdict.ok and verdict.stage == "candidate", verdict.summary()
    assert "launched no Triton kernel" in verdict.message
    assert any("torch.relu computes" in note and "not settled" in note for note in verdict.notes), verdict.notes


# -- the protocol under the interpreter ------------------------------------------------------


def _in_workspace(tmp_path: Path, source: Path) -> str:
    """A copy in a workspace of its own: verify writes .tritonsmith/state.db at the root."""
    (tmp_path / "pyproject.toml").write_text("")
    copy = tmp_path / source.name
    copy.write_text(source.read_text())
    return str(copy)


def test_the_example_verifies_through_the_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _needs_interpreter()
    assert main(["verify", _in_workspace(tmp_path, EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "relu_kernel: compiled" in out
    assert "verified · interpreter · 3 trials · sizes: batch_size=16 (of 4096), dim=3072 (of 393216)" in out
    assert "also at batch_size=11, dim=2303" in out  # the odd-size trial runs for KernelBench problems too


def test_a_sibling_reference_with_cuda_inputs_and_init_args_verifies() -> None:
    _needs_interpreter()
    spec = detect_kernelbench(KB / "sibling.py")
    assert spec is not None
    verdict = verify_kernelbench(spec)
    assert verdict.ok, verdict.message
    # 128 × 1000 is over the element budget: the odd part of 1000 = 8·125 goes first.
    assert verdict.sizes == {"batch_size": (128, 128), "features": (1000, 408)}
    assert verdict.details["main.inputs"]["input_shapes"][0] == [[128, 408]]
    assert len(set(verdict.details["main.inputs"]["trial_seeds"])) == 3  # distinct trial seeds


def test_a_wrong_result_names_the_trial_and_the_largest_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _needs_interpreter()
    assert main(["verify", _in_workspace(tmp_path, KB / "wrong_result.py")]) == 1
    out = capsys.readouterr().out
    assert "FAILED · interpreter · compare: trial 1 (seed " in out
    assert "max abs error" in out and "at index (" in out and "atol=rtol=0.0001" in out


@pytest.mark.parametrize(("fixture", "words"), [
    ("inplace.py", "modified its inputs in place (input 0) (exploit 6"),
    ("subclass_output.py", "torch.nn.parameter.Parameter, not exactly torch.Tensor (exploit 9"),
    ("thread_hidden.py", "the candidate started a thread running Thread._bootstrap (exploit 8"),
])
def test_runtime_exploits_fail_in_the_candidate_worker(fixture: str, words: str) -> None:
    _needs_interpreter()
    spec = detect_kernelbench(KB / fixture)
    assert spec is not None
    verdict = verify_kernelbench(spec)
    assert not verdict.ok and verdict.stage == "candidate", verdict.summary()
    assert words in verdict.message


def test_compare_outputs_treats_nan_as_a_mismatch_not_a_wildcard() -> None:
    _needs_interpreter()
    import torch

    from tritonsmith.evaluator.correctness import compare_outputs

    tolerances = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}
    expected = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert compare_outputs([expected], [expected.clone()], tolerances) is None
    nan = expected.clone()
    nan[1, 2] = float("nan")
    assert "at index (1, 2)" in (compare_outputs([expected], [nan], tolerances) or "")
    assert "dtype" in (compare_outputs([expected], [expected.half()], tolerances) or "")
    assert "shape" in (compare_outputs([expected], [expected.reshape(3, 2)], tolerances) or "")
    # fp16 gets 1e-2: an error of 5e-3 passes there and fails in fp32.
    assert compare_outputs([expected.half()], [(expected + 5e-3).half()], tolerances) is None
    assert "max abs error" in (compare_outputs([expected], [expected + 5e-3], tolerances) or "")
