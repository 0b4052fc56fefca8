"""Graduation from the failing construct (adapt/construct.py), end to end through the CLI: three
failures in three kernels, `adapt induce`, `adapt graduate`, then `check` flags a fourth kernel
with the same mistake and not its near miss, under a statement without a regex.

On Triton 3.9 the builtin rules TS705 and TS114 already explain these two mistakes, so a real
compile labels them and induction leaves them alone; the failures are recorded here as the
evaluator records them (file, error position, message) with no builtin code, as they would be
with a Triton whose rules the builtin pack lacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tritonsmith.cli import main
from tritonsmith.rules import Severity
from tritonsmith.settings import Settings
from tritonsmith.state import FailureLog, kernel_hash
from tritonsmith.version import installed_triton_version
from tritonsmith.workspace import Workspace

BITCAST = '''import torch
import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    {value} = tl.load(x_ptr + offs, mask=mask, other=0.0)
    bits = {value}.to(tl.{target}, bitcast=True)
    tl.store(out_ptr + offs, bits, mask=mask)


def run(x):
    out = torch.empty(x.numel(), dtype=torch.{target}, device=x.device)
    {name}[(triton.cdiv(x.numel(), 128),)](x.to(torch.{source}), out, x.numel(), BLOCK=128)
    return out
'''
BITCAST_MESSAGE = "ValueError: Cannot bitcast data-type of size 32 to data-type of size 16"

CUMSUM = '''import torch
import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    {value} = tl.load(x_ptr + offs)
    running = tl.cumsum({value}, axis={axis})
    tl.store(out_ptr + offs, running)


def run(x):
    out = torch.empty_like(x)
    {name}[(1,)](x, out, BLOCK=128)
    return out
'''
CUMSUM_MESSAGE = "ValueError: invalid axis 1. Expected -1 <= axis < 1"


def record(root: Path, sources: list[str], marker: str, message: str) -> None:
    """Each source's failure at the start of the call on the line holding `marker`, as the
    evaluator records a compile error."""
    log = FailureLog(root)
    for i, source in enumerate(sources):
        row = next(r for r, line in enumerate(source.splitlines()) if marker in line)
        line = source.splitlines()[row]
        column = line.index("=") + 2  # the call starts after `name = `
        log.record(path=f"k{i}.py", kernel=f"kernel_{i}", stage="compile", message=message, rules=[],
                   snippet=line, kernel_hash=kernel_hash(source), triton_version="3.9.0",
                   source=source, error_at=(row, column))
    log.close()


def learned_rule(root: Path, capsys) -> dict:
    assert main(["adapt", "induce", str(root), "--format", "json"]) == 0
    [rule] = json.loads(capsys.readouterr().out)
    assert rule["status"] == "active"
    return rule


def codes(root: Path, source: str, code: str) -> list[Severity]:
    found = Workspace(root, Settings(), include_user_packs=False).check_source(source)
    return [f.severity for f in found if f.code == code]


@pytest.mark.skipif(installed_triton_version() is None, reason="near misses are compiled to tell them apart")
def test_a_width_changing_bitcast_graduates_and_its_same_width_near_miss_is_not_flagged(tmp_path: Path, capsys):
    failing = [BITCAST.format(name=f"pack_{i}", value=value, source="float32", target="int16")
               for i, value in enumerate(("vals", "x", "loaded"))]
    record(tmp_path, failing, ".to(tl.int16", BITCAST_MESSAGE)
    induced = learned_rule(tmp_path, capsys)
    code = induced["code"]
    # Induction already names the construct (the failures were recorded with their positions).
    assert induced["statement"].startswith("You cannot write `.to(tl.int16, bitcast=True)` on fp32 1-D blocks: ")
    assert "fails to compile with" not in induced["statement"]
    assert main(["adapt", "graduate", code, str(tmp_path), "--format", "json"]) == 0
    graduated = json.loads(capsys.readouterr().out)
    assert graduated["origin"] == "typed"
    assert '#ts-bitwidth? @o0 "32"' in graduated["query"] and '#ts-bitwidth? @o1 "16"' in graduated["query"]
    # The near miss bitcasting to int32 compiled, so it is known-good code the matcher is silent on.
    fourth = BITCAST.format(name="halve", value="h", source="float32", target="float16")  # fp32 -> fp16: 32 -> 16
    assert codes(tmp_path, fourth, code) == [Severity.INFORMATION]
    assert codes(tmp_path, BITCAST.format(name="same", value="h", source="float32", target="int32"), code) == []
    assert codes(tmp_path, BITCAST.format(name="half", value="h", source="float16", target="int16"), code) == []
    assert main(["rules", "review", str(tmp_path), "--all", "--format", "json"]) == 0
    [rule] = json.loads(capsys.readouterr().out)
    statement = rule["statement"]
    assert statement.startswith("You cannot write `.to(tl.int16, bitcast=True)` on fp32 1-D blocks: ")
    assert not any(ch in statement for ch in "\\^$[]") and "pack_" not in statement and "vals" not in statement


def test_cumsum_over_an_axis_the_block_lacks_graduates_without_flagging_axis_0(tmp_path: Path, capsys):
    failing = [CUMSUM.format(name=f"scan_{i}", value=value, axis=1) for i, value in enumerate(("v", "row", "x"))]
    record(tmp_path, failing, "tl.cumsum", CUMSUM_MESSAGE)
    code = learned_rule(tmp_path, capsys)["code"]
    assert main(["adapt", "graduate", code, str(tmp_path), "--no-compile", "--format", "json"]) == 0
    graduated = json.loads(capsys.readouterr().out)
    assert graduated["origin"] == "typed" and '"1"' in graduated["query"] and "ts-rank?" in graduated["query"]
    assert codes(tmp_path, CUMSUM.format(name="prefix", value="w", axis=1), code) == [Severity.INFORMATION]
    assert codes(tmp_path, CUMSUM.format(name="prefix", value="w", axis=0), code) == []  # the near miss compiles
    two_d = CUMSUM.format(name="tile", value="w", axis=1).replace(
        "tl.load(x_ptr + offs)", "tl.load(x_ptr + offs[:, None] + offs[None, :])").replace(
        "tl.store(out_ptr + offs, running)", "tl.store(out_ptr + offs[:, None] + offs[None, :], running)")
    assert codes(tmp_path, two_d, code) == []  # axis=1 of a 2-D block is fine
    # Review shows where accepting the rule would flag the workspace now.
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "scan.py").write_text(CUMSUM.format(name="prefix", value="w", axis=1))
    (tmp_path / "kernels" / "fine.py").write_text(CUMSUM.format(name="prefix", value="w", axis=0))
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "vendored.py").write_text(CUMSUM.format(name="prefix", value="w", axis=1))
    capsys.readouterr()
    assert main(["rules", "review", str(tmp_path), "--all", "--format", "json"]) == 0
    [rule] = json.loads(capsys.readouterr().out)
    line = CUMSUM.format(name="prefix", value="w", axis=1).splitlines().index(
        next(t for t in CUMSUM.format(name="prefix", value="w", axis=1).splitlines() if "tl.cumsum" in t)) + 1
    assert rule["hits"] == [f"kernels/scan.py:{line}"] and rule["contradictions"] == []
    assert rule["provenance"] == "learned offline from the failure log: 3 failures in 3 kernels"
    assert main(["rules", "review", str(tmp_path), "--all"]) == 0
    assert f"flags 1 place in this workspace now: kernels/scan.py:{line}" in capsys.readouterr().out


def test_failures_in_one_kernel_do_not_graduate_a_typed_matcher(tmp_path: Path, capsys):
    failing = [CUMSUM.format(name="scan", value=value, axis=1) for value in ("v", "row", "x")]
    log = FailureLog(tmp_path)
    for source in failing:
        row = next(r for r, line in enumerate(source.splitlines()) if "tl.cumsum" in line)
        line = source.splitlines()[row]
        log.record(path="k.py", kernel="scan", stage="compile", message=CUMSUM_MESSAGE, rules=[], snippet=line,
                   kernel_hash=kernel_hash(source), source=source, error_at=(row, line.index("=") + 2))
    log.close()
    assert main(["adapt", "induce", str(tmp_path), "--min-kernels", "1", "--format", "json"]) == 0
    [rule] = json.loads(capsys.readouterr().out)
    main(["adapt", "graduate", rule["code"], str(tmp_path), "--no-compile", "--format", "json"])
    graduated = json.loads(capsys.readouterr().out)
    typed = [t for t in graduated["tried"] if t["origin"] == "typed"]
    assert typed and "a matcher needs two" in typed[0]["reason"]


def test_a_flagged_kernel_that_compiles_demotes_the_rule_and_a_second_retracts_its_matcher(tmp_path: Path, capsys):
    from tritonsmith.state.contradictions import record_compiled

    failing = [CUMSUM.format(name=f"scan_{i}", value=value, axis=1) for i, value in enumerate(("v", "row", "x"))]
    record(tmp_path, failing, "tl.cumsum", CUMSUM_MESSAGE)
    code = learned_rule(tmp_path, capsys)["code"]
    assert main(["adapt", "graduate", code, str(tmp_path), "--no-compile", "--format", "json"]) == 0
    capsys.readouterr()
    for _ in range(2):
        assert main(["rules", "review", str(tmp_path), "--accept", code]) == 0
    flagged = CUMSUM.format(name="prefix", value="w", axis=1)
    assert codes(tmp_path, flagged, code) == [Severity.ERROR]
    # Say the compiler accepted it (a newer Triton): the rule was wrong about this kernel.
    assert record_compiled(tmp_path, flagged, "a.py") == [code]
    assert codes(tmp_path, flagged, code) == [Severity.WARNING]
    assert record_compiled(tmp_path, flagged, "a.py") == [code]  # the same file counts once
    assert codes(tmp_path, flagged, code) == [Severity.WARNING]
    assert record_compiled(tmp_path, flagged, "b.py") == [code]
    assert codes(tmp_path, flagged, code) == []  # the matcher is retracted
    capsys.readouterr()
    assert main(["rules", "review", str(tmp_path), "--all", "--format", "json"]) == 0
    [rule] = json.loads(capsys.readouterr().out)
    assert rule["query"] is None and "matcher retracted: 2 kernels" in rule["hold"]
    assert [c.split(":")[0] for c in rule["contradictions"]] == ["a.py", "b.py"] and rule["hits"] == []
    assert record_compiled(tmp_path, flagged, "c.py") == []


UNARY = '''import torch
import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    {value} = tl.load(x_ptr + offs)
    y = tl.{fn}({value})
    tl.store(out_ptr + offs, y.to(tl.float32))


def run():
    x = torch.empty(128, dtype=torch.{dtype}, device="cuda")
    out = torch.empty(128, dtype=torch.float32, device="cuda")
    {name}[(1,)](x, out, BLOCK=128)
'''


def graduated_query(root: Path, code: str, capsys) -> str:
    assert main(["adapt", "graduate", code, str(root), "--no-compile", "--format", "json"]) == 0
    graduated = json.loads(capsys.readouterr().out)
    assert graduated["origin"] == "typed", graduated["tried"]
    return str(graduated["query"])


def statement(root: Path, capsys) -> str:
    assert main(["rules", "review", str(root), "--all", "--format", "json"]) == 0
    [rule] = json.loads(capsys.readouterr().out)
    return str(rule["statement"])


def test_different_functions_that_fail_alike_graduate_as_one_matcher(tmp_path: Path, capsys):
    # Each function is seen once; the constraint (an int32 block) is seen in three kernels.
    failing = [UNARY.format(name=f"k_{fn}", value=value, fn=fn, dtype="int32")
               for fn, value in (("exp", "c"), ("log", "ids"), ("sqrt", "h"))]
    record(tmp_path, failing, "y = tl.", "ValueError: Expected dtype ['fp32', 'fp64'] but got int32")
    code = learned_rule(tmp_path, capsys)["code"]
    query = graduated_query(tmp_path, code, capsys)
    assert '"triton.language.exp" "triton.language.log" "triton.language.sqrt"' in query
    assert codes(tmp_path, UNARY.format(name="logs", value="v", fn="log", dtype="int32"), code) == [Severity.INFORMATION]
    assert codes(tmp_path, UNARY.format(name="exps", value="v", fn="exp", dtype="float32"), code) == []
    assert codes(tmp_path, UNARY.format(name="abss", value="v", fn="abs", dtype="int32"), code) == []
    said = statement(tmp_path, capsys)
    assert said.startswith("You cannot write `tl.exp(...)`, `tl.log(...)` or `tl.sqrt(...)` on i32 1-D blocks: ")
    assert "but got int32" in said and "<dtype>" not in said


ATOMIC = '''import torch
import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=0.0)
    old = tl.atomic_{op}(out_ptr + offs, v, mask=mask)


def run():
    x = torch.empty(4096, dtype=torch.{dtype}, device="cuda")
    out = torch.empty(4096, dtype=torch.{dtype}, device="cuda")
    {name}[(32,)](x, out, 4096, BLOCK=128)
'''


def test_one_mistake_that_triton_words_per_operation_and_type_is_one_rule(tmp_path: Path, capsys):
    log = FailureLog(tmp_path)
    for i, (op, dtype, short) in enumerate((("max", "float16", "fp16"), ("min", "float16", "fp16"),
                                            ("max", "bfloat16", "bf16"))):
        source = ATOMIC.format(name=f"acc_{i}", op=op, dtype=dtype)
        row = next(r for r, line in enumerate(source.splitlines()) if "tl.atomic_" in line)
        line = source.splitlines()[row]
        log.record(path=f"k{i}.py", kernel=f"acc_{i}", stage="compile", rules=[], snippet=line,
                   message=f"at {row + 1}:10:\n{line}\n          ^\nValueError('atomic_{op} does not support {short}')",
                   kernel_hash=kernel_hash(source), source=source, error_at=(row, line.index("tl.")))
    log.close()
    code = learned_rule(tmp_path, capsys)["code"]  # one rule, not one per operation and type
    query = graduated_query(tmp_path, code, capsys)
    assert '"triton.language.atomic_max" "triton.language.atomic_min"' in query
    assert codes(tmp_path, ATOMIC.format(name="lo", op="min", dtype="bfloat16"), code) == [Severity.INFORMATION]
    assert codes(tmp_path, ATOMIC.format(name="hi", op="max", dtype="float32"), code) == []
    assert codes(tmp_path, ATOMIC.format(name="sum", op="add", dtype="float16"), code) == []  # never seen failing
    said = statement(tmp_path, capsys)
    assert "does not support" in said and "<op>" not in said and "acc_" not in said


ARANGE = '''import torch
import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, {size})
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x * 2)


def run():
    x = torch.empty(4096, dtype=torch.float32, device="cuda")
    out = torch.empty(4096, dtype=torch.float32, device="cuda")
    {name}[(1,)](x, out, BLOCK={block})
'''


def test_a_size_that_is_not_a_power_of_two_is_what_the_matcher_learns(tmp_path: Path, capsys):
    failing = [ARANGE.format(name=f"scale_{size}", size=size, block=128) for size in (100, 96, 48)]
    record(tmp_path, failing, "offs = tl.arange", "ValueError: arange's range must be a power of 2")
    code = learned_rule(tmp_path, capsys)["code"]
    # `tl.arange(0, ...)` alone fires on correct code, so the sizes narrow it.
    assert '(#ts-int? @o1 "!pow2")' in graduated_query(tmp_path, code, capsys)
    assert codes(tmp_path, ARANGE.format(name="s", size=80, block=128), code) == [Severity.INFORMATION]
    assert codes(tmp_path, ARANGE.format(name="s", size="BLOCK", block=100), code) == [Severity.INFORMATION]
    assert codes(tmp_path, ARANGE.format(name="s", size="BLOCK", block=128), code) == []
    assert codes(tmp_path, ARANGE.format(name="s", size=64, block=128), code) == []
    assert "power of 2" in statement(tmp_path, capsys)


DOT = '''import torch
import triton
import triton.language as tl


@triton.jit
def {name}(a_ptr, b_ptr, c_ptr):
    rm = tl.arange(0, 32)
    rk = tl.arange(0, {k})
    a = tl.load(a_ptr + rm[:, None] * {k} + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * 32 + rm[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * 32 + rm[None, :], c)


def run():
    a = torch.empty(4096, dtype=torch.float16, device="cuda")
    b = torch.empty(4096, dtype=torch.float16, device="cuda")
    c = torch.empty(4096, dtype=torch.float32, device="cuda")
    {name}[(1,)](a, b, c)
'''


def test_a_block_size_below_what_the_dot_needs_is_what_the_matcher_learns(tmp_path: Path, capsys):
    failing = [DOT.format(name=f"mm_{i}", k=k) for i, k in enumerate((8, 4, 8))]
    record(tmp_path, failing, "c = tl.dot", "AssertionError: Input shapes should have M >= 1, N >= 1 and K >= 16")
    code = learned_rule(tmp_path, capsys)["code"]
    query = graduated_query(tmp_path, code, capsys)
    assert '(#ts-shape? @o0 "<=32" "<=8")' in query  # fp16 2-D blocks alone would flag correct dots
    assert codes(tmp_path, DOT.format(name="tiny", k=8), code) == [Severity.INFORMATION]
    assert codes(tmp_path, DOT.format(name="fine", k=16), code) == []
    said = statement(tmp_path, capsys)
    assert said.startswith("You cannot write `tl.dot(..., ...)` on fp16 2-D blocks: ") and "K >= 16" in said


def test_near_misses_move_sizes_inside_a_shape_to_neighbouring_powers_of_two():
    from tritonsmith.adapt.construct import describe, near_misses

    source = ARANGE.format(name="view", size=64, block=64).replace(
        "x = tl.load(x_ptr + offs)", "x = tl.reshape(tl.load(x_ptr + offs), (8, 16))")
    row = next(r for r, line in enumerate(source.splitlines()) if "tl.reshape" in line)
    column = source.splitlines()[row].index("tl.reshape")
    construct = describe(source, row, column)
    assert construct is not None and construct.function == "triton.language.reshape"
    shapes = {line.strip() for variant in near_misses(source, row, column, construct)
              for line in variant.splitlines() if "tl.reshape" in line}
    # (8, 8) and (4, 16) keep 64 elements: the compiler will accept them, and they become contrast.
    assert "x = tl.reshape(tl.load(x_ptr + offs), (8, 8))" in shapes
    assert "x = tl.reshape(tl.load(x_ptr + offs), (4, 16))" in shapes


@pytest.mark.skipif(installed_triton_version() is None, reason="sibling functions are compiled in the failing call's place")
def test_the_compiler_says_which_sibling_functions_fail_the_same_way(tmp_path: Path, capsys):
    log = FailureLog(tmp_path)
    for i, op in enumerate(("max", "min", "max")):
        source = ATOMIC.format(name=f"acc_{i}", op=op, dtype="float16")
        row = next(r for r, line in enumerate(source.splitlines()) if "tl.atomic_" in line)
        line = source.splitlines()[row]
        log.record(path=f"k{i}.py", kernel=f"acc_{i}", stage="compile", rules=[], snippet=line,
                   message=f"ValueError: atomic_{op} does not support fp16", kernel_hash=kernel_hash(source),
                   source=source, error_at=(row, line.index("tl.")))
    log.close()
    code = learned_rule(tmp_path, capsys)["code"]
    assert main(["adapt", "graduate", code, str(tmp_path), "--format", "json"]) == 0
    query = json.loads(capsys.readouterr().out)["query"]
    # atomic_xchg was never seen failing, but fails the same way in the failing call's place;
    # atomic_add of fp16 compiles, so it is not named and its variant is known-good code.
    assert '"triton.language.atomic_xchg"' in query and "atomic_add" not in query
    assert codes(tmp_path, ATOMIC.format(name="swap", op="xchg", dtype="float16"), code) == [Severity.INFORMATION]
    assert codes(tmp_path, ATOMIC.format(name="total", op="add", dtype="float16"), code) == []
    said = statement(tmp_path, capsys)
    assert "atomic_xchg" in said and "atomic_add" not in said


# -- issue 37: MLIR's spellings, operators, relations ----------------------------------------

MASKED = '''import torch
import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, out_ptr, n):
    offs = tl.arange(0, {size})
    x = tl.load(x_ptr + offs, mask={mask}, other=0.0)
    tl.store(out_ptr + offs, x)


def run(x):
    out = torch.empty_like(x)
    {name}[(1,)](x, out, 300)
    return out
'''
MLIR_MASK = ("/tmp/k.py:9:8: error: 'tt.load' op operand #1 must be 1-bit signless integer or ranked tensor of "
             "1-bit signless integer values, but got 'tensor<{size}x{type}>'")


def record_at(root: Path, failures: list[tuple[str, str]], find) -> None:
    """Each (source, message) recorded with its error at `find(line)` on the first line it finds."""
    log = FailureLog(root)
    for i, (source, message) in enumerate(failures):
        row, line = next((r, line) for r, line in enumerate(source.splitlines()) if find(line) is not None)
        log.record(path=f"k{i}.py", kernel=f"kernel_{i}", stage="compile", message=message, rules=[],
                   snippet=line, kernel_hash=kernel_hash(source), triton_version="3.9.0",
                   source=source, error_at=(row, find(line)))
    log.close()


@pytest.mark.skipif(installed_triton_version() is None, reason="near misses are compiled to tell them apart")
def test_one_mistake_in_mlirs_words_with_different_types_is_learned_and_checked_before_a_compile(tmp_path: Path, capsys):
    """Three kernels load with an integer mask; MLIR says so with a different tensor type each
    time (i32, i64, i8, of other shapes). One rule, by the operand the message names (the mask),
    by the kind of its types (integers): a fourth kernel's int16 mask is flagged, a bool mask is not."""
    kernels = [("masked_copy", 512, "n - offs", "i32"), ("tail_load", 1024, "(n - offs).to(tl.int64)", "i64"),
               ("byte_mask", 256, "(offs < n).to(tl.int8)", "i8")]
    failures = [(MASKED.format(name=name, size=size, mask=mask), MLIR_MASK.format(size=size, type=kind))
                for name, size, mask, kind in kernels]
    record_at(tmp_path, failures, lambda line: line.index("tl.load") if "tl.load" in line else None)
    induced = learned_rule(tmp_path, capsys)
    assert "tensor<" in induced["statement"] and "xi32" not in induced["statement"]
    assert main(["adapt", "graduate", induced["code"], str(tmp_path), "--format", "json"]) == 0
    graduated = json.loads(capsys.readouterr().out)
    assert graduated["origin"] == "typed" and '"i16"' in graduated["query"], graduated["query"]
    fourth = MASKED.format(name="short_mask", size=128, mask="(offs < n).to(tl.int16)")
    assert codes(tmp_path, fourth, induced["code"]) == [Severity.INFORMATION]
    assert codes(tmp_path, MASKED.format(name="ok", size=512, mask="offs < n"), induced["code"]) == []


