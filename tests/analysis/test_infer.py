"""Types and shapes (analysis/infer.py): what each value is, per configuration, and that
nothing is concluded from what is unknown."""

from __future__ import annotations

import textwrap

import pytest

from tritonsmith.analysis import Document, index_module
from tritonsmith.analysis.infer import Dim, Value, broadcast, promote, scalar
from tritonsmith.rules.context import KernelContext
from tritonsmith.rules.types_at import name_types

HELPER = """
@triton.jit
def split(v):
    return v, v.to(tl.int32)
"""


def _types(body: str, launch: str = "", params: str = "x_ptr, out_ptr, n, BLOCK: tl.constexpr") -> tuple:
    lines = ["import torch", "import triton", "import triton.language as tl", "", HELPER, "",
             "@triton.jit", f"def k({params}):"]
    lines += ["    " + line for line in textwrap.dedent(body).strip("\n").splitlines()]
    lines += ["", "", "def run():",
              '    x = torch.empty(1024, dtype=torch.float16, device="cuda")',
              '    out = torch.empty(1024, dtype=torch.float32, device="cuda")']
    lines += ["    " + line for line in (launch or "k[(1,)](x, out, 1024, BLOCK=128)").splitlines()]
    source = "\n".join(lines) + "\n"
    document = Document(source)
    index = index_module(document.root)
    kernel = next(k for k in index.kernels if k.name == "k")
    context = KernelContext(kernel, index, document.source, (3, 9))
    scenario = context.typed_scenarios()[0]
    result = context.types(scenario, values=True)
    names = {}
    for (start, end), value in result.values.items():
        name = document.source[start:end].decode()
        if name.isidentifier():
            names[name] = value.render()
    return names, [(i.kind, i.message) for i in result.issues], document, index


def test_values_flow_from_the_launch_site():
    names, issues, _, _ = _types("""
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = x.to(tl.float32) * 2
        total = tl.sum(y, axis=0)
        tl.store(out_ptr + offs, y, mask=mask)
        """)
    assert names["offs"] == "i32[BLOCK=128]"
    assert names["mask"] == "i1[BLOCK=128]"
    assert names["x"] == "fp16[BLOCK=128]"  # the launch allocates float16
    assert names["y"] == "fp32[BLOCK=128]"
    assert names["total"] == "fp32"
    assert names["x_ptr"] == "*fp16"
    assert issues == []


def test_shapes_of_2d_tiles_and_dot():
    names, issues, _, _ = _types("""
        rm = tl.arange(0, BLOCK)
        rk = tl.arange(0, 32)
        a = tl.load(x_ptr + rm[:, None] * 32 + rk[None, :])
        b = tl.load(x_ptr + rk[:, None] * BLOCK + rm[None, :])
        acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
        acc += tl.dot(a, b)
        t = tl.trans(acc)
        r = tl.reshape(acc, (BLOCK * BLOCK,))
        tl.store(out_ptr + rm, tl.max(acc, axis=1))
        """)
    assert names["a"] == "fp16[BLOCK=128, 32]" and names["b"] == "fp16[32, BLOCK=128]"
    assert names["acc"] == "fp32[BLOCK=128, BLOCK=128]"
    assert names["r"] == "fp32[16384]"
    assert issues == []


