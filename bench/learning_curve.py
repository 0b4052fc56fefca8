#!/usr/bin/env python3
"""The learning curve of the failure-driven rule memory: after how many failures of one mistake
family is the next kernel with that mistake flagged before compiling, and what else it flags.

A stream of kernels (`FAMILIES`: mistake families of four failing kernels each, written in
different styles, plus correct near misses of each) is processed in rounds: round k brings the
k-th failing kernel of every family, then near misses. For each kernel, in order:

1. `check` it with the learned rules only (the workspace pack; the builtin rules are left out,
   so the memory starts empty): a failing kernel flagged is a hit, a near miss flagged is a false
   positive;
2. compile it for sm_90 in a sandboxed worker (no GPU needed): that is its label; a kernel whose
   label contradicts its role is reported and left out;
3. a failure is recorded in the failure log as the evaluator records one (file, error position,
   message), then the memory updates as `tritonsmith adapt induce` and `adapt graduate` would
   (graduation compiles near-miss variants of the failures as its contrast set).

`HELD_OUT` holds four more families, written after the learner was changed for `FAMILIES` and
never used to tune it; `HELD_OUT_37` eight more, written before the learner changed for issue 37
(MLIR's wording, types, shapes, ranks, operators, a target-specific failure); each half is
reported apart. A kernel compiles for sm_90 unless its family names another target.

Builtin rules already explain most of these mistakes on Triton 3.9; they are left out of both
the check and the failure labels so that what is measured is learning.

    .venv/bin/python bench/learning_curve.py --json docs/benchmarks/learning-curve-1.json [--plot docs/benchmarks/learning-curve.png]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n\n"


def _launch(name: str, args: str, allocations: list[str], grid: str = "(1,)") -> str:
    lines = "\n".join(f"    {a}" for a in allocations)
    return f"\n\ndef run_{name}():\n{lines}\n    {name}[{grid}]({args})\n"


def _kernel(name: str, params: str, body: list[str]) -> str:
    return "@triton.jit\ndef " + name + "(" + params + "):\n" + "\n".join(f"    {b}" for b in body) + "\n"


def _f32(var: str, n: int = 4096) -> str:
    return f'{var} = torch.empty({n}, dtype=torch.float32, device="cuda")'


def _t(var: str, dtype: str, n: int = 4096) -> str:
    return f'{var} = torch.empty({n}, dtype=torch.{dtype}, device="cuda")'


# Each family: (name, error marker, failing kernels, near misses). The marker is a substring of
# the line the compiler names, used only to check the label's position.
def bitcast_family() -> tuple[list[str], list[str]]:
    def k(name: str, var: str, src: str, dst: str, block: int) -> str:
        body = ["offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)", "mask = offs < n",
                f"{var} = tl.load(x_ptr + offs, mask=mask, other=0.0)",
                f"packed = {var}.to(tl.{dst}, bitcast=True)", "tl.store(out_ptr + offs, packed, mask=mask)"]
        return HEADER + _kernel(name, "x_ptr, out_ptr, n, BLOCK: tl.constexpr", body) + _launch(
            name, f"x, out, 4096, BLOCK={block}", [_t("x", src), _t("out", dst)], "(4096 // " + str(block) + ",)")
    failing = [k("pack_bits", "vals", "float32", "int16", 128), k("to_half_bits", "x", "float32", "float16", 256),
               k("quant_view", "w", "float32", "bfloat16", 128), k("bits_kernel", "row", "float32", "int16", 64)]
    near = [k("pack_bits_ok", "vals", "float32", "int32", 128), k("half_view_ok", "h", "float16", "int16", 128)]
    return failing, near


def axis_family(op: str) -> tuple[list[str], list[str]]:
    def k(name: str, var: str, axis: int, two_d: bool = False) -> str:
        if two_d:
            body = ["r = tl.arange(0, BLOCK)", f"{var} = tl.load(x_ptr + r[:, None] * BLOCK + r[None, :])",
                    f"res = tl.{op}({var}, axis={axis})", "tl.store(out_ptr + r, res)" if op == "sum" else
                    "tl.store(out_ptr + r[:, None] * BLOCK + r[None, :], res)"]
        else:
            body = ["r = tl.arange(0, BLOCK)", f"{var} = tl.load(x_ptr + r)", f"res = tl.{op}({var}, axis={axis})",
                    "tl.store(out_ptr + r, res)" if op == "cumsum" else "tl.store(out_ptr, res)"]
        return HEADER + _kernel(name, "x_ptr, out_ptr, BLOCK: tl.constexpr", body) + _launch(
            name, "x, out, BLOCK=64", [_f32("x"), _f32("out")])
    failing = [k(f"{op}_rows", "v", 1), k(f"{op}_scan", "x", 1), k(f"{op}_prefix", "vals", 1), k(f"{op}_k", "row", 1)]
    near = [k(f"{op}_rows_ok", "v", 0), k(f"{op}_tile_ok", "t", 1, two_d=True)]
    return failing, near


def exp_int_family() -> tuple[list[str], list[str]]:
    def k(name: str, var: str, fn: str, dtype: str) -> str:
        body = ["offs = tl.arange(0, BLOCK)", f"{var} = tl.load(x_ptr + offs)", f"y = tl.{fn}({var})",
                "tl.store(out_ptr + offs, y.to(tl.float32))"]
        return HEADER + _kernel(name, "x_ptr, out_ptr, BLOCK: tl.constexpr", body) + _launch(
            name, "x, out, BLOCK=128", [_t("x", dtype), _f32("out")])
    failing = [k("exp_counts", "c", "exp", "int32"), k("log_ids", "ids", "log", "int32"),
               k("sqrt_hist", "h", "sqrt", "int32"), k("exp_bins", "b", "exp", "int32")]
    near = [k("exp_counts_ok", "c", "exp", "float32"), k("abs_ids_ok", "ids", "abs", "int32")]
    return failing, near


def atomic_family() -> tuple[list[str], list[str]]:
    def k(name: str, op: str, dtype: str) -> str:
        body = ["offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)", "mask = offs < n",
                "v = tl.load(x_ptr + offs, mask=mask, other=0.0)", f"tl.atomic_{op}(out_ptr + offs, v, mask=mask)"]
        return HEADER + _kernel(name, "x_ptr, out_ptr, n, BLOCK: tl.constexpr", body) + _launch(
            name, "x, out, 4096, BLOCK=128", [_t("x", dtype), _t("out", dtype)], "(32,)")
    failing = [k("running_max", "max", "float16"), k("running_min", "min", "float16"),
               k("max_pool_bwd", "max", "float16"), k("swap_in", "xchg", "float16")]
    near = [k("running_max_ok", "max", "float32"), k("grad_accum_ok", "add", "float16")]
    return failing, near


def histogram_family() -> tuple[list[str], list[str]]:
    def k(name: str, dtype: str, bins: int) -> str:
        body = ["offs = tl.arange(0, BLOCK)", "v = tl.load(x_ptr + offs)", f"h = tl.histogram(v, {bins})",
                f"tl.store(out_ptr + tl.arange(0, {bins}), h)"]
        return HEADER + _kernel(name, "x_ptr, out_ptr, BLOCK: tl.constexpr", body) + _launch(
            name, "x, out, BLOCK=128", [_t("x", dtype), _t("out", "int32")])
    failing = [k("score_hist", "float32", 16), k("bucket_counts", "float32", 32),
               k("value_hist", "float16", 16), k("hist_kernel", "float32", 8)]
    near = [k("score_hist_ok", "int32", 16), k("expert_counts_ok", "int32", 32)]
    return failing, near


def dot_small_family() -> tuple[list[str], list[str]]:
    def k(name: str, bk: int) -> str:
        body = ["rm = tl.arange(0, 32)", f"rk = tl.arange(0, {bk})", "rn = tl.arange(0, 32)",
                f"a = tl.load(a_ptr + rm[:, None] * {bk} + rk[None, :])",
                "b = tl.load(b_ptr + rk[:, None] * 32 + rn[None, :])",
                "c = tl.dot(a, b)", "tl.store(c_ptr + rm[:, None] * 32 + rn[None, :], c)"]
        return HEADER + _kernel(name, "a_ptr, b_ptr, c_ptr", body) + _launch(
            name, "a, b, c", [_t("a", "float16"), _t("b", "float16"), _f32("c")])
    failing = [k("tiny_matmul", 8), k("mm_k8", 8), k("narrow_dot", 4), k("small_k", 8)]
    near = [k("tiny_matmul_ok", 16), k("mm_k32_ok", 32)]
    return failing, near


def arange_family() -> tuple[list[str], list[str]]:
    def k(name: str, size: int) -> str:
        body = [f"offs = tl.arange(0, {size})", "x = tl.load(x_ptr + offs)", "tl.store(out_ptr + offs, x * 2)"]
        return HEADER + _kernel(name, "x_ptr, out_ptr", body) + _launch(name, "x, out", [_f32("x"), _f32("out")])
    failing = [k("scale_100", 100), k("scale_rows", 96), k("scale_kernel", 100), k("double_it", 48)]
    near = [k("scale_128_ok", 128), k("scale_64_ok", 64)]
    return failing, near


FAMILIES = {
    "bitcast-width": bitcast_family,
    "cumsum-axis": lambda: axis_family("cumsum"),
    "sum-axis": lambda: axis_family("sum"),
    "math-on-int": exp_int_family,
    "atomic-fp16": atomic_family,
    "histogram-float": histogram_family,
    "dot-small-k": dot_small_family,
    "arange-not-pow2": arange_family,
}


def trans_family() -> tuple[list[str], list[str]]:
    def k(name: str, var: str, two_d: bool = False, block: int = 64) -> str:
        if two_d:
            body = ["r = tl.arange(0, BLOCK)", f"{var} = tl.load(x_ptr + r[:, None] * BLOCK + r[None, :])",
                    f"t = tl.trans({var})", "tl.store(out_ptr + r[:, None] * BLOCK + r[None, :], t)"]
        else:
            body = ["r = tl.arange(0, BLOCK)", f"{var} = tl.load(x_ptr + r)", f"t = tl.trans({var})",
                    "tl.store(out_ptr + r, t)"]
        return HEADER + _kernel(name, "x_ptr, out_ptr, BLOCK: tl.constexpr", body) + _launch(
            name, f"x, out, BLOCK={block}", [_f32("x"), _f32("out")])
    failing = [k("flip_rows", "v"), k("transpose_vec", "x", block=128), k("t_kernel", "row", block=32),
               k("swap_axes", "vals")]
    return failing, [k("flip_tile_ok", "v", two_d=True), k("transpose_ok", "x", two_d=True, block=32)]

def zeros_family() -> tuple[list[str], list[str]]:
    def k(name: str, size: int, fn: str = "zeros") -> str:
        init = (f"acc = tl.zeros(({size},), dtype=tl.float32)" if fn == "zeros" else
                f"acc = tl.full(({size},), 0.0, tl.float32)")
        body = ["offs = tl.arange(0, 64)", init, "x = tl.load(x_ptr + offs)", "tl.store(out_ptr + offs, x + tl.sum(acc))"]
        return HEADER + _kernel(name, "x_ptr, out_ptr", body) + _launch(name, "x, out", [_f32("x"), _f32("out")])
    failing = [k("acc_100", 100), k("init_rows", 48, "full"), k("buf_kernel", 96), k("pad_zero", 24, "full")]
    return failing, [k("acc_128_ok", 128), k("init_64_ok", 64, "full")]

def reshape_family() -> tuple[list[str], list[str]]:
    def k(name: str, shape: str) -> str:
        body = ["offs = tl.arange(0, 64)", "x = tl.load(x_ptr + offs)", f"y = tl.reshape(x, {shape})",
                "tl.store(out_ptr + offs, tl.reshape(y, (64,)))"]
        return HEADER + _kernel(name, "x_ptr, out_ptr", body) + _launch(name, "x, out", [_f32("x"), _f32("out")])
    failing = [k("fold_rows", "(8, 16)"), k("tile_view", "(4, 32)"), k("split_heads", "(16, 8)"),
               k("blocks_2d", "(32, 4)")]
    return failing, [k("fold_rows_ok", "(8, 8)"), k("tile_view_ok", "(4, 16)")]

def shift_family() -> tuple[list[str], list[str]]:
    def k(name: str, dtype: str, op: str) -> str:
        body = ["offs = tl.arange(0, 128)", "x = tl.load(x_ptr + offs)", f"y = x {op} 1", "tl.store(out_ptr + offs, y)"]
        return HEADER + _kernel(name, "x_ptr, out_ptr", body) + _launch(name, "x, out", [_t("x", dtype), _t("out", dtype)])
    failing = [k("halve_bits", "float32", ">>"), k("double_bits", "float32", "<<"), k("mask_low", "float16", "&"),
               k("shift_kernel", "float32", ">>")]
    return failing, [k("halve_bits_ok", "int32", ">>"), k("mask_low_ok", "int16", "&")]

# Written after the learner's changes for the families above, never used to tune it: how the
# memory does on mistakes it was not developed against (labelled by compiling, like the rest).
HELD_OUT = {
    "trans-1d": trans_family,
    "zeros-not-pow2": zeros_family,
    "reshape-numel": reshape_family,
    "bitwise-on-float": shift_family,
}


# -- the held-out half of issue 37 ------------------------------------------------------------
# Written and committed before any change to the learner for issue 37, and never used to tune it:
# mistakes reported in MLIR's words (a tensor type printed with its shape and element type),
# in Python's words about types, shapes, ranks and operators, and one that fails for one target
# only. A kernel is its source, or (source, target) where it is compiled for another target than
# sm_90 (the family that fails on Ampere and compiles on Hopper).


def _mm(name: str, a: str, b: str, acc: str | None, m: int, n: int, k: int, out: str = "float32") -> str:
    """A one-tile `tl.dot` kernel of (m x k) `a` by (k x n) `b`, with an `acc` accumulator or none."""
    body = [f"rm = tl.arange(0, {m})", f"rn = tl.arange(0, {n})", f"rk = tl.arange(0, {k})",
            f"a = tl.load(a_ptr + rm[:, None] * {k} + rk[None, :])",
            f"b = tl.load(b_ptr + rk[:, None] * {n} + rn[None, :])"]
    if acc is None:
        body.append("c = tl.dot(a, b)")
    else:
        body += [f"acc = tl.zeros(({m}, {n}), dtype=tl.{acc})", "c = tl.dot(a, b, acc)"]
    body.append(f"tl.store(c_ptr + rm[:, None] * {n} + rn[None, :], c.to(c_ptr.dtype.element_ty))")
    return HEADER + _kernel(name, "a_ptr, b_ptr, c_ptr", body) + _launch(
        name, "a, b, c", [_t("a", a, m * k), _t("b", b, k * n), _t("c", out, m * n)])


def load_mask_not_bool_family() -> tuple[list[Any], list[Any]]:
    """MLIR's words: "'tt.load' op operand #1 must be 1-bit signless integer or ranked tensor of
    1-bit signless integer values, but got 'tensor<512xi32>'": an integer mask, of another
    element type and shape in each kernel."""
    def k(name: str, n: int, mask: str, two_d: bool = False, dtype: str = "float32") -> str:
        offs = (f"r = tl.arange(0, {n})", f"offs = r[:, None] * {n} + r[None, :]") if two_d else \
            (f"offs = tl.arange(0, {n})",)
        body = [*offs, f"x = tl.load(x_ptr + offs, mask={mask}, other=0.0)", "tl.store(out_ptr + offs, x)"]
        return HEADER + _kernel(name, "x_ptr, out_ptr, n", body) + _launch(
            name, "x, out, 300", [_t("x", dtype, 4096), _t("out", dtype, 4096)])
    failing = [k("masked_copy", 512, "n - offs"), k("tail_load", 1024, "(n - offs).to(tl.int64)"),
               k("tile_load", 64, "n - offs", two_d=True), k("half_copy", 256, "(offs < n).to(tl.int8)", dtype="float16")]
    near = [k("masked_copy_ok", 512, "(n - offs) > 0"), k("tail_load_ok", 1024, "(offs < n).to(tl.int1)")]
    return failing, near


def dot_mixed_dtype_family() -> tuple[list[Any], list[Any]]:
    """"Both operands must be same dtype. Got fp16 and fp32", in four pairs of types."""
    failing = [_mm("mixed_mm", "float16", "float32", None, 32, 32, 32),
               _mm("w_times_x", "float32", "float16", None, 64, 32, 32),
               _mm("bf_mix", "bfloat16", "float16", None, 32, 64, 32),
               _mm("attn_pv", "float16", "bfloat16", None, 64, 64, 16)]
    near = [_mm("same_mm_ok", "float16", "float16", None, 32, 32, 32),
            _mm("bf_same_ok", "bfloat16", "bfloat16", None, 64, 32, 32)]
    return failing, near


def broadcast_shapes_family() -> tuple[list[Any], list[Any]]:
    """"Cannot make_shape_compatible: incompatible dimensions at index 0: 64 and 32": operands of
    an operator, a store's value and its pointers, of different lengths."""
    def k(name: str, n: int, m: int, how: str) -> str:
        body = [f"a = tl.load(x_ptr + tl.arange(0, {n}))", f"b = tl.load(y_ptr + tl.arange(0, {m}))"]
        if how == "add":
            body.append(f"tl.store(out_ptr + tl.arange(0, {n}), a + b)")
        elif how == "mul":
            body.append(f"tl.store(out_ptr + tl.arange(0, {n}), a * b)")
        elif how == "store":
            body.append(f"tl.store(out_ptr + tl.arange(0, {m}), a)")
        else:  # an outer sum, written correctly
            body.append(f"tl.store(out_ptr + tl.arange(0, {n})[:, None] * {m} + tl.arange(0, {m})[None, :], "
                        "a[:, None] + b[None, :])")
        return HEADER + _kernel(name, "x_ptr, y_ptr, out_ptr", body) + _launch(
            name, "x, y, out", [_f32("x"), _f32("y"), _f32("out", 64 * 64)])
    failing = [k("add_rows", 64, 32, "add"), k("gate_mul", 128, 64, "mul"), k("copy_out", 32, 64, "store"),
               k("bias_add", 16, 64, "add")]
    near = [k("add_rows_ok", 64, 64, "add"), k("outer_sum_ok", 64, 32, "outer")]
    return failing, near