INVERT = '''import torch
import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, out_ptr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, {expr})


def run(x):
    out = torch.empty_like(x)
    {name}[(1,)](x.to(torch.{dtype}), out)
    return out
'''


def test_a_mistake_at_an_operator_is_learned_at_the_operator(tmp_path: Path, capsys):
    """`~` on floats, in three kernels (fp32, fp16, bf16): Triton points at the operator, not a
    call; the rule matches `~` of a float and not of an integer."""
    failures = [(INVERT.format(name=f"flip_{i}", expr=expr, dtype=dtype),
                 f"ValueError: wrong type argument to unary invert (triton.language.{long})")
                for i, (expr, dtype, long) in enumerate([("~x", "float32", "float32"), ("x * ~x", "float16", "float16"),
                                                         ("~x + x", "bfloat16", "bfloat16")])]
    record_at(tmp_path, failures, lambda line: line.index("~") if "~" in line else None)
    induced = learned_rule(tmp_path, capsys)
    assert main(["adapt", "graduate", induced["code"], str(tmp_path), "--format", "json"]) == 0
    graduated = json.loads(capsys.readouterr().out)
    assert graduated["origin"] == "typed" and "unary_operator" in graduated["query"], graduated
    assert codes(tmp_path, INVERT.format(name="neg", expr="~x - 1.0", dtype="float64"), induced["code"]) == \
        [Severity.INFORMATION]
    assert codes(tmp_path, INVERT.format(name="ok", expr="~x", dtype="int32"), induced["code"]) == []
    assert main(["rules", "review", str(tmp_path), "--all", "--format", "json"]) == 0
    [rule] = json.loads(capsys.readouterr().out)
    assert rule["statement"].startswith("You cannot write `~...` on ")
    if installed_triton_version() is not None:  # the near miss the compiler accepted says what to write
        assert "Write `~(...).to(tl.int" in rule["statement"], rule["statement"]