@pytest.mark.parametrize(("body", "kind"), [
    ("a = tl.arange(0, BLOCK)\nb = tl.arange(0, 64)\nc = a + b", "broadcast"),
    ("v = tl.arange(0, BLOCK)\ns = tl.cumsum(v, axis=1)", "axis-range"),
    ("v = tl.load(x_ptr + tl.arange(0, BLOCK))\nw = v.to(tl.int8, bitcast=True)", "bitcast-width"),
    ("v = tl.arange(0, BLOCK)\nw = tl.exp(v)", "math-on-int"),
    ("v = tl.load(x_ptr + tl.arange(0, BLOCK))\nw = v << 1", "float-bitwise"),
    ("v = tl.arange(0, BLOCK)\nw = tl.reshape(v, (64, 4))", "reshape-numel"),
    ("v = tl.arange(0, BLOCK)\nw = tl.trans(v)", "trans-1d"),
    ("v = tl.load(x_ptr + tl.arange(0, BLOCK) * 0.5)", "pointer-float"),
    ("v = tl.load(n)", "load-non-pointer"),
    ("tl.store(out_ptr, tl.zeros((BLOCK,), dtype=tl.float32))", "store-block-scalar-pointer"),
    ("v = tl.load(x_ptr + tl.arange(0, BLOCK))\nw = float(v)", "python-cast"),
    ("v = tl.load(x_ptr + tl.arange(0, BLOCK))\nh = tl.histogram(v, 16)", "histogram-float"),
    ("v = tl.multiple_of(tl.arange(0, BLOCK), (16, 16))", "hint-arity"),
    ("if n > 0:\n    v = tl.load(x_ptr + tl.arange(0, BLOCK))\nelse:\n    v = tl.zeros((BLOCK,), dtype=tl.int32)\n"
     "tl.store(out_ptr + tl.arange(0, BLOCK), v)", "branch-type"),
    ("if n > 0:\n    v = tl.load(x_ptr + tl.arange(0, BLOCK))\ntl.store(out_ptr + tl.arange(0, BLOCK), v)",
     "undefined-name"),
    ("for i in range(0, n, BLOCK):\n    v = tl.load(x_ptr + i + tl.arange(0, BLOCK))\n"
     "tl.store(out_ptr + tl.arange(0, BLOCK), v)", "undefined-name"),
    # Literals assigned to a local are run-time scalars of their own type (int32, fp32).
    ("if n > 0:\n    v = 1\nelse:\n    v = 1.0\ntl.store(out_ptr, v)", "branch-type"),
    ("v = 0\nif n > 0:\n    v = n * 2.5\ntl.store(out_ptr, v)", "branch-type"),
    ("acc = 0.0\nfor i in range(n):\n    acc += tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK))", "loop-type"),
    ("acc = tl.zeros((BLOCK,), tl.float16)\nfor i in range(n):\n    acc += tl.load(out_ptr + tl.arange(0, BLOCK))",
     "loop-type"),
    ("tl.atomic_max(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float16))", "atomic-dtype"),
    ("tl.atomic_add(out_ptr, tl.zeros((BLOCK,), tl.float32))", "store-block-scalar-pointer"),
    ("v = tl.arange(0, BLOCK) + 2**31", "int-range"),
    ("v = tl.arange(0, BLOCK) < n + 2**40", "int-range"),
    ("v = tl.load(out_ptr + tl.arange(0, BLOCK)) + 2**64", "int-nonrepresentable"),
    ("WIDE = BLOCK * 2\nv = tl.arange(0, WIDE)", "demoted-constexpr"),
    ("S = (BLOCK, BLOCK)\nv = tl.zeros(S, tl.float32)", "demoted-constexpr"),
    ("N = 3\nfor i in tl.static_range(N):\n    pass", "demoted-constexpr"),
    ("v = tl.zeros((BLOCK,), tl.float32)\nM = v.shape[0]\nw = tl.zeros((M,), tl.float32)", "demoted-constexpr"),
    ("v = tl.arange(2**31, 2**31 + 128)", "arange-int32"),
    ("v = tl.full((BLOCK,), 2**64, tl.int64)", "int-nonrepresentable"),
    ("v = tl.arange(0, BLOCK) - 2**70", "int-nonrepresentable"),
    ("v = tl.permute(tl.arange(0, BLOCK), (1, 0))", "trans-1d"),
    ("a = tl.zeros((2, 32, 16), tl.float16)\nb = tl.zeros((4, 16, 32), tl.float16)\nc = tl.dot(a, b)", "dot-shape"),
    ("a = tl.zeros((32, 16), tl.float16)\nb = tl.zeros((16, 64), tl.float16)\n"
     "c = tl.dot(a, b, tl.zeros((64, 32), tl.float32))", "dot-shape"),
])
def test_each_issue_is_found_when_its_facts_are_known(body: str, kind: str):
    _, issues, _, _ = _types(body)
    assert [k for k, _ in issues] == [kind], issues


