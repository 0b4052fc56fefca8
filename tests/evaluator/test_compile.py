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

from tritonsmith.evaluator.compile import handle_compile, parse_target, target_limits
from tritonsmith.evaluator.extract import extract_kernel_module
from tritonsmith.rules import match_rules

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
    import torch


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


    scale_kernel[(1,)](torch.empty(128), BLOCK=128)
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
    # `tl.arange(0, 100)` on line 8 (row 7), columns 8..25.
    assert error["range"] == {"start": [7, 8], "end": [7, 25]}
    assert error["related"][0]["range"]["start"] == [15, 8]  # the call `_scale(v)`
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


INT_DOT = textwrap.dedent('''\
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def idot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        idx = offs[:, None] * BLOCK + offs[None, :]
        a = tl.load(a_ptr + idx)
        b = tl.load(b_ptr + idx)
        tl.store(c_ptr + idx, tl.dot(a, b))


    def idot():
        a = torch.randint(0, 10, (16, 16), dtype=torch.int32, device="cuda")
        b = torch.ones((16, 16), device="cuda").int()
        c = torch.empty((16, 16), dtype=torch.int32, device="cuda")
        idot_kernel[(1,)](a, b, c, BLOCK=16)
        return c
''')


def test_int32_buffers_at_the_launch_make_int32_pointers_and_tl_dot_on_them_fails(compile_file: Any) -> None:
    """Not `*fp32` (where `tl.dot` compiles): the launch site allocates torch.int32 buffers."""
    result = compile_file(INT_DOT, "idot_kernel", ("sm_90",))
    [entry] = result["results"]
    assert entry["signature"] == {"a_ptr": "*i32", "b_ptr": "*i32", "c_ptr": "*i32", "BLOCK": "constexpr"}
    assert entry["assumed"] == [] and "dtype=torch.int32" in entry["typed_from"]["a_ptr"]
    assert "line 16" in entry["typed_from"]["a_ptr"] and ".int()" in entry["typed_from"]["b_ptr"]
    assert not entry["ok"] and "int32" in entry["error"]["message"]
    assert entry["error"]["range"]["start"][0] == 11  # the `tl.dot` line


FP16_GEMM = textwrap.dedent('''\
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl

    M = 1024
    N = 1024
    K = 1024


    @triton.autotune(
        configs=[triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_stages=4, num_warps=8)],
        key=["M", "N", "K"],
    )
    @triton.jit
    def gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr):
        rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


    def gemm(a, b):
        c = torch.empty((a.shape[0], b.shape[1]), device=a.device, dtype=a.dtype)
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))
        gemm_kernel[grid](a, b, c, a.shape[0], b.shape[1], a.shape[1])
        return c


    class ModelNew(nn.Module):
        def forward(self, a, b):
            return gemm(a, b)


    def get_inputs():
        return [torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)]
''')


def test_fp16_inputs_of_get_inputs_make_an_fp16_gemm_that_fits(compile_file: Any) -> None:
    """Compiled as fp32 this Config needs 256 KB of shared memory (over sm_90's limit); the
    problem's inputs are fp16, and so is the signature."""
    result = compile_file(FP16_GEMM, "gemm_kernel", ("sm_90",))
    [entry] = result["results"]
    assert entry["signature"]["a_ptr"] == entry["signature"]["b_ptr"] == entry["signature"]["c_ptr"] == "*fp16"
    assert "get_inputs" in entry["typed_from"]["a_ptr"]
    assert entry["ok"] and not entry["resources"]["exceeds_shared"]
    # The sizes come from shapes known only at run time: assumed, and said so.
    assert entry["assumed"] == ["M: i32", "N: i32", "K: i32"]