MIXED = '''import torch
import triton
import triton.language as tl


@triton.jit
def {name}(a_ptr, b_ptr, c_ptr):
    r = tl.arange(0, 32)
    a = tl.load(a_ptr + r[:, None] * 32 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 32 + r[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + r[:, None] * 32 + r[None, :], c)


def run(a, b):
    c = torch.empty(32, 32, dtype=torch.float32, device=a.device)
    {name}[(1,)](a.to(torch.{a}), b.to(torch.{b}), c)
    return c
'''


def test_operands_whose_types_differ_are_what_the_matcher_learns(tmp_path: Path, capsys):
    """`tl.dot` of fp16 by fp32 (and fp32 by fp16, bf16 by fp16): each operand's types alone
    would flag every dot; that they differ is the mistake."""
    pairs = [("float16", "float32", "fp16", "fp32"), ("float32", "float16", "fp32", "fp16"),
             ("bfloat16", "float16", "bf16", "fp16")]
    failures = [(MIXED.format(name=f"mm_{i}", a=a, b=b), f"AssertionError: Both operands must be same dtype. Got {x} and {y}")
                for i, (a, b, x, y) in enumerate(pairs)]
    record_at(tmp_path, failures, lambda line: line.index("tl.dot") if "tl.dot" in line else None)
    induced = learned_rule(tmp_path, capsys)
    assert main(["adapt", "graduate", induced["code"], str(tmp_path), "--format", "json"]) == 0
    graduated = json.loads(capsys.readouterr().out)
    assert "#ts-dtype-differs? @o0 @o1" in graduated["query"], graduated
    assert codes(tmp_path, MIXED.format(name="mix", a="float16", b="bfloat16"), induced["code"]) == [Severity.INFORMATION]
    assert codes(tmp_path, MIXED.format(name="same", a="float16", b="float16"), induced["code"]) == []