def invert_float_family() -> tuple[list[Any], list[Any]]:
    """"wrong type argument to unary invert (triton.language.float32)": `~` on floats."""
    def k(name: str, dtype: str, expr: str) -> str:
        body = ["offs = tl.arange(0, 64)", "x = tl.load(x_ptr + offs)", f"y = {expr}", "tl.store(out_ptr + offs, y)"]
        return HEADER + _kernel(name, "x_ptr, out_ptr", body) + _launch(name, "x, out", [_t("x", dtype), _t("out", dtype)])
    failing = [k("flip_bits", "float32", "~x"), k("not_mask", "float16", "~x"), k("neg_bits", "bfloat16", "~x + x"),
               k("complement", "float32", "x * ~x")]
    near = [k("flip_bits_ok", "int32", "~x"), k("negate_ok", "float32", "-x")]
    return failing, near


def pointer_float_offset_family() -> tuple[list[Any], list[Any]]:
    """"invalid operands of type pointer<fp32> and triton.language.float32": a pointer moved by
    floating-point offsets (indices loaded or computed as floats)."""
    def k(name: str, ptr: str, index: str, cast: str | None) -> str:
        offset = f"i.to(tl.{cast})" if cast else "i"
        body = ["r = tl.arange(0, 64)", "i = tl.load(idx_ptr + r)", f"v = tl.load(x_ptr + {offset})",
                "tl.store(out_ptr + r, v)"]
        return HEADER + _kernel(name, "x_ptr, idx_ptr, out_ptr", body) + _launch(
            name, "x, idx, out", [_t("x", ptr), _t("idx", index), _t("out", ptr)])
    failing = [k("gather_rows", "float32", "float32", None), k("embed_lookup", "float16", "int64", "float32"),
               k("take_kernel", "float32", "float16", None), k("index_select", "bfloat16", "int32", "float32")]
    near = [k("gather_rows_ok", "float32", "int32", None), k("embed_lookup_ok", "float16", "float32", "int64")]
    return failing, near


