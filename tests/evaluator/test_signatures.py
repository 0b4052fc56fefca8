"""Honest compile signatures and messages that point at the user's file, without compiling:
argument types read from the launch site, `get_inputs()` and harness inputs; jit and
`@tl.constexpr` helpers cut out with their decorators; which compile findings stop the check
against the reference; worker tracebacks named by the user's files; interpreter limitations."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from tritonsmith.analysis import Document, index_module
from tritonsmith.analysis.argtypes import LaunchTyper
from tritonsmith.evaluator.extract import extract_kernel_module
from tritonsmith.evaluator.protocol import Result
from tritonsmith.evaluator.reports import (
    KernelReport,
    _assumed,
    _findings,
    correctness_blockers,
    interpreter_failure,
    lens_details,
    lens_title,
    recorded_launch_types,
    settle_reports,
    skipped_verdicts,
)
from tritonsmith.evaluator.specs import detect_specs
from tritonsmith.evaluator.verify import Verdict, _failure, verify_spec
from tritonsmith.rules import Severity, Span


def launch_types(source: str, kernel: str) -> dict[str, tuple[str, str]]:
    document = Document(source)
    index = index_module(document.root)
    found = index.kernel(kernel)
    assert found is not None and found.launches
    typer = LaunchTyper(document, index)
    names = [p.name for p in found.params if not p.is_constexpr]
    positions = {p.name: p.index for p in found.params}
    return {n: (t.type, t.source) for n, t in typer.launch_types(found.launches[0], names, positions).items()}


KERNEL = '''
@triton.jit
def k(a_ptr, b_ptr, c_ptr, d_ptr, e_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, tl.load(a_ptr + offs) + tl.load(b_ptr + offs))
'''


def test_dtypes_come_from_allocations_and_casts_at_the_launch_site() -> None:
    source = "import torch\nimport triton\nimport triton.language as tl\n" + KERNEL + textwrap.dedent('''
        def launch(x, n):
            a = torch.empty((n, 4), dtype=torch.int32, device="cuda")
            b = torch.randn(n, device="cuda").half()
            c = x.to(torch.float16)
            d = torch.zeros(n, device="cuda").int()
            e = torch.empty_like(a)
            k[(1,)](a, b, c, d, e, 16, 0.5, BLOCK=16)
        ''')
    types = launch_types(source, "k")
    assert types["a_ptr"][0] == "*i32" and "torch.empty((n, 4), dtype=torch.int32" in types["a_ptr"][1]
    assert types["b_ptr"][0] == "*fp16" and types["c_ptr"][0] == "*fp16"
    assert types["d_ptr"][0] == "*i32" and types["e_ptr"][0] == "*i32"
    assert types["n"][0] == "i32" and types["scale"][0] == "fp32"


def test_dtypes_follow_forward_to_get_inputs_and_self_to_its_buffers() -> None:
    source = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n" + KERNEL + \
        textwrap.dedent('''
        def launch(a, b, packed, n):
            c = torch.empty_like(a)
            k[(1,)](a, b, c, packed, c, n, 1.0, BLOCK=16)
            return c


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("packed", torch.randint(0, 15, (64,), dtype=torch.int32))

            def forward(self, a, b):
                return launch(a, b, self.packed, a.numel())


        def get_inputs():
            return [torch.randn(64, dtype=torch.float16), torch.randn(64).bfloat16()]
        ''')
    types = launch_types(source, "k")
    assert types["a_ptr"] == ("*fp16", "`torch.randn(64, dtype=torch.float16)` at line 27 (through get_inputs)")
    assert types["b_ptr"][0] == "*bf16" and types["c_ptr"][0] == "*fp16"
    assert types["d_ptr"][0] == "*i32"  # the int32 `packed` buffer
    assert "n" not in types  # a size known only at run time: the compile assumes i32 and says so


def test_harness_inputs_type_the_launchers_parameters() -> None:
    source = "import torch\nimport triton\nimport triton.language as tl\n" + KERNEL + textwrap.dedent('''
        def k_launch(a, b):
            out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
            k[(1,)](a, b, out, out, out, a.numel(), 2.0, BLOCK=16)
            return out


        def k_launch_inputs():
            return (torch.randint(0, 9, (16,), dtype=torch.int8, device="cuda"), torch.rand(16, device="cuda"))
        ''')
    types = launch_types(source, "k")
    assert types["a_ptr"][0] == "*i8" and types["b_ptr"][0] == "*fp32" and types["c_ptr"][0] == "*i8"


def test_constexpr_and_jit_helpers_are_cut_out_with_their_decorators() -> None:
    source = textwrap.dedent('''\
        import torch
        import triton
        import triton.language as tl


        @tl.constexpr
        def _double(x):
            return x * 2


        @triton.constexpr_function
        def _half(x):
            return x // 2


        @triton.jit(do_not_specialize=["n"])
        def _load(p, offs, n):
            return tl.load(p + offs, mask=offs < n)


        def _host_only():
            return torch.cuda.get_device_properties(0)


        @triton.jit
        def kern(p, q, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, _double(BLOCK) // 2)
            tl.store(q + offs, _load(p, offs, n) + _half(4), mask=offs < n)
        ''')
    extracted = extract_kernel_module(source, "kern")
    out = extracted.text
    assert "@tl.constexpr\ndef _double(x):" in out and "@triton.constexpr_function\ndef _half(x):" in out
    assert '@triton.jit(do_not_specialize=["n"])\ndef _load(' in out
    assert "_host_only" not in out and "torch" not in out
    assert sorted(extracted.functions) == ["_double", "_half"] and extracted.unresolved == []
    compile(out, "<extracted>", "exec")
    original = source.splitlines()
    for number, line in enumerate(out.splitlines(), start=1):
        mapped = extracted.to_original(number)
        assert (original[mapped[0] - 1] == line) if mapped is not None else line in ("", "import triton")


def _entry(config: str, index: int | None, *, ok: bool = True, error: dict[str, Any] | None = None,
           shared: int = 1024, spills: int = 0, assumed: list[str] | None = None) -> dict[str, Any]:
    exceeds = shared > 232448
    return {
        "target": "sm_90", "config": config, "config_index": index, "origin": None, "ok": ok and error is None,
        "error": error, "assumed": assumed or [], "signature": {}, "typed_from": {},
        "launch_error": f"{config} needs {shared} bytes of shared memory; sm_90 allows 232448 per block, so "
                        "the launch would fail (OutOfResources)" if exceeds and error is None else None,
        "resources": None if error else {"registers": 40, "spills": spills, "shared": shared, "shared_limit": 232448,
                                         "exceeds_shared": exceeds, "blocks_per_sm": 0 if exceeds else 2},
    }


def _report(entries: list[dict[str, Any]]) -> KernelReport:
    document = Document("import triton\n\n@triton.jit\ndef k(x_ptr):\n    pass\n")
    span = Span((3, 4), (3, 5), document.offset(3, 4), document.offset(3, 5))
    findings = _findings(document, "k", {"results": entries}, span)
    ok = not any(f.severity is Severity.ERROR for f in findings)
    return KernelReport(kernel="k", ok=ok, results=entries, findings=findings, assumed=_assumed(entries))


def test_spills_and_a_config_the_autotuner_prunes_do_not_block_the_check() -> None:
    spilling = _report([_entry("launch at line 9", 0, spills=952)])
    assert spilling.ok and [f.severity for f in spilling.findings] == [Severity.WARNING]
    pruned = _report([_entry("Config #1", 0), _entry("Config #2", 1, shared=262144)])
    assert pruned.ok and [f.code for f in pruned.findings] == ["shared-memory-exceeded"]
    assert pruned.findings[0].severity is Severity.WARNING and "autotuner skips it" in pruned.findings[0].message
    ptxas = _report([_entry("Config #1", 0), _entry("Config #2", 1, error={
        "type": "PTXASError", "chain_types": ["PTXASError"], "message": "ptxas fatal", "rules": []})])
    assert ptxas.ok
    assert correctness_blockers([spilling, pruned, ptxas]) == []
    # Every Config too big, or a launch site that cannot launch: the check does not run, and says why.
    alone = _report([_entry("Config #1", 0, shared=262144)])
    failing = _report([_entry("launch at line 9", 0, error={
        "type": "CompilationError", "chain_types": ["CompilationError", "AssertionError"],
        "message": "Unsupported lhs dtype int32", "rules": []})])
    assert not alone.ok and not failing.ok
    blockers = correctness_blockers([alone, failing])
    assert len(blockers) == 2 and "Unsupported lhs dtype int32" in blockers[1]
    [verdict] = skipped_verdicts([type("S", (), {"name": "ModelNew", "row": 3})()], blockers, "interpreter")
    assert verdict.stage == "compile" and verdict.to_json()["message"].startswith("NOT VERIFIED")
    assert "Unsupported lhs dtype int32" in verdict.message


def test_an_error_under_assumed_pointer_types_waits_for_the_recorded_ones() -> None:
    guessed = _report([_entry("Config #1", 0, shared=262144, assumed=["a_ptr: *fp32", "M: i32"])])
    assert not guessed.ok and "compiled assuming a_ptr: *fp32" in guessed.findings[0].message
    assert correctness_blockers([guessed], has_spec=True) == []  # the check records the real types
    assert correctness_blockers([guessed], has_spec=False)  # no spec: nothing better to go on
    assert lens_title(guessed).endswith("· types assumed")
    assert "assuming a_ptr: *fp32, M: i32" in lens_details(guessed)
    assert guessed.status() == "FAILED (compiled assuming a_ptr: *fp32, M: i32)"


def test_types_recorded_at_the_launch_confirm_or_replace_the_assumed_ones() -> None:
    entry = _entry("launch at line 9", 0, assumed=["x_ptr: *fp32", "n: i32"])
    entry["signature"] = {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    entry["typed_from"] = {"x_ptr": "assumed", "n": "assumed"}
    report = _report([entry])
    assert report.status() == "compiled, assuming x_ptr: *fp32, n: i32"
    verdict = Verdict(ok=True, mode="interpreter", trials=3)
    verdict.details["main.candidate"] = {"launch_types": {"k": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "i32"}}}
    assert recorded_launch_types([verdict]) == {"k": {"x_ptr": "*fp32", "n": "i32", "BLOCK": "i32"}}
    [settled] = settle_reports([report], [verdict], source="", path="k.py", targets=["sm_90"])
    assert settled.status() == "compiled" and settled.results[0]["assumed"] == []
    assert settled.results[0]["typed_from"]["x_ptr"] == "recorded at the launch in the check run"

    class Pool:  # a pool that must not be used: equal types need no new compile
        size = 1

        def run(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("compiled again")

    settle_reports([report], [verdict], source="", path="k.py", targets=["sm_90"], pool=Pool())  # type: ignore[arg-type]


def test_a_workers_traceback_names_the_users_file_and_line(tmp_path: Path) -> None:
    work = tmp_path / "tritonsmith-verify-abc"
    copy = work / "main" / "candidate" / "relu.py"
    text = textwrap.dedent(f'''\
        Traceback (most recent call last):
          File "/venv/lib/python3.11/site-packages/tritonsmith/evaluator/correctness.py", line 300, in handle_candidate
            outputs = run(model, pristine)
          File "{copy}", line 22, in forward
            return relu(x)
          File "{copy}", line 15, in relu
            assert x.is_contiguous(), "needs a contiguous tensor"
        AssertionError: needs a contiguous tensor
        ''')
    result = Result(ok=False, kind="verify_candidate", error="AssertionError: needs a contiguous tensor",
                    payload={"traceback": text})
    message = _failure(result, work, {"candidate": "/home/me/relu.py", "reference": "/home/me/relu.py"})
    assert message == "AssertionError: needs a contiguous tensor (at /home/me/relu.py:15, in relu)"
    assert str(work) not in message


def test_an_error_raised_inside_tritons_interpreter_is_told_apart() -> None:
    text = textwrap.dedent('''\
        Traceback (most recent call last):
          File "/venv/lib/python3.11/site-packages/triton/runtime/interpreter.py", line 1511, in __call__
            self.fn(**args)
          File "/tmp/tritonsmith-verify-x/main/candidate/rows.py", line 15, in rowscale_kernel
            v = tl.load(x_ptr + row * N + offs, mask=mask, other=0.0)
          File "/venv/lib/python3.11/site-packages/triton/language/semantic.py", line 1097, in load
            self.builder.create_masked_load(ptr.handle, mask.handle)
          File "/venv/lib/python3.11/site-packages/triton/runtime/interpreter.py", line 550, in create_masked_load
            ret = _interpreter.load(ptrs.data, mask.data, other.data, dtype_np)
        ValueError: mask has unsupported dtype

        The above exception was the direct cause of the following exception:

        Traceback (most recent call last):
          File "/tmp/tritonsmith-verify-x/main/candidate/rows.py", line 22, in rowscale
            rowscale_kernel[(B,)](x, y, B, N, BLOCK=8)
          File "/venv/lib/python3.11/site-packages/triton/runtime/interpreter.py", line 1515, in __call__
            raise InterpreterError(repr(e)) from e
        triton.runtime.errors.InterpreterError: ValueError('mask has unsupported dtype')
        ''')
    found = interpreter_failure(text, {"rowscale_kernel"})
    assert found == ("rowscale_kernel", "ValueError: mask has unsupported dtype",
                     "/tmp/tritonsmith-verify-x/main/candidate/rows.py", 15)
    # The user's own `raise` inside the kernel is the kernel's failure, not the interpreter's.
    lines = text.splitlines(keepends=True)
    own = "".join(lines[:5] + lines[9:])  # without the two frames inside Triton
    assert interpreter_failure(own, {"rowscale_kernel"}) is None


def test_a_syntax_error_in_the_module_is_reported_as_one_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text(textwrap.dedent('''\
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def k(x_ptr, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


        def k_launch(x):
            k[(1,)](x, BLOCK=16)
            return x


        def k_launch_inputs():
            return [torch.zeros(16, device="cuda")]


        def k_launch_reference(x):
            return torch.ones_like(x) +
        '''))
    [spec] = detect_specs(path, path.read_text())
    verdict = verify_spec(spec, mode="interpreter")  # no worker starts: the file does not parse
    assert verdict.stage == "syntax"
    assert verdict.message == f"syntax error at {path}:21:32: invalid syntax"
    assert "reference failed" not in verdict.summary()


def test_the_launch_guard_records_each_kernels_argument_types_at_its_first_launch() -> None:
    import torch

    from tritonsmith.evaluator.guards import LaunchGuard

    class Fn:  # what JITFunction.run receives as `fn`: its parameter names
        arg_names = ["x_ptr", "packed", "n", "big", "eps", "flag", "bias", "BLOCK"]

    guard = LaunchGuard()
    x = torch.zeros(4, dtype=torch.float16)
    packed = torch.zeros(4, dtype=torch.int32)
    guard.record_types("k", Fn(), (x, packed, 7, 2**40, 1e-5, True, None), {"BLOCK": 64, "grid": (1,)})
    assert guard.arg_types["k"] == {"x_ptr": "*fp16", "packed": "*i32", "n": "i32", "big": "i64", "eps": "fp32",
                                    "flag": "i1", "bias": "constexpr", "BLOCK": "i32"}
    guard.record_types("k", Fn(), (packed,), {})  # the first launch wins
    assert guard.arg_types["k"]["x_ptr"] == "*fp16"


def test_integer_widths_recorded_at_scaled_sizes_are_not_taken_for_the_sizes_as_written() -> None:
    verdict = Verdict(ok=True, mode="interpreter", trials=3, sizes={"N": (1 << 33, 4096)})
    verdict.details["main.candidate"] = {"launch_types": {"k": {"x_ptr": "*fp16", "n": "i32", "eps": "fp32"}}}
    assert recorded_launch_types([verdict]) == {"k": {"x_ptr": "*fp16", "eps": "fp32"}}


def test_a_compile_that_ran_out_of_time_does_not_stop_the_check_but_a_crash_does():
    """Eight 256×512 Configs of an elementwise kernel (a public KernelBench level-2 solution) take
    longer than the compile job's 300 s on two cores: that says nothing against the kernel."""
    slow = KernelReport(kernel="k", ok=False, error="compile job ran past its 300 s timeout; worker killed",
                        error_type="job")
    crashed = KernelReport(kernel="k", ok=False, error="the worker died (signal 11)", error_type="job")
    assert correctness_blockers([slow]) == []
    assert correctness_blockers([slow], has_spec=False) == ["k could not be compiled: compile job ran past its 300 s "
                                                            "timeout; worker killed"]
    assert correctness_blockers([crashed]) == ["k could not be compiled: the worker died (signal 11)"]