@pytest.mark.parametrize("body", [
    "a = tl.arange(0, BLOCK)\nb = tl.arange(0, 128)\nc = a + b",  # equal sizes
    "v = tl.arange(0, BLOCK)\ns = tl.cumsum(v, axis=0)",  # the near miss of axis=1
    "v = tl.load(x_ptr + tl.arange(0, BLOCK))\nw = v.to(tl.int16, bitcast=True)",  # fp16 -> int16: one width
    "v = tl.load(x_ptr + tl.arange(0, BLOCK))\nw = tl.exp(v.to(tl.float32))",
    "v = tl.arange(0, BLOCK)\nw = tl.reshape(v, (64, 2))",
    "v = tl.load(x_ptr + tl.arange(0, BLOCK) // 2)",
    "if n > 0:\n    v = tl.load(x_ptr + tl.arange(0, BLOCK))\nelse:\n    v = tl.zeros((BLOCK,), dtype=tl.float16)\n"
    "tl.store(out_ptr + tl.arange(0, BLOCK), v)",
    # tl.static_range is unrolled: its names live on; a constexpr if keeps one branch.
    "for i in tl.static_range(2):\n    v = tl.load(x_ptr + tl.arange(0, BLOCK))\ntl.store(out_ptr + tl.arange(0, BLOCK), v)",
    "if BLOCK > 64:\n    v = tl.load(x_ptr + tl.arange(0, BLOCK))\ntl.store(out_ptr + tl.arange(0, BLOCK), v)",
    # The near misses of the literal, loop, atomic and constexpr-assignment issues.
    "if n > 0:\n    v = 1\nelse:\n    v = 2\ntl.store(out_ptr, v)",
    "acc = tl.zeros((BLOCK,), tl.float32)\nfor i in range(n):\n    acc += tl.load(out_ptr + tl.arange(0, BLOCK))",
    "acc = 0.0\nfor i in tl.static_range(4):\n    acc += tl.load(out_ptr + tl.arange(0, BLOCK))",  # unrolled
    "tl.atomic_add(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float16))",  # add takes fp16
    "tl.atomic_max(out_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32))",
    "v = tl.arange(0, BLOCK).to(tl.int64) + 2**31",
    "v = tl.arange(0, BLOCK) + (2**31 - 1)",
    "v = tl.arange(0, BLOCK).to(tl.float32) + 2**40",
    "v = tl.arange(0, BLOCK) + (2**64 >> 60)",  # folded first
    "WIDE: tl.constexpr = BLOCK * 2\nv = tl.arange(0, WIDE)",
    "WIDE = BLOCK * 2\nv = tl.arange(0, BLOCK) * WIDE",  # a run-time scalar is fine outside shapes
    "for i in tl.static_range(BLOCK // 64):\n    pass",
    "v = tl.arange(2**31 - 256, 2**31 - 128)",
    "v = tl.permute(tl.arange(0, BLOCK), (0,))",
    "a = tl.zeros((32, 16), tl.float16)\nb = tl.zeros((16, 64), tl.float16)\nc = tl.dot(a, b, tl.zeros((32, 64), tl.float32))",
])
def test_near_misses_are_not_issues(body: str):
    _, issues, _, _ = _types(body)
    assert issues == []


def test_unknown_facts_decide_nothing():
    # No launch: the constexprs and pointer types are unknown, so no shape or dtype clash is claimed.
    source = textwrap.dedent('''\
        import triton
        import triton.language as tl


        @triton.jit
        def k(x_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
            a = tl.arange(0, BLOCK_M)
            b = tl.arange(0, BLOCK_N)
            c = a + b
            v = tl.load(x_ptr + a)
            w = tl.exp(v)
            u = v.to(tl.int16, bitcast=True)
        ''')
    document = Document(source)
    index = index_module(document.root)
    context = KernelContext(index.kernels[0], index, document.source, (3, 9))
    assert context.types(context.typed_scenarios()[0]).issues == []