def shape_tuple_not_pow2_family() -> tuple[list[Any], list[Any]]:
    """"Shape element 1 must be a power of 2": a 2-D or 3-D shape tuple with one odd dimension
    (which element differs between the kernels)."""
    def k(name: str, shape: str, fn: str) -> str:
        init = (f"acc = tl.zeros({shape}, dtype=tl.float32)" if fn == "zeros" else
                f"acc = tl.full({shape}, 1.0, tl.float32)")
        body = ["offs = tl.arange(0, 64)", init, "x = tl.load(x_ptr + offs)", "tl.store(out_ptr + offs, x + tl.sum(acc))"]
        return HEADER + _kernel(name, "x_ptr, out_ptr", body) + _launch(name, "x, out", [_f32("x"), _f32("out")])
    failing = [k("tile_acc", "(64, 48)", "zeros"), k("init_tiles", "(3, 64)", "full"), k("cube_acc", "(4, 8, 12)", "zeros"),
               k("heads_buf", "(32, 24)", "full")]
    near = [k("tile_acc_ok", "(64, 32)", "zeros"), k("cube_acc_ok", "(4, 8, 16)", "full")]
    return failing, near


def permute_rank_family() -> tuple[list[Any], list[Any]]:
    """"permute dims must have the same length as input shape, got 2 and 3": a permutation of
    another rank than the tensor's."""
    def k(name: str, rank: int, dims: str, method: bool = False) -> str:
        if rank == 2:
            load = "x = tl.load(x_ptr + r[:, None] * 16 + r[None, :])"
            store = "tl.store(out_ptr + r[:, None] * 16 + r[None, :], y)"
        else:
            load = "x = tl.load(x_ptr + r[:, None, None] * 256 + r[None, :, None] * 16 + r[None, None, :])"
            store = "tl.store(out_ptr + r[:, None, None] * 256 + r[None, :, None] * 16 + r[None, None, :], y)"
        call = f"x.permute({dims})" if method else f"tl.permute(x, {dims})"
        body = ["r = tl.arange(0, 16)", load, f"y = {call}", store]
        return HEADER + _kernel(name, "x_ptr, out_ptr", body) + _launch(name, "x, out", [_f32("x", 4096), _f32("out", 4096)])
    failing = [k("swap_tile", 2, "(2, 0, 1)"), k("heads_first", 3, "(1, 0)"), k("to_nhwc", 2, "(0, 2, 1)", method=True),
               k("rotate_axes", 3, "(2, 1)", method=True)]
    near = [k("swap_tile_ok", 2, "(1, 0)"), k("heads_first_ok", 3, "(1, 0, 2)", method=True)]
    return failing, near


