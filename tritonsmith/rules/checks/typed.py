"""Checks on inferred types and shapes (analysis/infer.py): what the compiler rejects once each
value's dtype and shape are known, in any of the kernel's launch configurations.

The interpreter records an `Issue` only when every fact it rests on is known (a shape dimension
that depends on an unknown constexpr, or a pointer whose element type no launch site shows,
decides nothing), so these checks are errors. Each check reports one kind of issue, once per
node; the message names the configuration when the kernel has several and only some clash.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..context import KernelContext, Scenario
from ..findings import Related, Span
from .registry import Hit, check

# Issue kind -> check name (the rule packs name the checks).
KINDS = {
    "broadcast": "typed_broadcast",
    "axis-range": "typed_axis_range",
    "branch-type": "typed_branch_type",
    "python-cast": "typed_python_cast",
    "load-non-pointer": "typed_load_non_pointer",
    "store-block-scalar-pointer": "typed_store_block_scalar_pointer",
    "dot-shape": "typed_dot_shape",
    "dot-small": "typed_dot_small",
    "dot-dtype": "typed_dot_dtype",
    "math-on-int": "typed_math_on_int",
    "bitcast-width": "typed_bitcast_width",
    "pointer-float": "typed_pointer_float",
    "histogram-float": "typed_histogram_float",
    "reshape-numel": "typed_reshape_numel",
    "trans-1d": "typed_trans_1d",
    "hint-arity": "typed_hint_arity",
    "undefined-name": "typed_undefined_name",
    "atomic-dtype": "typed_atomic_dtype",
    "int-range": "typed_int_range",
    "return-type": "typed_return_type",
    "demoted-constexpr": "typed_demoted_constexpr",
    "arange-int32": "typed_arange_int32",
}
# Kinds reported by a rule that also has a syntactic half (rules/checks/control_flow.py, types.py):
# "loop-type" (TS205), "int-nonrepresentable" (TS701), "float-bitwise" (TS703).


def typed_hits(ctx: KernelContext, kind: str) -> Iterator[Hit]:
    """The issues of `kind` across the kernel's scenarios, one hit per node (the first scenario
    that shows it; the configuration is named when it is not the kernel's defaults)."""
    seen: set[tuple[int, int]] = set()
    scenarios = ctx.typed_scenarios()
    for scenario in scenarios:
        for issue in ctx.types(scenario).issues:
            key = (issue.node.start_byte, issue.node.end_byte)
            if issue.kind != kind or key in seen or not ctx.in_body(issue.node):
                continue
            if issue.since is not None and ctx.version is not None and ctx.version < issue.since:
                continue  # a rejection newer than the Triton the rules are for
            seen.add(key)
            yield Hit(issue.node, issue.message + _where(scenario, len(scenarios)), _origin(scenario))


def _where(scenario: Scenario, count: int) -> str:
    if scenario.origin is None or count <= 1:
        return ""
    return f" (with the values of {scenario.label}, line {scenario.origin.start_point[0] + 1})"


def _origin(scenario: Scenario) -> list[Related]:
    if scenario.origin is None:
        return []
    return [Related(Span.of(scenario.origin), f"the constexpr values come from {scenario.label}")]


def _register(kind: str, name: str) -> None:
    def run(ctx: KernelContext) -> Iterator[Hit]:
        return typed_hits(ctx, kind)

    run.__name__ = name
    run.__doc__ = f"Inferred-type issues of kind {kind!r} (analysis/infer.py)."
    check(name, needles=_NEEDLES.get(name))(run)


# Pre-filters: a kind can only be found where its construct is written. (Not typed_return_type:
# the returns are in the helpers, whose text is not the kernel's.)
_NEEDLES: dict[str, tuple[bytes, ...]] = {
    "typed_axis_range": (b"axis",),
    "typed_branch_type": (b"if",),
    "typed_python_cast": (b"float(", b"int("),
    "typed_load_non_pointer": (b"load",),
    "typed_store_block_scalar_pointer": (b"store",),
    "typed_dot_shape": (b"dot",),
    "typed_dot_small": (b"dot",),
    "typed_dot_dtype": (b"dot",),
    "typed_math_on_int": (b"exp", b"log", b"sqrt", b"sin", b"cos", b"erf", b"floor", b"ceil"),
    "typed_bitcast_width": (b"bitcast",),
    "typed_histogram_float": (b"histogram",),
    "typed_reshape_numel": (b"reshape", b"view"),
    "typed_trans_1d": (b"trans", b"permute", b".T"),
    "typed_hint_arity": (b"multiple_of", b"max_contiguous", b"max_constancy"),
    "typed_atomic_dtype": (b"atomic_",),
    "typed_arange_int32": (b"arange",),
    "typed_demoted_constexpr": (b"arange", b"zeros", b"full", b"empty", b"reshape", b"view", b"broadcast_to",
                                b"static_range"),
}


for _kind, _name in KINDS.items():
    _register(_kind, _name)