def test_loops_helpers_and_constexpr_branches():
    names, issues, _, _ = _types("""
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for i in range(0, n, BLOCK):
            acc += tl.load(x_ptr + i + tl.arange(0, BLOCK)).to(tl.float32)
        if BLOCK > 64:
            wide = acc * 2
        else:
            wide = acc.to(tl.int32)
        lo, hi = split(acc)
        tl.store(out_ptr + tl.arange(0, BLOCK), wide + lo)
        """)
    assert names["acc"] == "fp32[BLOCK=128]"
    assert names["wide"] == "fp32[BLOCK=128]"  # the constexpr condition keeps one branch
    assert names["lo"] == "fp32[BLOCK=128]" and names["hi"] == "i32[BLOCK=128]"
    assert issues == []


def test_promotion_and_broadcasting_follow_triton():
    fp16, fp32, i32 = (Value("tensor", d, (Dim(8),)) for d in ("fp16", "fp32", "i32"))
    assert promote(fp16, scalar("fp32", 2.0, weak=True), "*") == "fp16"  # a literal yields
    assert promote(i32, scalar("fp32", 0.5, weak=True), "*") == "fp32"
    assert promote(fp16, fp32, "+") == "fp32"
    assert promote(Value("tensor", "bf16", ()), Value("tensor", "fp16", ()), "+") == "fp32"
    assert promote(i32, Value("tensor", "i64", ()), "+") == "i64"
    assert promote(i32, i32, "/") == "fp32"
    assert broadcast((Dim(8), Dim(1)), (Dim(16),))[0] == (Dim(8), Dim(16))
    assert broadcast((Dim(8),), (Dim(16),))[1] == (Dim(8), Dim(16))
    assert broadcast((Dim(None, "M"),), (Dim(None, "N"),))[1] is None  # unknown sizes: no clash


def test_hover_text_names_each_configuration():
    _, _, document, index = _types("acc = tl.zeros((BLOCK, 16), dtype=tl.float32)",
                                   launch="k[(1,)](x, out, 1024, BLOCK=128)\nk[(1,)](x, out, 1024, BLOCK=64)")
    row = next(i for i, line in enumerate(document.source.decode().splitlines()) if "acc =" in line)
    typed = name_types(document.root, document.source, index, (row, 5), (3, 9))
    launches = [i + 1 for i, line in enumerate(document.source.decode().splitlines()) if "k[(1,)]" in line]
    assert typed is not None
    assert typed.by_configuration == ((f"launch at line {launches[0]}", "fp32[BLOCK=128, 16]"),
                                      (f"launch at line {launches[1]}", "fp32[BLOCK=64, 16]"))
    assert f"acc: fp32[BLOCK=128, 16]  # launch at line {launches[0]}" in typed.markdown()


def test_nested_loops_that_change_types_cannot_stall_the_inference():
    """Each loop whose body changes a carried value runs twice: 24 nested ones would be 2^24
    passes. A carried value that becomes unknown stops changing, and past the statement budget
    the outcome is discarded; either way only the real issue (acc starts as an int32 scalar and
    becomes a block) can be reported."""
    import time

    body = "acc = 0\n"
    for depth in range(24):
        body += "    " * depth + f"for i{depth} in range(0, n):\n"
    body += "    " * 24 + "acc = acc + tl.load(x_ptr + tl.arange(0, BLOCK))\n"
    started = time.perf_counter()
    _, issues, _, _ = _types(body)
    assert time.perf_counter() - started < 10
    assert {kind for kind, _ in issues} <= {"loop-type"}