FP8 = '''import torch
import triton
import triton.language as tl


@triton.jit
def {name}(x_ptr, out_ptr):
    offs = tl.arange(0, 64)
    {value} = tl.load(x_ptr + offs)
    q = {value}.to(tl.float8e4nv)
    tl.store(out_ptr + offs, q.to(tl.float32))


def run(x):
    out = torch.empty_like(x)
    {name}[(1,)](x, out)
    return out
'''
FP8_MESSAGE = ("ValueError: type fp8e4nv not supported in this architecture. The supported fp8 dtypes are "
               "('fp8e4b15', 'fp8e5')")


@pytest.mark.skipif(installed_triton_version() is None, reason="the other target is asked by compiling")
def test_a_failure_for_one_target_only_is_a_rule_for_that_target(tmp_path: Path, capsys):
    """fp8e4nv fails for sm_80 and compiles for sm_90: with both in the workspace's targets, the
    rule learned from sm_80 failures names sm_80, fires when checking for sm_80, and not for sm_90."""
    (tmp_path / "pyproject.toml").write_text('[tool.tritonsmith]\ntargets = ["sm_80", "sm_90"]\n')
    log = FailureLog(tmp_path)
    for i, value in enumerate(("x", "vals", "row")):
        source = FP8.format(name=f"quant_{i}", value=value)
        row = next(r for r, line in enumerate(source.splitlines()) if "float8e4nv" in line)
        line = source.splitlines()[row]
        log.record(path=f"k{i}.py", kernel=f"quant_{i}", stage="compile", message=FP8_MESSAGE, rules=[],
                   target="sm_80", snippet=line, kernel_hash=kernel_hash(source), triton_version="3.9.0",
                   source=source, error_at=(row, line.index("=") + 2))
    log.close()
    induced = learned_rule(tmp_path, capsys)
    assert main(["adapt", "graduate", induced["code"], str(tmp_path), "--format", "json"]) == 0
    capsys.readouterr()
    fourth = FP8.format(name="to_e4m3", value="h")
    found = Workspace(tmp_path, Settings(targets=("sm_80",)), include_user_packs=False).check_source(fourth)
    assert [f.code for f in found if f.code == induced["code"]] == [induced["code"]]
    found = Workspace(tmp_path, Settings(targets=("sm_90",)), include_user_packs=False).check_source(fourth)
    assert not [f for f in found if f.code == induced["code"]]
    assert main(["rules", "review", str(tmp_path), "--all", "--format", "json"]) == 0
    [rule] = json.loads(capsys.readouterr().out)
    assert rule["targets"] == ["sm_80"] and " for sm_80:" in rule["statement"]
    assert any("tl.float8e4nv" in words for words in rule["conditions"]), rule["conditions"]
    # What to write instead: a near miss the compiler accepted, the closest first.
    assert "Write `.to(tl.float8e5)`" in rule["statement"] and rule["statement"].endswith("instead: it compiles.")


