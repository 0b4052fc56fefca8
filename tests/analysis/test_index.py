"""The kernel index: which functions are Triton kernels, and what it records about each."""

from __future__ import annotations

import textwrap

import pytest

from tritonsmith.analysis.document import Document
from tritonsmith.analysis.index import ModuleIndex, index_module
from tritonsmith.analysis.syntax import text


def index(source: str) -> ModuleIndex:
    return index_module(Document(textwrap.dedent(source)).root)


def kernel_names(source: str) -> list[str]:
    return [k.name for k in index(source).kernels]


# -- kernel discovery ---------------------------------------------------------------------

KERNELS = {
    "triton.jit": """
        import triton

        @triton.jit
        def kernel(x):
            pass
    """,
    "bare jit from triton": """
        from triton import jit

        @jit
        def kernel(x):
            pass
    """,
    "aliased jit from triton": """
        from triton import jit as triton_jit

        @triton_jit
        def kernel(x):
            pass
    """,
    "triton imported as tt": """
        import triton as tt

        @tt.jit
        def kernel(x):
            pass
    """,
    "jit with arguments": """
        import triton

        @triton.jit(do_not_specialize=["n"])
        def kernel(x, n):
            pass
    """,
    "jit with empty call": """
        import triton

        @triton.jit()
        def kernel(x):
            pass
    """,
    "autotune and heuristics stacked": """
        import triton
        import triton.language as tl

        @triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=4)], key=["n"])
        @triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
        @triton.jit
        def kernel(x, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
            pass
    """,
    "project wrapper above jit": """
        import triton
        from .utils import libentry

        @libentry()
        @triton.jit
        def kernel(x):
            pass
    """,
    "module-level alias": """
        import triton

        my_jit = triton.jit

        @my_jit
        def kernel(x):
            pass
    """,
    "wrapper function returning triton.jit(fn)": """
        import triton

        def project_jit(fn):
            return triton.jit(fn)

        @project_jit
        def kernel(x):
            pass
    """,
    "wrapper function after leading blank lines and a comment": """


        # the module starts after these lines
        import triton

        def project_jit(fn):
            return triton.jit(fn)

        @project_jit
        def kernel(x):
            pass
    """,
    "triton.runtime.jit": """
        from triton.runtime import jit

        @jit
        def kernel(x):
            pass
    """,
    "import triton.language only": """
        import triton
        import triton.language as tl

        @triton.jit
        def kernel(x, BLOCK: tl.constexpr):
            pass
    """,
}


@pytest.mark.parametrize("source", KERNELS.values(), ids=KERNELS.keys())
def test_kernel_is_found(source):
    assert kernel_names(source) == ["kernel"]
    found = index(source).kernels[0]
    assert found.node.type == "function_definition"
    assert found.outer.type == "decorated_definition"
    assert text(found.jit_decorator).startswith("@")


NOT_KERNELS = {
    "cute.jit": """
        import cutlass
        import cutlass.cute as cute

        @cute.jit
        def not_kernel(x):
            pass
    """,
    "cute from cutlass": """
        from cutlass import cute

        @cute.jit
        def not_kernel(x):
            pass
    """,
    "tilelang.jit": """
        import tilelang

        @tilelang.jit(out_idx=[-1])
        def not_kernel(M, N):
            pass
    """,
    "gluon.jit": """
        import triton
        from triton.experimental import gluon

        @gluon.jit
        def not_kernel(x):
            pass
    """,
    "gluon jit imported by name": """
        from triton.experimental.gluon import jit

        @jit
        def not_kernel(x):
            pass
    """,
    "plain function": """
        import triton

        def not_kernel(x):
            return triton.cdiv(x, 2)
    """,
    "torch.jit.script": """
        import torch
        import triton

        @torch.jit.script
        def not_kernel(x):
            return x
    """,
    "jit from torch": """
        from torch import jit

        @jit.script
        def not_kernel(x):
            return x
    """,
    "other decorators only": """
        import functools
        import triton

        @functools.lru_cache
        @staticmethod
        def not_kernel(x):
            return x
    """,
    "numba jit": """
        from numba import jit

        @jit(nopython=True)
        def not_kernel(x):
            return x
    """,
}