def test_types_recorded_at_a_launch_override_what_the_source_shows(compile_file: Any) -> None:
    unseen = INT_DOT.replace("def idot():", "def idot(a, b, c):").replace(
        '''    a = torch.randint(0, 10, (16, 16), dtype=torch.int32, device="cuda")
    b = torch.ones((16, 16), device="cuda").int()
    c = torch.empty((16, 16), dtype=torch.int32, device="cuda")
''', "")
    [guessed] = compile_file(unseen, "idot_kernel", ("sm_90",))["results"]
    assert guessed["signature"]["a_ptr"] == "*fp32" and guessed["ok"]  # fp32 dot compiles
    assert guessed["assumed"] == ["a_ptr: *fp32", "b_ptr: *fp32", "c_ptr: *fp32"]
    recorded = handle_compile({"source": unseen, "path": "k.py", "kernel": "idot_kernel", "targets": ["sm_90"],
                               "arg_types": {"a_ptr": "*i32", "b_ptr": "*i32", "c_ptr": "*i32", "BLOCK": "i32"}})
    [entry] = recorded["results"]
    assert entry["signature"]["a_ptr"] == "*i32" and entry["assumed"] == []
    assert entry["typed_from"]["a_ptr"] == "recorded at the launch in the check run"
    assert not entry["ok"] and "int32" in entry["error"]["message"]


CONSTEXPR_HELPERS = textwrap.dedent('''\
    import torch
    import triton
    import triton.language as tl


    @tl.constexpr
    def _double(x):
        return x * 2


    @triton.jit(do_not_specialize=["n"])
    def _load(p, offs, n):
        return tl.load(p + offs, mask=offs < n)


    @triton.jit
    def kern(p, q, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, _double(BLOCK) // 2)
        tl.store(q + offs, _load(p, offs, n), mask=offs < n)


    def launch(x):
        y = torch.empty_like(x)
        kern[(1,)](x, y, x.numel(), BLOCK=64)
        return y
''')


def test_a_tl_constexpr_helper_travels_with_the_kernel(compile_file: Any) -> None:
    """It used to be left out of the cut: NameError('_double is not defined')."""
    result = compile_file(CONSTEXPR_HELPERS, "kern", ("sm_90",))
    assert result["error"] is None and result["ok"], result["results"]
    assert result["extracted"]["functions"] == ["_double"] and result["extracted"]["helpers"] == ["_load"]
    [entry] = result["results"]
    # `p` is a pointer because the helper loads through it; both have unknown dtypes.
    assert entry["signature"]["p"] == "*fp32" and "p: *fp32" in entry["assumed"]


def test_compile_messages_name_the_users_file_never_the_workers_copy(compile_file: Any) -> None:
    result = compile_file(HELPER_ERROR, "scale_kernel", ("sm_90",))
    [entry] = result["results"]
    text = entry["error"]["text"]
    assert "_tritonsmith_kernel" not in text and result["extracted"]["file"] not in text
    assert "at kernels/scale_kernel.py:8:9:" in text  # `tl.arange(0, 100)`, the user's line
    broken = handle_compile({"source": HELPER_ERROR.replace("offs = tl.arange(0, BLOCK)", "offs = tl.arange(0, BLOCK"),
                             "path": "kernels/broken.py", "kernel": "scale_kernel", "targets": ["sm_90"]})
    error = broken["error"]
    assert error["type"] == "SyntaxError" and error["message"].startswith("syntax error at line 1")
    assert error["range"]["start"][0] + 1 == int(error["message"].split("line ")[1].split(":")[0])
    assert "_tritonsmith_kernel" not in error["text"] and "kernels/broken.py" in error["text"]


def test_the_frontend_alone_reports_the_same_error_at_the_same_line_without_a_binary(tmp_path: Path) -> None:
    """What the editor runs while the user types (`frontend_only`): Triton's code generator, whose
    errors are the type, shape and constexpr ones, and no backend: no resources, a fraction of a
    compile's time."""
    full = handle_compile({"source": HELPER_ERROR, "path": "kernels/h.py", "kernel": "scale_kernel",
                           "targets": ["sm_90"], "scratch": str(tmp_path / "full")})
    front = handle_compile({"source": HELPER_ERROR, "path": "kernels/h.py", "kernel": "scale_kernel",
                            "targets": ["sm_90"], "scratch": str(tmp_path / "front"), "frontend_only": True})
    [full_entry], [front_entry] = full["results"], front["results"]
    assert not full_entry["ok"] and not front_entry["ok"]
    assert front_entry["error"]["range"] == full_entry["error"]["range"]
    assert front_entry["error"]["message"] == full_entry["error"]["message"]
    good = handle_compile({"source": VECTOR_ADD, "path": "kernels/v.py", "kernel": "add_kernel",
                           "targets": ["sm_90"], "scratch": str(tmp_path / "good"), "frontend_only": True})
    assert good["ok"], good
    [entry] = good["results"]
    assert entry["ok"] and entry["frontend_only"] and entry["resources"] is None
    assert entry["seconds"] < full_entry["seconds"] or entry["seconds"] < 0.5


