"""Verification against an adversary (docs/verification.md): attacks written for this suite, one
file each in fixtures/adversary/, every one refused with its mechanism named, beside legitimate
look-alikes that must verify.

Each attack's docstring ends with `Refused: <words>`, the words its verdict must contain. The
attacks compute the answer where the recorder does not look (a thread, NumPy, Python lists,
PyTorch with the dispatch modes off, renamed operators, a custom operator) and nudge it through a
kernel; run code where the reference runs; rewrite the sealed outputs; patch torch by routes a
static check cannot read; and branch on where they run. Under Triton's interpreter, in two pools
shared by the module.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tritonsmith.evaluator.exploits import device_branches
from tritonsmith.evaluator.pool import WorkerPool
from tritonsmith.evaluator.specs import only_definitions
from tritonsmith.evaluator.verify import Verdict, detect_specs, verify_spec

ADVERSARY = Path(__file__).parent / "fixtures" / "adversary"
ATTACKS = sorted(p.name for p in ADVERSARY.glob("a*.py"))
LOOK_ALIKES = sorted(p.name for p in ADVERSARY.glob("ok*.py"))


def _refused_words(name: str) -> str:
    match = re.search(r"^Refused: (.+)$", (ADVERSARY / name).read_text(encoding="utf-8"), re.MULTILINE)
    assert match, f"{name} has no `Refused:` line"
    return match.group(1).strip()


@pytest.fixture(scope="module")
def verify() -> Iterator[Callable[[str], Verdict]]:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    pytest.importorskip("numpy", reason="Triton's interpreter needs numpy")
    pools: list[WorkerPool] = []

    def run(name: str) -> Verdict:
        if not pools:
            env = {**os.environ, "TRITON_INTERPRET": "1"}
            pools.extend([WorkerPool(1, env=env), WorkerPool(1, env=env)])
        [spec] = detect_specs(ADVERSARY / name)
        return verify_spec(spec, mode="interpreter", pools=(pools[0], pools[1]), timeout_s=60)

    yield run
    for pool in pools:
        pool.close()


def test_the_suite_has_thirty_attacks_and_look_alikes() -> None:
    assert len(ATTACKS) >= 30 and len(LOOK_ALIKES) >= 4


@pytest.mark.compiler
@pytest.mark.parametrize("name", ATTACKS)
def test_every_attack_is_refused_with_its_mechanism_named(verify: Callable[[str], Verdict], name: str) -> None:
    verdict = verify(name)
    assert not verdict.ok, f"{name} was verified: {verdict.summary()}"
    assert _refused_words(name) in verdict.message, verdict.summary()


@pytest.mark.compiler
@pytest.mark.parametrize("name", LOOK_ALIKES)
def test_legitimate_look_alikes_verify(verify: Callable[[str], Verdict], name: str) -> None:
    verdict = verify(name)
    assert verdict.ok, verdict.summary()


@pytest.mark.compiler
def test_a_worker_that_saw_torch_patched_is_not_reused(verify: Callable[[str], Verdict]) -> None:
    """A patch in one job must not reach the next: the worker is retired and the next
    candidate, honest, verifies in a fresh one."""
    assert not verify("a23_patch_torch_save_vars.py").ok
    assert verify("ok04_device_assert_and_item_size.py").ok


# -- the parts, without a worker ------------------------------------------------------------


def test_the_reference_worker_imports_only_the_reference_definitions() -> None:
    source = (ADVERSARY / "a19_rebind_reference_forward.py").read_text(encoding="utf-8")
    kept = only_definitions(source, {"Model", "get_inputs", "get_init_inputs"})
    assert "class Model(" in kept and "def get_inputs" in kept and "batch_size = 16" in kept
    assert "import torch.nn as nn" in kept
    for candidate_code in ("Model.forward =", "class ModelNew", "scale_kernel", "import sys"):
        assert candidate_code not in kept
    assert kept.count("\n") == source.count("\n")  # line numbers stay the user's


def test_the_reference_keeps_what_it_uses_inside_if_and_try() -> None:
    source = (
        "import torch\nimport math\nimport os\n"
        "if True:\n    SCALE = 2.0\nelse:\n    SCALE = 3.0\n"
        "def helper(x):\n    return x * SCALE * math.pi\n"
        "def ref(x):\n    return helper(x)\n"
        "torch.allclose = None\n"
        "if __name__ == '__main__':\n    print(ref(1))\n"
    )
    kept = only_definitions(source, {"ref"})
    assert "SCALE = 2.0" in kept and "def helper" in kept and "import math" in kept
    assert "import os" not in kept and "torch.allclose" not in kept and "__main__" not in kept


def test_device_branches_read_through_names_functions_and_attributes() -> None:
    source = (
        "import os\nimport torch\n"
        "def on_gpu(t):\n    return t.device.type == 'cuda'\n"
        "class ModelNew(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.interp = os.environ.get('TRITON_INTERPRET')\n"
        "    def forward(self, x):\n"
        "        assert x.is_cuda\n"
        "        y = x if self.interp else -x\n"
        "        if on_gpu(x):\n            y = y + 1\n"
        "        return y\n"
    )
    found = dict((what, line) for line, what in device_branches(source))
    assert found == {"TRITON_INTERPRET (through self.interp)": 11, "device.type (through on_gpu)": 12}


def test_a_candidate_cannot_widen_its_own_policy(tmp_path: Path) -> None:
    from tritonsmith.evaluator.specs import detect_kernelbench
    from tritonsmith.evaluator.verify import _ignored_directives

    reference = (ADVERSARY / "a03_numpy.py").read_text(encoding="utf-8").split("@triton.jit")[0]
    (tmp_path / "problem.py").write_text(reference.replace("class Model", "# tritonsmith: torch-ops = none\nclass Model"))
    solution = tmp_path / "solution.py"
    solution.write_text("# tritonsmith: reference=problem.py\n# tritonsmith: torch-ops = any\n"
                        "class ModelNew:\n    pass\n")
    spec = detect_kernelbench(solution)
    assert spec is not None and spec.torch_ops == "none" and spec.ignored_torch_ops == "any"
    [note] = _ignored_directives(spec, None)
    assert "`# tritonsmith: torch-ops = any` is ignored" in note and "the reference's file (none)" in note
    # A search's variant: the opened file's policy, whatever the variant's text says.
    same_file = detect_kernelbench(ADVERSARY / "a03_numpy.py")
    assert same_file is not None
    variant = "# tritonsmith: torch-ops = any\n" + (ADVERSARY / "a03_numpy.py").read_text(encoding="utf-8")
    [note] = _ignored_directives(same_file, variant)
    assert "set by the opened file's (auto)" in note
    assert _ignored_directives(same_file, (ADVERSARY / "a03_numpy.py").read_text(encoding="utf-8")) == []


@pytest.mark.compiler
def test_verify_under_a_published_protocol_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from tritonsmith.cli import main

    assert main(["verify", str(ADVERSARY / "ok04_device_assert_and_item_size.py"), "--protocol", "kernelbench-v0",
                 "--no-predict", "--no-timing"]) == 0
    out = capsys.readouterr().out
    assert "verified · interpreter · kernelbench-v0 protocol · 5 trials" in out


def test_a_try_is_judged_by_what_it_wraps_except_under_kernelbenchs_own_rule() -> None:
    from tritonsmith.evaluator.exploits import static_checks

    source = (ADVERSARY / "ok06_try_around_a_device_query.py").read_text(encoding="utf-8")
    assert [r for r in static_checks(source) if r.exploit == 3] == []
    assert {r.exploit for r in static_checks(source, every_try=True)} == {3}


def test_cuda_autocast_is_found_as_a_context_a_decorator_and_by_keyword() -> None:
    from tritonsmith.evaluator.exploits import cuda_autocast

    source = (
        "import torch\nfrom torch.cuda.amp import autocast\n"
        "@torch.cuda.amp.autocast()\ndef f(x):\n    return x\n"
        "def g(x):\n    with torch.autocast('cuda', dtype=torch.float16):\n        return x\n"
        "def h(x):\n    with torch.amp.autocast(device_type=\"cuda\"):\n        return x\n"
        "def k(x):\n    with torch.autocast('cpu'):\n        return x\n"
    )
    assert [line for line, _ in cuda_autocast(source)] == [3, 7, 10]


@pytest.mark.compiler
def test_a_cuda_only_call_is_not_verified_and_named(tmp_path: Path, verify: Callable[[str], Verdict]) -> None:
    """`torch.cuda.Event` cannot be honoured on the CPU: NOT VERIFIED, not the kernel's failure."""
    source = (ADVERSARY / "ok04_device_assert_and_item_size.py").read_text(encoding="utf-8")
    source = source.replace('        assert x.is_cuda, "a CUDA tensor is required"\n',
                            '        assert x.is_cuda, "a CUDA tensor is required"\n'
                            '        torch.cuda.Event(enable_timing=True).record()\n')
    path = tmp_path / "timed_softmax.py"
    path.write_text(source)
    [spec] = detect_specs(path)
    verdict = verify_spec(spec, mode="interpreter", timeout_s=60)
    assert not verdict.ok and verdict.stage == "cuda-only", verdict.summary()
    assert verdict.summary().startswith("NOT VERIFIED") and "dummy base class Event" in verdict.message


@pytest.mark.compiler
def test_a_kernel_whose_work_the_task_discards_is_not_verified_and_not_called_an_exploit(
        verify: Callable[[str], Verdict]) -> None:
    """KernelBench level 3 problem 28 (ViT) discards its patch embedding: the reference's output is
    the same for every input and stays so when the embedding kernel does nothing. Nothing can check
    that kernel, which is neither caching nor a kernel launched for show."""
    verdict = verify("nv01_reference_discards_the_kernels_work.py")
    assert not verdict.ok and verdict.stage == "unseen", verdict.summary()
    assert verdict.summary().startswith("NOT VERIFIED"), verdict.summary()
    assert "linear_kernel" in verdict.message and "exploit" not in verdict.message, verdict.message