@pytest.mark.parametrize("source", NOT_KERNELS.values(), ids=NOT_KERNELS.keys())
def test_other_decorators_are_not_kernels(source):
    assert kernel_names(source) == []


def test_mixed_file_finds_only_triton_kernels():
    source = """
        import torch
        import triton
        import triton.language as tl
        import cutlass.cute as cute
        from triton.experimental import gluon

        @cute.jit
        def a(x):
            pass

        @triton.jit
        def b(x):
            pass

        @gluon.jit
        def c(x):
            pass

        @torch.jit.script
        def d(x):
            return x

        @triton.jit
        def e(x):
            pass
    """
    assert kernel_names(source) == ["b", "e"]


def test_kernels_under_if_try_and_in_classes():
    source = """
        try:
            import triton
            import triton.language as tl
            HAS_TRITON = True
        except ImportError:
            HAS_TRITON = False

        if HAS_TRITON:
            @triton.jit
            def under_if(x, BLOCK: tl.constexpr):
                pass
        else:
            under_if = None

        if not HAS_TRITON:
            pass
        elif True:
            @triton.jit
            def under_elif(x):
                pass

        class Ops:
            @staticmethod
            @triton.jit
            def in_class(x):
                pass

            def launch(self, x):
                in_class[(1,)](x)

        with open(__file__):
            @triton.jit
            def under_with(x):
                pass
    """
    found = index(source)
    assert [k.name for k in found.kernels] == ["under_if", "under_elif", "in_class", "under_with"]
    assert found.kernel("under_if").constexpr_names == {"BLOCK"}
    assert len(found.kernel("in_class").launches) == 1
    assert found.kernel("in_class").outer.type == "decorated_definition"


def test_decorator_order_does_not_matter():
    source = """
        import triton
        from .utils import libentry

        @triton.jit
        @libentry()
        def kernel(x):
            pass
    """
    assert kernel_names(source) == ["kernel"]


def test_decorators_are_recorded_in_order():
    source = KERNELS["autotune and heuristics stacked"]
    kernel = index(source).kernels[0]
    assert [text(d).split("(")[0] for d in kernel.decorators] == [
        "@triton.autotune", "@triton.heuristics", "@triton.jit",
    ]
    assert text(kernel.jit_decorator) == "@triton.jit"


# -- parameters ---------------------------------------------------------------------------


def test_params_constexpr_annotations_and_defaults():
    source = """
        import triton
        import triton.language as tl
        import triton.language as language
        from triton.language import constexpr
        from triton.language import constexpr as cx

        @triton.jit
        def kernel(
            x_ptr,
            n,
            scale: float,
            A: tl.constexpr,
            B: triton.language.constexpr,
            C: constexpr,
            eps=1e-5,
            D: cx = 16,
            E: language.constexpr = 32,
            F: tl.constexpr = None,
            G: tl.int32 = 3,
        ):
            pass
    """
    kernel = index(source).kernels[0]
    params = {p.name: p for p in kernel.params}
    assert list(params) == ["x_ptr", "n", "scale", "A", "B", "C", "eps", "D", "E", "F", "G"]
    assert [p.index for p in kernel.params] == list(range(11))
    assert kernel.constexpr_names == {"A", "B", "C", "D", "E", "F"}
    assert params["x_ptr"].annotation is None and params["x_ptr"].default is None
    assert params["scale"].annotation == "float" and not params["scale"].is_constexpr
    assert text(params["eps"].default) == "1e-5" and params["eps"].annotation is None
    assert params["A"].annotation == "tl.constexpr" and params["A"].default is None
    assert text(params["D"].default) == "16"
    assert text(params["E"].default) == "32"
    assert text(params["F"].default) == "None"
    assert text(params["G"].default) == "3" and not params["G"].is_constexpr
    assert text(params["n"].node) == "n"
    assert kernel.param("C") is params["C"]
    assert kernel.param("missing") is None