def fp8_on_ampere_family() -> tuple[list[Any], list[Any]]:
    """"type fp8e4nv not supported in this architecture", for sm_80 only: the same kernels
    compile for sm_90 (their near misses there), as does fp8e5 on sm_80."""
    def k(name: str, fp8: str, how: str) -> str:
        if how == "cast":
            body = ["offs = tl.arange(0, 64)", "x = tl.load(x_ptr + offs)", f"q = x.to(tl.{fp8})",
                    "tl.store(out_ptr + offs, q.to(tl.float32))"]
        else:
            body = ["offs = tl.arange(0, 64)", "x = tl.load(x_ptr + offs)", f"q = tl.cast(x * 2.0, tl.{fp8})",
                    "tl.store(out_ptr + offs, q.to(tl.float32) * 0.5)"]
        return HEADER + _kernel(name, "x_ptr, out_ptr", body) + _launch(name, "x, out", [_f32("x"), _f32("out")])
    failing = [(k("quant_fp8", "float8e4nv", "cast"), "sm_80"), (k("scale_q8", "float8e4nv", "tl.cast"), "sm_80"),
               (k("to_e4m3", "float8e4nv", "cast"), "sm_80"), (k("fp8_roundtrip", "float8e4nv", "tl.cast"), "sm_80")]
    near = [(k("quant_fp8", "float8e4nv", "cast"), "sm_90"), (k("quant_e5_ok", "float8e5", "cast"), "sm_80")]
    return failing, near