def test_a_kernel_lens_is_one_short_line_with_the_details_on_hover() -> None:
    """Issue 34: lenses ran off a 1400-pixel screen and "compile failed" had no reason. The
    title is short (the reason cut at `LENS_REASON`), the tooltip has the configs, the whole
    error and the assumptions; resources at the sizes as written (from the predicted time's
    profile) come before the check run's scaled ones, which are only a note."""
    from tritonsmith.evaluator.reports import LENS_REASON, PredictedLine, failure_reason

    checked = _entry("launch at line 9 (BLOCK=128 as launched in the check run)", 0)
    report = _report([checked, _entry("Config #2", 1)])
    as_written = {"target": "sm_90", "constexprs": {"BLOCK": 1024},
                  "resources": {"registers": 64, "spills": 0, "shared": 4096, "blocks_per_sm": 4}}
    predicted = PredictedLine("RTX A6000", "14.4 µs")
    title = lens_title(report, predicted, as_written)
    assert title == "compiled · sm_90 · 64 regs, 0 spills, 4 KB smem, 4 blocks/SM · 14.4 µs predicted on RTX A6000"
    details = lens_details(report, predicted, as_written)
    assert "predicted RTX A6000 time 14.4 µs" in details
    assert "at the sizes as written (BLOCK=1024): sm_90 · 64 regs" in details
    assert "(the check run's sizes, scaled down under the interpreter)" in details
    assert lens_title(report) == "compiled · sm_90 · 40 regs, 0 spills, 1 KB smem, 2 blocks/SM (+1 configs)"
    message = "num_warps must be a power of 2, and this message goes on well past what fits on one line of an editor"
    structured = {"type": "CompilationError", "message": message}
    failed = KernelReport(kernel="k", ok=False, results=[
        {**_entry("Config #1", 0), "ok": False, "resources": None, "error": structured}])
    short = lens_title(failed)
    assert short.startswith("compile failed: num_warps must be a power of 2") and short.endswith("…")
    assert len(short) <= len("compile failed: ") + LENS_REASON and "Config #1" not in short
    assert message in lens_details(failed) == f"compile failed: {failure_reason(failed)}"
    assert lens_title(report, stale=True).startswith("edited since · compiled")