def test_string_annotation_constexpr():
    """Triton reads the annotation as a string and tests `"constexpr" in annotation`, so a
    quoted annotation (or one under `from __future__ import annotations`) is constexpr too."""
    source = """
        import triton

        @triton.jit
        def kernel(x, BLOCK: "tl.constexpr", N: 'tl.constexpr' = 4):
            pass
    """
    assert index(source).kernels[0].constexpr_names == {"BLOCK", "N"}


def test_splat_and_separator_params_do_not_break_indexing():
    source = """
        import triton
        import triton.language as tl

        @triton.jit
        def kernel(x, /, y, *, BLOCK: tl.constexpr):
            pass
    """
    kernel = index(source).kernels[0]
    assert [p.name for p in kernel.params] == ["x", "y", "BLOCK"]
    assert kernel.constexpr_names == {"BLOCK"}


# -- autotune and heuristics --------------------------------------------------------------


def config_values(kernel):
    return [
        ({k: text(v) for k, v in c.values.items()}, {k: text(v) for k, v in c.options.items()})
        for c in kernel.autotune.configs
    ]


def test_autotune_configs_inline():
    source = """
        import triton
        import triton.language as tl

        @triton.autotune(
            configs=[
                triton.Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_warps=4),
                triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3),
                # a comment between configs
                triton.Config(kwargs={"BLOCK_M": 16, "BLOCK_N": 16}, num_warps=2),
            ],
            key=["M", "N"],
            reset_to_zero=["out_ptr"],
        )
        @triton.jit
        def kernel(out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
            pass
    """
    kernel = index(source).kernels[0]
    assert kernel.autotune is not None and kernel.autotune.configs_known
    assert config_values(kernel) == [
        ({"BLOCK_M": "64", "BLOCK_N": "32"}, {"num_warps": "4"}),
        ({"BLOCK_M": "128", "BLOCK_N": "64"}, {"num_warps": "8", "num_stages": "3"}),
        ({"BLOCK_M": "16", "BLOCK_N": "16"}, {"num_warps": "2"}),
    ]
    assert [name for name, _ in kernel.autotune.key] == ["M", "N"]
    assert [text(node) for _, node in kernel.autotune.key] == ['"M"', '"N"']
    assert kernel.autotune.reset_to_zero == ["out_ptr"]
    assert text(kernel.autotune.configs[0].key_nodes["BLOCK_M"]) == '"BLOCK_M"'


def test_autotune_configs_from_module_variables():
    source = """
        import triton
        import triton.language as tl
        from triton import Config

        CONFIGS = [
            Config({"BLOCK": 64}, num_warps=2),
            triton.Config({"BLOCK": 256}, num_warps=8, num_stages=4),
        ]
        KEY = ["n_elements"]

        @triton.autotune(CONFIGS, KEY)
        @triton.jit
        def kernel(x, n_elements, BLOCK: tl.constexpr):
            pass
    """
    kernel = index(source).kernels[0]
    assert kernel.autotune.configs_known
    assert config_values(kernel) == [
        ({"BLOCK": "64"}, {"num_warps": "2"}),
        ({"BLOCK": "256"}, {"num_warps": "8", "num_stages": "4"}),
    ]
    assert [name for name, _ in kernel.autotune.key] == ["n_elements"]