HELD_OUT_37 = {
    "load-mask-not-bool": load_mask_not_bool_family,
    "dot-mixed-dtype": dot_mixed_dtype_family,
    "broadcast-shapes": broadcast_shapes_family,
    "invert-float": invert_float_family,
    "pointer-float-offset": pointer_float_offset_family,
    "shape-tuple-not-pow2": shape_tuple_not_pow2_family,
    "permute-rank": permute_rank_family,
    "fp8-on-ampere": fp8_on_ampere_family,
}
"""Issue 37's held-out half: committed before the learner changed for it, never used to tune it."""


def _kernel_target(entry: Any) -> tuple[str, str]:
    """(source, target) of a family's kernel: a bare source compiles for sm_90."""
    return (entry[0], entry[1]) if isinstance(entry, tuple) else (entry, "sm_90")


@dataclass
class Step:
    family: str
    role: str  # "failing" or "near-miss"
    index: int
    target: str
    flagged_before: bool
    compiled: bool | None
    learned: list[str]


def run(args: argparse.Namespace) -> dict[str, Any]:
    from tritonsmith.adapt.graduate import graduate
    from tritonsmith.adapt.induce import Thresholds, induce
    from tritonsmith.cli.adapt import _NearMissCompiler
    from tritonsmith.evaluator.pool import WorkerPool
    from tritonsmith.evaluator.reports import compile_file
    from tritonsmith.rules import Matcher
    from tritonsmith.state import FailureLog, kernel_hash
    from tritonsmith.state.learned import load_learned

    streams = {name: make() for name, make in {**FAMILIES, **HELD_OUT, **HELD_OUT_37}.items()}
    root = Path(tempfile.mkdtemp(prefix="learning-curve-"))
    steps: list[Step] = []
    started = time.perf_counter()
    pool = WorkerPool(size=1)
    near_compiler = _NearMissCompiler(root)
    try:
        def flagged(source: str, target: str) -> bool:
            rules = [r for r in load_learned(root) if r.active and r.check]
            return bool(rules) and bool(Matcher(rules, version=(3, 9), targets=[target]).check_source(source))

        def compile_(source: str, name: str, target: str) -> tuple[bool, dict[str, Any] | None]:
            reports = compile_file(pool, source, path=str(root / f"{name}.py"), targets=[target])
            failed = [e["error"] for r in reports for e in r.results if e.get("error")]
            ok = bool(reports) and all(r.ok and r.results for r in reports)
            return ok, (failed[0] if failed else None)

        for k in range(4):
            for family, (failing, _near) in streams.items():
                source, target = _kernel_target(failing[k])
                before = flagged(source, target)
                ok, error = compile_(source, f"{family}-{k}", target)
                learned: list[str] = []
                if not ok and error is not None and error.get("range"):
                    log = FailureLog(root)
                    row, col = error["range"]["start"]
                    log.record(path=f"{family}-{k}.py", kernel=f"{family}-{k}", stage="compile", target=target,
                               message=str(error.get("message") or error.get("text")), rules=[],
                               snippet=source.splitlines()[row], kernel_hash=kernel_hash(source),
                               source=source, error_at=(row, col))
                    log.close()
                    for item in induce(root, thresholds=Thresholds(count=args.min_count, kernels=2)):
                        # A new rule, or one whose matcher missed this failure: (re)graduate.
                        if item.rule.active and (not item.rule.query or not before):
                            result = graduate(root, item.rule.code, compiles=near_compiler,
                                              probe=near_compiler.outcome, targets=["sm_90"],
                                              compiles_for=near_compiler.for_target)
                            why = "" if result.accepted else "; ".join(
                                sorted({v.reason for origin, _, v in result.tried if origin == "typed"}))
                            learned.append(f"{item.rule.code}:{'graduated' if result.accepted else 'no matcher'}"
                                           + (f" ({why})" if why else ""))
                steps.append(Step(family, "failing", k, target, before, ok, learned))
            if k in (1, 3):  # near misses after rounds 2 and 4
                for family, (_, near) in streams.items():
                    for i, entry in enumerate(near):
                        source, target = _kernel_target(entry)
                        before = flagged(source, target)
                        ok, _ = compile_(source, f"{family}-near-{k}-{i}", target)
                        steps.append(Step(family, "near-miss", i, target, before, ok, []))
    finally:
        near_compiler.close()
        pool.close()
    rules = [{"code": r.code, "status": r.status, "count": r.count, "kernels": len(r.kernels),
              "statement": r.statement, "query": r.query} for r in load_learned(root)]
    return summarise(steps, time.perf_counter() - started, args, rules)


