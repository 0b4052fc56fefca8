"""The registry the check modules add to (`@check`, `@rule_check`), what a check yields (`Hit`),
the helpers that build a hit's fix, and each check's pre-filter (`NEEDLES`). The package imports
every check module, so importing `tritonsmith.rules.checks` fills the registry."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tree_sitter import Node

from ..context import KernelContext
from ..findings import Edit, Fix, Related, Span
from ..model import Rule

__all__ = ["CHECKS", "NEEDLES", "RULE_CHECKS", "Check", "Hit", "RuleCheck", "check", "did_you_mean", "edit", "fix",
           "related", "rule_check"]


@dataclass
class Hit:
    """One violation found by a check: where, optionally what exactly, and how to fix it."""

    node: Node | Span
    message: str | None = None
    related: list[Related] = field(default_factory=list)
    fix: Fix | None = None
    secondary: bool = False  # another place of a mistake another hit reports (`Finding.secondary`)


Check = Callable[[KernelContext], Iterable[Hit]]
CHECKS: dict[str, Check] = {}


def check(name: str) -> Callable[[Check], Check]:
    def register(function: Check) -> Check:
        if name in CHECKS:
            raise ValueError(f"duplicate check name {name}")
        CHECKS[name] = function
        return function

    return register


# A generic check bound to one rule: (check, pre-filter needles or None); raises ValueError with
# the reason when the rule cannot be checked this way.
RuleCheck = Callable[[Rule], "tuple[Check, tuple[bytes, ...] | None]"]
RULE_CHECKS: dict[str, RuleCheck] = {}


def rule_check(name: str) -> Callable[[RuleCheck], RuleCheck]:
    def register(function: RuleCheck) -> RuleCheck:
        if name in CHECKS or name in RULE_CHECKS:
            raise ValueError(f"duplicate check name {name}")
        RULE_CHECKS[name] = function
        return function

    return register


def edit(node: Node | Span, new_text: str) -> Edit:
    return Edit(node if isinstance(node, Span) else Span.of(node), new_text)


def fix(title: str, *edits: Edit) -> Fix:
    return Fix(title, tuple(edits))


def did_you_mean(key_node: Node, key: str, candidates: Iterable[str]) -> tuple[str, Fix | None]:
    """For a misspelt name in a string key (`meta["BLOCK_SZE"]`): a "; did you mean ...?" hint
    and a fix that swaps in the closest candidate, or ("", None) when nothing is close."""
    close = difflib.get_close_matches(key, sorted(candidates), n=1, cutoff=0.6)
    if not close:
        return "", None
    raw = key_node.text or b""
    quote = '"' if raw.endswith(b'"') else "'"
    return f"; did you mean '{close[0]}'?", fix(f"Use '{close[0]}'", edit(key_node, f"{quote}{close[0]}{quote}"))


def related(node: Node | None, message: str) -> list[Related]:
    return [] if node is None else [Related(Span.of(node), message)]


# A pre-filter that keeps checking fast: a check listed here can only find something when one
# of its byte strings occurs in the kernel's text, its launch sites or the module's imports
# (which catch `from triton.language import arange as ar`). Unlisted checks always run.
NEEDLES: dict[str, tuple[bytes, ...]] = {
    "arange_pow2": (b"arange",),
    "arange_order": (b"arange",),
    "arange_signature": (b"arange",),
    "arange_constexpr": (b"arange", b"zeros", b"full"),
    "shape_pow2": (b"zeros", b"full", b"reshape", b"make_block_ptr"),
    "shape_sequence": (b"zeros", b"full"),
    "max_numel": (b"zeros", b"full", b"reshape", b"make_block_ptr", b"arange"),
    "dtype_argument": (b"zeros", b"full", b"cast", b".to"),
    "static_assert_runtime": (b"static_assert",),
    "local_constexpr_runtime": (b"constexpr",),
    "break_continue": (b"break", b"continue"),
    "return_in_loop": (b"return",),
    "launched_kernel_returns": (b"return",),
    "if_block_tensor": (b"if", b"while"),
    "loop_iterator": (b"for",),
    "loop_carried_type": (b"for", b"while"),
    "constexpr_reassigned_in_loop": (b"for", b"while"),
    "comprehension": (b"for",),
    "static_range_runtime": (b"static_range",),
    "loop_else": (b"else",),
    "try_statement": (b"try",),
    "lambda_expression": (b"lambda",),
    "with_statement": (b"with",),
    "walrus": (b":=",),
    "dict_set_literal": (b"{",),
    "block_index": (b"[",),
    "pow_on_tensor": (b"**",),
    "matmul_operator": (b"@",),
    "fstring_runtime": (b'f"', b"f'", b'F"', b"F'"),
    "host_lib_on_tensor": (b"math", b"torch", b"numpy", b"np."),
    "host_helper_on_runtime": (b"cdiv", b"next_power_of_2"),
    "program_id_axis": (b"program_id", b"num_programs"),
    "unused_advance": (b"advance",),
    "dot_bf16_out": (b"out_dtype",),
    "dot_precision_args": (b"input_precision", b"allow_tf32"),
    "dot_rank": (b"dot",),
    "num_warps_pow2": (b"num_warps",),
    "num_warps_too_many": (b"num_warps",),
    "print_in_kernel": (b"print",),
    "device_assert_noop": (b"assert",),
    "other_without_mask": (b"other",),
    "masked_load_into_reduction": (b"mask",),
    "mask_not_bool": (b"mask",),
    "boundary_check_on_pointer_tensor": (b"boundary_check", b"padding_option"),
    "block_pointer_removed": (b"make_block_ptr", b"advance"),
    "cache_eviction_strings": (b"cache_modifier", b"eviction_policy"),
    "unmasked_store_out_of_bounds": (b"store",),
    "cat_can_reorder": (b"cat",),
    "view_deprecated": (b"view",),
    "reshape_to_scalar": (b"reshape",),
    "permute_dims": (b"permute", b"trans"),
    "atomic_sem_scope": (b"atomic",),
    "autotune_launch_conflict": (b"autotune",),
    "autotune_key_not_param": (b"autotune",),
    "autotune_inplace": (b"autotune",),
    "config_key_not_param": (b"Config",),
    "heuristics_unknown_arg": (b"heuristics",),
    "floordiv_float": (b"//",),
    "bitwise_on_float": (b"&", b"|", b"^", b"~", b"<<", b">>"),
}