def test_autotune_configs_built_at_run_time_are_unknown():
    source = """
        import triton
        import triton.language as tl

        def get_configs():
            return [triton.Config({"BLOCK": b}) for b in (64, 128)]

        @triton.autotune(configs=get_configs(), key=["n"])
        @triton.jit
        def a(x, n, BLOCK: tl.constexpr):
            pass

        @triton.autotune(configs=[triton.Config({"BLOCK": 64})] + EXTRA, key=["n"])
        @triton.jit
        def b(x, n, BLOCK: tl.constexpr):
            pass

        @triton.autotune(configs=[make_config(64), triton.Config({"BLOCK": 128})], key=["n"])
        @triton.jit
        def c(x, n, BLOCK: tl.constexpr):
            pass
    """
    found = index(source)
    for name in "abc":
        assert found.kernel(name).autotune is not None
        assert not found.kernel(name).autotune.configs_known, name
    assert config_values(found.kernel("c")) == [({"BLOCK": "128"}, {})]


def test_heuristics_values():
    source = """
        import triton
        import triton.language as tl

        HEURISTICS = {"EVEN_N": lambda args: args["N"] % args["BLOCK"] == 0}

        @triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["N"])})
        @triton.heuristics(values=HEURISTICS)
        @triton.jit
        def kernel(x, N, BLOCK: tl.constexpr, EVEN_N: tl.constexpr):
            pass
    """
    kernel = index(source).kernels[0]
    assert set(kernel.heuristics) == {"BLOCK", "EVEN_N"}
    assert text(kernel.heuristics["EVEN_N"]).startswith("lambda args:")
    assert kernel.heuristics_node is not None
    assert kernel.autotune is None


# -- launch sites and direct calls --------------------------------------------------------


def test_launch_sites_with_grid_positional_and_keywords():
    source = """
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def add_kernel(a_ptr, b_ptr, n, BLOCK: tl.constexpr):
            pass

        def add(a, b):
            n = a.numel()
            grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
            add_kernel[grid](a, b, n, BLOCK=128)
            add_kernel[(triton.cdiv(n, 256),)](a, b, n=n, BLOCK=256, num_warps=4)
            return a

        class Op:
            @torch.no_grad()
            def forward(self, a, b):
                add_kernel[(1,)](a, b, 1, BLOCK=64)
    """
    kernel = index(source).kernels[0]
    assert len(kernel.launches) == 3
    first, second, third = kernel.launches
    assert text(first.grid) == "grid"
    assert [text(a) for a in first.positional] == ["a", "b", "n"]
    assert {k: text(v) for k, (_, v) in first.keywords.items()} == {"BLOCK": "128"}
    assert text(first.keywords["BLOCK"][0]) == "BLOCK=128"
    assert text(second.grid) == "(triton.cdiv(n, 256),)"
    assert {k: text(v) for k, (_, v) in second.keywords.items()} == {
        "n": "n", "BLOCK": "256", "num_warps": "4",
    }
    assert text(third.node) == "add_kernel[(1,)](a, b, 1, BLOCK=64)"
    assert kernel.direct_calls == []


def test_grid_lambda_launch():
    source = """
        import triton
        import triton.language as tl

        @triton.jit
        def mm(a, b, c, M, N, BM: tl.constexpr, BN: tl.constexpr):
            pass

        def matmul(a, b, c, M, N):
            mm[lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)](
                a, b, c, M, N, BM=64, BN=64,
            )
    """
    launch = index(source).kernels[0].launches[0]
    assert launch.grid.type == "lambda"
    assert len(launch.positional) == 5 and set(launch.keywords) == {"BM", "BN"}


def test_direct_calls_from_host_code():
    source = """
        import triton

        @triton.jit
        def helper(x):
            return x

        @triton.jit
        def kernel(x):
            helper(x)  # a call inside a kernel is not a host call

        def host(x):
            return helper(x)

        if __name__ == "__main__":
            kernel[(1,)](1)
            helper(2)
    """
    found = index(source)
    helper, kernel = found.kernel("helper"), found.kernel("kernel")
    assert [text(c.node) for c in helper.direct_calls] == ["helper(x)", "helper(2)"]
    assert all(c.grid is None for c in helper.direct_calls)
    assert helper.launches == []
    assert [text(c.node) for c in kernel.launches] == ["kernel[(1,)](1)"]