def test_a_rules_targets_survive_the_pack_and_narrow_the_matcher(tmp_path: Path) -> None:
    from tritonsmith.rules import Matcher, Rule
    from tritonsmith.rules.pack import dump_pack, load_pack

    rule = Rule(code="TSL001", name="fp8-e4nv", title="fp8e4nv on sm_80", statement="You cannot ...",
                severity=Severity.WARNING, category="ValueError", check="query", status="active",
                query='((call function: (_) @fn) @flag (#ts-qualified? @fn "triton.language.cast"))',
                template="ValueError: type <dtype> not supported", targets=("sm_80",))
    pack = tmp_path / "learned.toml"
    pack.write_text(dump_pack([rule]))
    [again] = load_pack(pack)
    assert again.targets == ("sm_80",)
    assert Matcher([rule], version=None, targets=["sm_80", "sm_90"]).rules
    assert not Matcher([rule], version=None, targets=["sm_90"]).rules
    assert Matcher([rule], version=None).rules  # a check for no target in particular keeps it


def test_a_near_miss_that_compiles_is_said_as_the_construct_written_its_way() -> None:
    from tritonsmith.adapt.construct import Construct, Operand, rewritten

    to_fp8 = Construct(None, "to", (Operand("object"), Operand("0", dtype="fp8e4nv", dtype_width=8)))
    source = "    q = vals.to(tl.float8e4nv)\n"
    assert to_fp8.shown == ".to(tl.float8e4nv)"
    assert rewritten(to_fp8, source, source.replace("float8e4nv", "float8e5")) == ".to(tl.float8e5)"
    assert rewritten(to_fp8, source, source.replace("vals", "other")) is None  # not in what a statement shows
    assert rewritten(to_fp8, source, source) is None