def test_helper_returns_must_agree_unless_a_constexpr_picks_one():
    source = textwrap.dedent('''\
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def relu_or_zero(x, n):
            if n > 0:
                return tl.maximum(x, 0.0)
            return 0.0


        @triton.jit
        def pick(x, FLAG: tl.constexpr):
            if FLAG:
                return x
            return x.to(tl.float16)


        @triton.jit
        def k(x_ptr, out_ptr, n, FLAG: tl.constexpr, BLOCK: tl.constexpr):
            x = tl.load(x_ptr + tl.arange(0, BLOCK))
            a = relu_or_zero(x, n)
            b = pick(x, FLAG)


        def run():
            x = torch.empty(128, dtype=torch.float32, device="cuda")
            k[(1,)](x, x, 4, FLAG=UNKNOWN_FLAG, BLOCK=128)
        ''')
    document = Document(source)
    index = index_module(document.root)
    kernel = next(k for k in index.kernels if k.name == "k")
    context = KernelContext(kernel, index, document.source, (3, 9))
    issues = context.types(context.typed_scenarios()[0]).issues
    assert [(i.kind, document.source[i.node.start_byte:i.node.end_byte].decode()) for i in issues] == \
        [("return-type", "relu_or_zero(x, n)")]


MATMUL_UNTYPED = '''import triton
import triton.language as tl


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def launch(a, b, c):
    M, K = a.shape
    _, N = b.shape
    mm[(triton.cdiv(M, 64),)](a, b, c, M, N, K, BLOCK_M=64, BLOCK_N=32, BLOCK_K=16)
'''


def _hover(source: str, line_text: str, column_text: str, recorded=None):
    document = Document(source)
    lines = source.splitlines()
    row = next(i for i, line in enumerate(lines) if line_text in line)
    column = lines[row].index(column_text)
    return name_types(document.root, document.source, index_module(document.root), (row, column), (3, 9), recorded)


def test_every_use_of_a_loop_carried_value_has_a_hover():
    """Issue 34: `acc += tl.dot(a, b)` with operands of unknown element type (the launcher's
    tensors come from outside) left the accumulator unknown after its loop, so `tl.store(...,
    acc)` had no hover. The carried value keeps its type (the compiler requires it); inside the
    loop the sum's shape shows even though its element type is unknown."""
    after = _hover(MATMUL_UNTYPED, "tl.store(", "acc)")
    assert after is not None and after.by_configuration[0][1] == "fp32[BLOCK_M=64, BLOCK_N=32]"
    inside = _hover(MATMUL_UNTYPED, "acc += tl.dot", "acc")
    assert inside is not None and inside.by_configuration[0][1] == "?[BLOCK_M=64, BLOCK_N=32]"
    operand = _hover(MATMUL_UNTYPED, "acc += tl.dot", "a, b")
    assert operand is not None and operand.by_configuration[0][1] == "?[BLOCK_M=64, BLOCK_K=16]"


def test_the_last_check_runs_launches_fill_in_what_the_source_leaves_unknown():
    """A library kernel whose launcher gets its tensors from outside and computes its block at
    run time: after a check run the hover has the element type and the block as launched, and
    says where they came from."""
    from tritonsmith.rules.types_at import RecordedLaunches

    source = MATMUL_UNTYPED.replace("BLOCK_M=64, BLOCK_N=32, BLOCK_K=16", "BLOCK_M=64, BLOCK_N=bn(N), BLOCK_K=16")
    before = _hover(source, "acc += tl.dot", "a, b")
    assert before is not None and before.by_configuration[0][1] == "?[BLOCK_M=64, BLOCK_K=16]"
    recorded = RecordedLaunches({"mm": {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}}, {"mm": {"BLOCK_N": 128}})
    a = _hover(source, "acc += tl.dot", "a, b", recorded)
    assert a is not None and a.by_configuration[0][1] == "fp16[BLOCK_M=64, BLOCK_K=16]"
    acc = _hover(source, "acc += tl.dot", "acc", recorded)
    assert acc is not None and acc.by_configuration[0][1] == "fp32[BLOCK_M=64, BLOCK_N=128]"
    assert "# as launched in the last check run: BLOCK_N=128 (at the check's sizes), a_ptr: *fp16" in acc.markdown()