def test_the_compilers_temporary_files_are_not_shown_but_the_users_are() -> None:
    """A ptxas crash names its `tempfile` inputs, which change on every run and mean nothing to
    the reader; a user's file under the temporary folder keeps its name."""
    from tritonsmith.evaluator.compile import _machine_paths

    text = "ptxas fatal: /tmp/tmpab12cd34.ptx line 5; see /tmp/tmpq9z_x1ab/k.cubin, /tmp/pytest-of-u/t/user.py:3"
    assert _machine_paths(text) == ("ptxas fatal: <temporary file> line 5; see <temporary file>, "
                                    "/tmp/pytest-of-u/t/user.py:3")


STAGE_KERNELS = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def row_sum(x, out, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        total = tl.zeros((BLOCK,), tl.float32)
        for start in tl.range(0, n, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            total += tl.load(x + row * n + offsets, mask=offsets < n, other=0.0)
        tl.store(out + row, tl.sum(total, 0))


    @triton.jit
    def rows_dot(x, w, out, M, N, BLOCK_M: tl.constexpr, BLOCK: tl.constexpr):
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        acc = tl.zeros((BLOCK_M,), tl.float32)
        for start in range(0, N, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            tile = tl.load(x + rows[:, None] * N + cols[None, :], mask=(rows[:, None] < M) & (cols[None, :] < N))
            acc += tl.sum(tile * tl.load(w + cols, mask=cols < N)[None, :], axis=1)
        tl.store(out + rows, acc, mask=rows < M)


    @triton.jit
    def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            acc += tl.dot(tl.load(a + rm[:, None] * K + (k + rk)[None, :]),
                          tl.load(b + (k + rk)[:, None] * N + rn[None, :]))
        tl.store(c + rm[:, None] * N + rn[None, :], acc)
''')


@pytest.mark.parametrize("target", ["sm_86", "sm_90"])
def test_a_compile_with_nothing_staged_is_the_same_machine_code_at_every_stage_count(target: str, tmp_path: Path):
    """What lets one Config's compile stand for its siblings at other `num_stages`
    (`predicted._stage_siblings`): where `_staged` finds no buffer or asynchronous copy, the PTX
    is the same at 2, 3 and 4 stages; a GEMM's pipelined loads are staged, and differ."""
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tritonsmith.evaluator.compile import _staged

    path = tmp_path / "stage_kernels.py"
    path.write_text(STAGE_KERNELS)
    namespace: dict[str, Any] = {"__file__": str(path), "__name__": "stage_kernels"}
    exec(compile(STAGE_KERNELS, str(path), "exec"), namespace)  # noqa: S102 - the test's own kernels
    aligned = [["tt.divisibility", 16]]
    kernels = {
        "row_sum": ({"x": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 1024}, False),
        "rows_dot": ({"x": "*fp32", "w": "*fp32", "out": "*fp32", "M": "i32", "N": "i32", "BLOCK_M": "constexpr",
                      "BLOCK": "constexpr"}, {"BLOCK_M": 32, "BLOCK": 256}, False),
        "matmul": ({"a": "*fp16", "b": "*fp16", "c": "*fp32", "M": "i32", "N": "i32", "K": "i32", "BM": "constexpr",
                    "BN": "constexpr", "BK": "constexpr"}, {"BM": 64, "BN": 64, "BK": 32}, True),
    }
    for name, (signature, constexprs, expect_staged) in kernels.items():
        attrs = {(i,): aligned for i, (arg, kind) in enumerate(signature.items())
                 if kind.startswith("*") or arg in ("n", "N", "K")}
        codes, staged = set(), set()
        for stages in (2, 3, 4):
            compiled = triton.compile(ASTSource(namespace[name], signature, constexprs=constexprs, attrs=attrs),
                                      target=GPUTarget("cuda", int(target[3:]), 32),
                                      options={"num_warps": 4, "num_stages": stages})
            codes.add(compiled.asm["ptx"])
            staged.add(_staged(compiled.asm))
        assert staged == {expect_staged}, name
        assert (len(codes) == 1) == (not expect_staged), name