def test_launches_of_unknown_names_are_ignored():
    source = """
        import triton

        @triton.jit
        def kernel(x):
            pass

        def host(x, other):
            other[(1,)](x)
            x[0](1)
            print(x)
    """
    kernel = index(source).kernels[0]
    assert kernel.launches == [] and kernel.direct_calls == []


# -- imports ------------------------------------------------------------------------------


def test_imports_resolve_to_qualified_names():
    source = """
        import os.path
        import triton
        import triton.language as tl
        from triton import language as tlang
        from triton.language.extra import libdevice
        from triton.language.extra.cuda.libdevice import pow
        from triton.language.extra.hip.libdevice import tanh as hip_tanh
        from triton.language.extra.cuda import libdevice as cuda_libdevice
        from triton.language.extra.libdevice import exp2
        from . import local_module
        from .utils import libentry
    """
    names = index(source).imports.names
    assert names["os"] == "os"
    assert names["triton"] == "triton"
    assert names["tl"] == "triton.language"
    assert names["tlang"] == "triton.language"
    assert names["libdevice"] == "triton.language.extra.libdevice"
    assert names["pow"] == "triton.language.extra.libdevice.pow"
    assert names["hip_tanh"] == "triton.language.extra.libdevice.tanh"
    assert names["cuda_libdevice"] == "triton.language.extra.libdevice"
    assert names["exp2"] == "triton.language.extra.libdevice.exp2"
    assert "local_module" not in names and "libentry" not in names


def test_qualify_names_in_kernel_code():
    source = """
        import triton.language as tl
        from triton.language.extra.cuda import libdevice

        x = tl.arange
        y = libdevice.pow
        z = abs
        w = tl.math.exp
    """
    found = index(source)
    qualify = found.imports.qualify
    assert qualify(found.globals["x"]) == "triton.language.arange"
    assert qualify(found.globals["y"]) == "triton.language.extra.libdevice.pow"
    assert qualify(found.globals["z"]) == "abs"
    assert qualify(found.globals["w"]) == "triton.language.math.exp"
    assert found.imports.is_triton("triton.language.math.exp", "exp")
    assert found.imports.is_triton("triton.language.core.arange", "arange")
    assert not found.imports.is_triton("numpy.arange", "arange")
    assert not found.imports.is_triton(None, "arange")


def test_module_functions_and_globals():
    source = """
        import triton
        import triton.language as tl

        BLOCK = tl.constexpr(128)
        SIZE: int = 4
        ANNOTATED: int

        def host():
            pass

        @triton.jit
        def kernel(x):
            pass
    """
    found = index(source)
    assert set(found.functions) == {"host", "kernel"}
    assert text(found.globals["BLOCK"]) == "tl.constexpr(128)"
    assert text(found.globals["SIZE"]) == "4"
    assert "ANNOTATED" in found.globals
    assert found.jit_names == {"kernel"}


def test_empty_and_import_only_modules():
    assert index("").kernels == []
    assert index("import triton\n").kernels == []
    assert index("@triton.jit\n").kernels == []  # a decorator with nothing under it


def test_launches_of_names_that_prefix_others_unicode_names_and_spaced_subscripts():
    """One pattern finds every called name (linear in the file, however many kernels it has);
    the kernels are picked out by exact name."""
    source = """
        import triton

        @triton.jit
        def k(x):
            pass

        @triton.jit
        def k2(x):
            pass

        @triton.jit
        def nöm(x):
            pass

        def host(x, ops):
            k2 [(1,)](x)
            k[(1,)] (x)
            nöm[(2,)](x)
            ops.k[(1,)](x)  # an attribute: not this module's kernel
            kk[(1,)](x)
    """
    found = index(source)
    assert [text(c.node) for c in found.kernel("k").launches] == ["k[(1,)] (x)"]
    assert [text(c.node) for c in found.kernel("k2").launches] == ["k2 [(1,)](x)"]
    assert [text(c.node) for c in found.kernel("nöm").launches] == ["nöm[(2,)](x)"]

