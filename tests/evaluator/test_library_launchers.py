"""Library code as it is written (issue 34): a launcher that returns a tuple with plain values
beside its tensor (Liger-Kernel's `_softmax_forward` returns `(y, BLOCK_SIZE, num_warps,
multi_block_launch)`) is compared output by output, ints and bools for equality; a module the
file imports that the workers cannot find is reported as that, with what to do, not as the
reference's failure; the `importPaths` folders make it importable inside the sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tritonsmith.evaluator.sandbox import with_import_paths
from tritonsmith.evaluator.verify import detect_specs, verify_spec

pytestmark = [pytest.mark.compiler]

# The VS Code e2e's library launcher (returns `y, BLOCK_SIZE, num_warps, False`), varied below.
LAUNCHER = (Path(__file__).resolve().parents[2] / "client-vscode" / "e2e" / "workspace" / "library_softmax.py").read_text()
RETURNED = "    return y2d.view(*batch, n_cols), BLOCK_SIZE, num_warps, False\n"
EXPECTED = "    return torch.softmax(x, dim=-1), BLOCK_SIZE, num_warps, False\n"
assert RETURNED in LAUNCHER and EXPECTED in LAUNCHER


def launcher(*, returned: str = "y2d.view(*batch, n_cols), BLOCK_SIZE, num_warps, False",
             expected: str = "torch.softmax(x, dim=-1), BLOCK_SIZE, num_warps, False", imports: str = "") -> str:
    source = LAUNCHER.replace(RETURNED, f"    return {returned}\n").replace(EXPECTED, f"    return {expected}\n")
    return source.replace("import triton.language as tl\n", f"import triton.language as tl\n{imports}\n", 1)


def _verify(tmp_path: Path, source: str, pools=None, env=None):
    path = tmp_path / "liger_softmax.py"
    path.write_text(source)
    [spec] = detect_specs(path)
    return verify_spec(spec, mode="interpreter", time_it=False, pools=pools, env=env)


def test_a_tuple_with_plain_values_verifies(tmp_path: Path, interpreter_pools) -> None:
    verdict = _verify(tmp_path, launcher(), interpreter_pools)
    assert verdict.ok, verdict.summary()


@pytest.mark.parametrize("returned, why", [
    ("y2d.view(*batch, n_cols), BLOCK_SIZE + 1, num_warps, False", "output 1: 513, expected 512"),
    ("y2d.view(*batch, n_cols), BLOCK_SIZE, num_warps, 0", "output 3: int 0, the reference bool False"),
    ("y2d.view(*batch, n_cols), BLOCK_SIZE, num_warps", "returned 3 output(s), the reference 4"),
    ("y2d.view(*batch, n_cols), float(BLOCK_SIZE), num_warps, False", "output 1: float 512.0, the reference int 512"),
])
def test_plain_values_must_be_equal_and_of_the_same_type(tmp_path: Path, interpreter_pools, returned: str, why: str) -> None:
    verdict = _verify(tmp_path, launcher(returned=returned), interpreter_pools)
    assert not verdict.ok and why in verdict.message, verdict.summary()


def test_an_object_that_is_neither_a_tensor_nor_a_plain_value_is_refused(tmp_path: Path, interpreter_pools) -> None:
    """A lazy object could compute the answer when read: only tensors and plain values count."""
    source = launcher(returned="y2d.view(*batch, n_cols), BLOCK_SIZE, num_warps, [False]",
                      expected="torch.softmax(x, dim=-1), BLOCK_SIZE, num_warps, [False]")
    verdict = _verify(tmp_path, source, interpreter_pools)
    assert not verdict.ok and "output 3 is a builtins.list" in verdict.message and "exploit 9" in verdict.message


def test_a_module_the_workers_cannot_import_is_named_with_what_to_do(tmp_path: Path, interpreter_pools) -> None:
    """Not "the reference failed": a NOT VERIFIED verdict at the imports, naming the module,
    the interpreter to install it in and the setting that adds a workspace folder."""
    verdict = _verify(tmp_path, launcher(imports="from liger_kernel_not_installed.ops.utils import calculate_settings"),
                      interpreter_pools)
    assert not verdict.ok and verdict.stage == "imports", verdict.summary()
    summary = verdict.summary()
    assert summary.startswith("NOT VERIFIED") and "the reference failed" not in summary
    assert "No module named 'liger_kernel_not_installed'" in summary and "importPaths" in summary
    assert "liger_softmax.py:8" in summary  # the user's line that imports it


def test_import_paths_make_a_workspace_module_importable_in_the_sandbox(tmp_path: Path) -> None:
    """A module next to the file, in a folder the sandbox hides (`/tmp`, `$HOME`): not found by
    default, found once its folder is an import path (mounted back read-only in the jail)."""
    package = tmp_path / "src" / "mylib"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "launch.py").write_text("import triton\n\n\ndef settings_for(n):\n"
                                       "    return triton.next_power_of_2(n), 4\n")
    source = launcher(imports="from mylib.launch import settings_for").replace(
        "    BLOCK_SIZE, num_warps = calculate_settings(n_cols)", "    BLOCK_SIZE, num_warps = settings_for(n_cols)")
    assert "= settings_for(n_cols)" in source
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    assert _verify(tmp_path, source, env=env).stage == "imports"
    verdict = _verify(tmp_path, source, env=with_import_paths(env, [tmp_path / "src"]))
    assert verdict.ok, verdict.summary()


def test_compare_outputs_judges_plain_values() -> None:
    torch = pytest.importorskip("torch")
    from tritonsmith.evaluator.correctness import compare_outputs

    tolerances = {"float32": 1e-4}
    y = torch.ones(3)
    assert compare_outputs([y, 4, True, None, "rows"], [y.clone(), 4, True, None, "rows"], tolerances) is None
    assert compare_outputs([y, 0.5], [y, 0.50001], tolerances) is None
    assert "expected 0.5" in (compare_outputs([y, 0.5], [y, 0.6], tolerances) or "")
    assert compare_outputs([float("nan")], [float("nan")], tolerances) is None
    assert "bool True, the reference int 1" in (compare_outputs([y, 1], [y, True], tolerances) or "")
    assert "not torch.Tensor" in (compare_outputs([y], [3], tolerances) or "")