def summarise(steps: list[Step], seconds: float, args: argparse.Namespace,
              rules: list[dict[str, Any]]) -> dict[str, Any]:
    families: dict[str, Any] = {}
    for family in [*FAMILIES, *HELD_OUT, *HELD_OUT_37]:
        failing = [s for s in steps if s.family == family and s.role == "failing"]
        mislabelled = [s.index for s in failing if s.compiled]
        first = next((s.index for s in failing if s.flagged_before), None)
        near = [s for s in steps if s.family == family and s.role == "near-miss"]
        families[family] = {
            "flagged_before_compiling": [s.flagged_before for s in failing],
            "first_flagged_after_failures": first,  # kernel k is flagged after k earlier failures
            "false_positives": sum(1 for s in near if s.flagged_before and s.compiled),
            "near_misses_checked": len(near),
            "near_misses_not_compiling": sum(1 for s in near if not s.compiled),
            "failing_kernels_that_compiled": mislabelled,
            "learned": [x for s in failing for x in s.learned],
        }
    def after3(names: Any) -> str:
        flagged = sum(1 for name in names if families[name]["first_flagged_after_failures"] is not None
                      and families[name]["first_flagged_after_failures"] <= 3)
        return f"{flagged}/{len(names)}"

    return {
        "what": "learning curve of the failure-driven rule memory (bench/learning_curve.py)",
        "command": "python bench/learning_curve.py " + " ".join(sys.argv[1:]),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "seconds": round(seconds, 1),
        "min_count": args.min_count,
        "families": families,
        "flagged_after_three_failures": after3(FAMILIES),
        "held_out_flagged_after_three_failures": after3(HELD_OUT),
        "held_out_37_flagged_after_three_failures": after3(HELD_OUT_37),
        "false_positives": sum(f["false_positives"] for f in families.values()),
        "steps": [s.__dict__ for s in steps],
        "learned_rules": rules,
    }


