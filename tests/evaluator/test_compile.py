"""Compiling for GPU targets without a GPU: the kernel is cut out of its file (host code never
runs), compiled per target and per autotune Config, and errors land on the user's own lines.

These call `handle_compile` in the test process (the worker runs the same function); each
compiled file is shared by the tests that read it, so the module stays well under a minute.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tritonsmith.evaluator.compile import handle_compile, match_rules, parse_target, target_limits
from tritonsmith.evaluator.extract import extract_kernel_module

pytestmark = [pytest.mark.compiler]

VECTOR_ADD = textwrap.dedent('''\
    import torch
    import triton
    import triton.language as tl

    DEVICE = "cuda"
    x = torch.randn(98432, device=DEVICE)  # runs at import: no CUDA here


    @triton.jit
    def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        tl.store(output_ptr + offsets, tl.load(x_ptr + offsets, mask=mask)
                 + tl.load(y_ptr + offsets, mask=mask), mask=mask)


    def add(a, b):
        output = torch.empty_like(a)
        n = output.numel()
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
        add_kernel[grid](a, b, output, n, BLOCK_SIZE=1024)
        return output


    if __name__ == "__main__":
        print(triton.testing.do_bench(lambda: add(x, x)))
''')

MATMUL = textwrap.dedent('''\
    import torch
    import triton
    import triton.language as tl


    def is_cuda():
        return triton.runtime.driver.active.get_current_target().backend == "cuda"


    @triton.autotune(
        configs=[
            triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_stages=3, num_warps=4),
            triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, num_stages=2, num_warps=4),
        ],
        key=["M", "N", "K"],
    )
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc)


    a = torch.randn(512, 512, device="cuda")
''')

HUGE = MATMUL.replace(
    '''triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, num_stages=2, num_warps=4),''',
    '''triton.Config({"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 128}, num_stages=4, num_warps=8),''',
).replace(
    '''triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_stages=3, num_warps=4),\n''',
    "",
)

HELPER_ERROR = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def _scale(v):
        r = tl.arange(0, 100)
        return v * 2


    @triton.jit
    def scale_kernel(p, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        v = tl.load(p + offs)
        v = _scale(v)
        tl.store(p + offs, v)


    scale_kernel[(1,)](None, BLOCK=128)
''')


@pytest.fixture(scope="module")
def compile_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Compile (source, kernel, targets) once for the module's tests."""
    root = tmp_path_factory.mktemp("compile")
    cache: dict[tuple[str, str, tuple[str, ...]], dict[str, Any]] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_CACHE_DIR", str(root / "cache"))

        def run(source: str, kernel: str, targets: tuple[str, ...]) -> dict[str, Any]:
            key = (source, kernel, targets)
            if key not in cache:
                scratch = root / f"job{len(cache)}"
                cache[key] = handle_compile({"source": source, "path": f"kernels/{kernel}.py",
                                             "kernel": kernel, "targets": list(targets),
                                             "scratch": str(scratch)})
            return cache[key]

        yield run


def test_vector_add_compiles_without_running_host_code(compile_file: Any) -> None:
    result = compile_file(VECTOR_ADD, "add_kernel", ("sm_90",))
    assert result["error"] is None, result["error"]
    assert result["ok"], result
    [entry] = result["results"]
    assert entry["constexprs"] == {"BLOCK_SIZE": 1024}
    assert entry["signature"]["x_ptr"] == "*fp32" and entry["signature"]["n_elements"] == "i32"
    assert "n_elements: i32" in entry["assumed"]
    assert entry["resources"]["registers"] > 0
    assert entry["resources"]["blocks_per_sm"] > 0


GLU = textwrap.dedent('''
import triton
import triton.language as tl


@triton.jit
def glu_kernel(x_ptr, out_ptr, n_elements, half, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    row = offsets // half
    col = offsets % half
    a = tl.load(x_ptr + row * (2 * half) + col, mask=mask, other=0.0)
    b = tl.load(x_ptr + row * (2 * half) + half + col, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, a * tl.sigmoid(b), mask=mask)


def glu(x, out, n, half):
    glu_kernel[(triton.cdiv(n, 16),)](x, out, n, half, BLOCK_SIZE=16)
''')


def test_an_integer_added_into_an_address_is_not_taken_for_a_pointer(compile_file: Any) -> None:
    """`x_ptr + ... + half + col`: only `x_ptr` is the pointer, `half` an integer."""
    result = compile_file(GLU, "glu_kernel", ("sm_90",))
    assert result["ok"], result["error"] or result["results"]
    [entry] = result["results"]
    assert entry["signature"]["x_ptr"] == "*fp32" and entry["signature"]["half"] == "i32"