def plot(result: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = result["families"]
    xs = range(4)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for label, names in (("families developed against", FAMILIES), ("held-out families", HELD_OUT),
                         ("held out for issue 37", HELD_OUT_37)):
        share = [sum(1 for n in names if families[n]["flagged_before_compiling"][k]) / len(names) for k in xs]
        ax.plot(list(xs), share, marker="o", label=label)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_xlabel("failures of the family seen before this kernel")
    ax.set_ylabel("families flagged before compiling")
    ax.set_ylim(0, 1.05)
    ax.set_xticks(list(xs))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the result here")
    parser.add_argument("--plot", help="write the curve as a PNG here (needs matplotlib)")
    parser.add_argument("--min-count", type=int, default=3, help="failures before a cluster becomes a rule")
    args = parser.parse_args(argv)
    result = run(args)
    print(f"families flagged after three failures: {result['flagged_after_three_failures']} "
          f"(held out: {result['held_out_flagged_after_three_failures']}; "
          f"held out for issue 37: {result['held_out_37_flagged_after_three_failures']}), "
          f"false positives: {result['false_positives']} ({result['seconds']} s)")
    for name, family in result["families"].items():
        print(f"  {name:18} flagged: {family['flagged_before_compiling']}  fp: {family['false_positives']}  "
              f"learned: {family['learned']}  mislabelled: {family['failing_kernels_that_compiled']}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    if args.plot:
        plot(result, Path(args.plot))
    return 0


if __name__ == "__main__":
    sys.exit(main())