def test_matmul_reports_resources_per_config_and_target(compile_file: Any) -> None:
    result = compile_file(MATMUL, "matmul_kernel", ("sm_80", "sm_90"))
    assert result["ok"], result
    # `is_cuda` and the module-level tensor are host code: not in the compiled module.
    assert "is_cuda" not in Path(result["extracted"]["file"]).read_text()
    seen = {(e["target"], e["config_index"]) for e in result["results"]}
    assert seen == {("sm_80", 0), ("sm_80", 1), ("sm_90", 0), ("sm_90", 1)}
    for entry in result["results"]:
        res = entry["resources"]
        assert res["registers"] > 0 and res["shared"] > 0, entry
        assert res["spills"] is not None and not res["exceeds_shared"]
        assert res["blocks_per_sm"] >= 1
        assert entry["origin"]["start"][0] in (11, 12)  # the Config's line, 0-based
    by_config = {e["config_index"]: e for e in result["results"] if e["target"] == "sm_80"}
    assert by_config[0]["options"] == {"num_stages": 3, "num_warps": 4}
    assert by_config[1]["constexprs"]["BLOCK_M"] == 128


def test_config_exceeding_sm80_shared_memory_is_flagged(compile_file: Any) -> None:
    result = compile_file(HUGE, "matmul_kernel", ("sm_80",))
    [entry] = result["results"]
    assert entry["ok"]  # it compiles; it would fail at launch
    res = entry["resources"]
    assert res["shared"] > target_limits("sm_80").smem_per_block
    assert res["exceeds_shared"] and res["blocks_per_sm"] == 0
    assert "shared memory" in entry["launch_error"]
    assert not result["ok"]


def test_error_in_helper_is_reported_at_the_helpers_line(compile_file: Any) -> None:
    result = compile_file(HELPER_ERROR, "scale_kernel", ("sm_90",))
    [entry] = result["results"]
    assert not entry["ok"]
    error = entry["error"]
    assert "power of 2" in error["message"]
    assert error["function"] == "_scale"
    # `tl.arange(0, 100)` on line 7 (row 6), columns 8..25.
    assert error["range"] == {"start": [6, 8], "end": [6, 25]}
    assert error["related"][0]["range"]["start"] == [14, 8]  # the call `_scale(v)`
    assert "TS101" in error["rules"]


def test_amd_target_compiles_when_supported(compile_file: Any) -> None:
    from triton.backends import backends

    if "amd" not in backends:
        pytest.skip("the installed triton has no AMD backend")
    result = compile_file(VECTOR_ADD, "add_kernel", ("gfx942",))
    assert result["ok"], result
    res = result["results"][0]["resources"]
    assert res["threads_per_block"] == 4 * 64 and res["registers"] > 0 and res["approximate"]


def test_extract_keeps_helpers_transitively_and_drops_host_code() -> None:
    source = textwrap.dedent('''\
        import os
        import torch
        import triton
        import triton.language as tl
        from .local import thing

        SCALE: tl.constexpr = tl.constexpr(2)
        UNUSED = 3
        data = torch.randn(16, device="cuda")


        @triton.jit
        def _leaf(v):
            return v * SCALE


        @triton.jit
        def _mid(v):
            return _leaf(v) + 1


        @triton.jit
        def _unused(v):
            return v


        def configs():
            return [triton.Config({"BLOCK": 64})]


        @triton.autotune(configs=configs(), key=["n"])
        @triton.jit
        def kern(p, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(p + offs, _mid(tl.load(p + offs)))


        kern[(1,)](data, 16)
        if __name__ == "__main__":
            print(os.getcwd())
        ''')
    extracted = extract_kernel_module(source, "kern")
    out = extracted.text
    assert "def _leaf" in out and "def _mid" in out and "def kern" in out
    assert "_unused" not in out and "UNUSED" not in out and "def configs" not in out
    assert "torch" not in out and "import os" not in out and "__main__" not in out
    assert "kern[(1,)]" not in out and "triton.autotune" not in out
    assert "SCALE: tl.constexpr = tl.constexpr(2)" in out
    assert out.index("def _leaf") < out.index("def _mid") < out.index("def kern")
    assert extracted.helpers == ["_mid", "_leaf"] and extracted.constants == ["SCALE"]
    assert any("autotune" in note for note in extracted.notes)
    compile(out, "<extracted>", "exec")  # valid Python
    # Every kept line maps back to the same text in the original file.
    original = source.splitlines()
    for number, line in enumerate(out.splitlines(), start=1):
        mapped = extracted.to_original(number)
        if mapped is not None:
            assert original[mapped[0] - 1] == line
        else:
            assert line == ""


def test_extract_dedents_kernels_nested_in_blocks() -> None:
    source = textwrap.dedent('''\
        import triton
        import triton.language as tl

        try:
            HAS = True

            @triton.jit
            def kern(p, BLOCK: tl.constexpr):
                tl.store(p + tl.arange(0, BLOCK), 1.0)
        except ImportError:
            pass
        ''')
    extracted = extract_kernel_module(source, "kern")
    assert "\n@triton.jit\ndef kern(p, BLOCK: tl.constexpr):\n    tl.store" in extracted.text
    line = extracted.text.splitlines().index("def kern(p, BLOCK: tl.constexpr):") + 1
    assert extracted.to_original(line, 0) == (8, 4)


def test_targets_and_rule_matching() -> None:
    assert parse_target("sm_90") == ("cuda", 90, 32)
    assert parse_target("gfx942") == ("hip", "gfx942", 64)
    with pytest.raises(ValueError):
        parse_target("tpu_v5")
    assert match_rules("ValueError: arange's range must be a power of 2") == ["TS101"]
    assert match_rules("nothing a rule knows") == []
