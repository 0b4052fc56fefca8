"""Who did the work: the judgement on a candidate's work attribution (server side; pure
Python, no torch).

The candidate worker records what `forward` executed at the dispatcher (attribution.py): the
Triton launches, and the PyTorch compute operations on data derived from the inputs. The
reference worker records the reference's own compute operations. This module decides, under a
policy, whether the Triton kernels did the work, and writes the one-line account the verdict
shows ("Triton computes: softmax_kernel ×1; PyTorch computes: nothing").

Policies (KernelBench's own static policy is the model: PyTorch compute is a warning there,
"up to the user" to make strict):

- "auto" (default): strict when the task is a single operator (the reference runs one kind of
  compute operation, or the file is a KernelBench level-1 problem), except for a finish on
  reduced data (no operand above 1/16 of the inputs: a mean from Triton's per-channel sums); otherwise PyTorch may
  compute part of the task, as KernelBench level-2/3 solutions keep a GEMM or a convolution in
  PyTorch and fuse the rest, and its share is reported;
- "strict" (`none`): no PyTorch compute on input-derived data;
- "allow" (`any`): PyTorch compute is reported, never rejected by itself;
- a list of operator names: those are allowed, any other rejects.

Under every policy the Triton kernels must do input-dependent work: a run in which every
launched kernel is a token (reads nothing of the inputs, writes nothing, only copies an
argument, or writes the same values for two different input draws) is rejected with the
kernels named, and so is a run in which PyTorch computes every operator of the reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["POLICIES", "WorkJudgement", "judge_work", "parse_policy"]

POLICIES = ("auto", "strict", "allow")
_EXPLOIT_1 = "(exploit 1: PyTorch does the work instead of the kernel)"
FINISH_OPERAND = 16
"""Under "auto", a single-operator task tolerates PyTorch compute that finishes on reduced data:
no operand larger than 1/16 of the inputs' elements, and at most a quarter of their elements'
worth of work in all (a mean from Triton's per-channel sums; never the operator itself, nor the
operator done a row at a time)."""


@dataclass
class WorkJudgement:
    """The outcome: `error` rejects the candidate; `summary` is the account of who computed
    what; `notes` are what the verdict should also say (precision changes, token kernels
    beside real ones)."""

    error: str | None
    summary: str
    policy: str
    notes: list[str] = field(default_factory=list)


def parse_policy(value: str | Sequence[str] | None) -> str | tuple[str, ...]:
    """"auto" | "strict" | "allow" | a tuple of allowed operator names, from a setting, a flag
    or a file directive ("none" = strict, "any" = allow, "a, b" = a list)."""
    if value is None:
        return "auto"
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("", "auto", "default"):
            return "auto"
        if word in ("none", "strict", "triton-only"):
            return "strict"
        if word in ("any", "all", "allow"):
            return "allow"
        value = [part for part in word.replace(";", ",").split(",")]
    names = tuple(sorted({display(str(v).strip()) for v in value if str(v).strip()}))
    return names if names else "strict"


def display(op: str) -> str:
    """An aten name as a user knows it: `_softmax` -> `softmax`, `convolution` stays."""
    return op.lstrip("_").removesuffix("_") or op


def _share(torch_work: int, triton_work: int) -> str:
    total = torch_work + triton_work
    if total <= 0 or torch_work <= 0:
        return ""
    return f" (~{100 * torch_work / total:.0f}% of the recorded work)"


def _finish(attribution: Mapping[str, Any], torch_work: int) -> bool:
    """Whether the PyTorch compute only finishes on data the kernels reduced (FINISH_OPERAND)."""
    inputs = int(attribution.get("input_elements") or 0)
    largest = attribution.get("largest_torch_operand")
    return inputs > 0 and largest is not None and int(largest) * FINISH_OPERAND <= inputs \
        and torch_work * 4 <= inputs


def judge_work(attribution: Mapping[str, Any], reference_ops: Mapping[str, int], *,
               policy: str | tuple[str, ...] = "auto", single_operator: bool | None = None,
               identity_ops: Mapping[str, int] | None = None) -> WorkJudgement:
    """Judge one candidate's attribution (the candidate job's `attribution` payload) against
    the reference's compute operations.

    Args:
        single_operator: whether the task is one operator (a KernelBench level-1 path: True;
            a harness, which is a fusion task unless it says otherwise: False); None decides
            by the reference's record (one kind of compute operation: a single operator).
        identity_ops: the reference's compute operations that only moved values at these sizes
            (an average pool over a 1×1 map): a kernel that only copies may be doing their work.
    """
    kernels: dict[str, dict[str, Any]] = dict(attribution.get("triton") or {})
    torch_ops: dict[str, dict[str, Any]] = dict(attribution.get("torch") or {})
    tokens: dict[str, str] = dict(attribution.get("tokens") or {})
    # Only an identity op PyTorch did not run itself can be the one the copying kernel stands in for.
    ran = {display(op) for op in attribution.get("torch") or {}}
    excused = sorted({display(op) for op in identity_ops or {}} - ran)
    copying = [name for name, why in tokens.items() if why.startswith("only copies")] if excused else []
    for name in copying:  # the checked sizes made the reference's own op a copy
        del tokens[name]
    casts: dict[str, int] = dict(attribution.get("casts") or {})
    reference = {display(name) for name in reference_ops}
    if single_operator is None:
        single_operator = len(reference) == 1
    automatic = policy == "auto"
    if policy == "auto":
        policy = "strict" if single_operator else "allow"
    shown_policy = policy if isinstance(policy, str) else "allowed: " + ", ".join(policy)

    triton_text = ", ".join(f"{name} ×{entry.get('launches', 0)}" for name, entry in sorted(kernels.items())) or "nothing"
    torch_work = sum(int(entry.get("work", 0)) for entry in torch_ops.values())
    triton_work = sum(int(entry.get("elements", 0)) for name, entry in kernels.items() if name not in tokens)
    torch_text = ", ".join(f"{display(name)} ×{entry.get('count', 0)}" for name, entry in sorted(torch_ops.items()))
    summary = f"Triton computes: {triton_text}; PyTorch computes: {torch_text or 'nothing'}"
    summary += _share(torch_work, triton_work)
    notes = [f"precision change in PyTorch: {change} ×{count} (judged against the tolerance)"
             for change, count in sorted(casts.items())]
    notes += [f"kernel {name} only copies at the checked sizes, as the reference's {', '.join(excused)} does there "
              "(the sizes make it an identity); larger sizes would show its arithmetic" for name in sorted(copying)]

    def rejected(error: str) -> WorkJudgement:
        return WorkJudgement(error, summary, shown_policy, notes)

    computed = {display(name) for name in torch_ops}
    if torch_ops and policy == "strict" and automatic and _finish(attribution, torch_work):
        notes.append(f"PyTorch finishes on reduced data: {torch_text}{_share(torch_work, triton_work)}; "
                     "allowed for a single-operator task (no operand above 1/16 of the inputs; torchOps=strict "
                     "rejects it)")
        torch_ops = {}
    if torch_ops and policy == "strict":
        reason = "the task is a single operator" if single_operator else "the policy allows no PyTorch compute"
        return rejected(f"PyTorch computes on the inputs: {torch_text} ({reason}"
                        f"{': ' + ', '.join(sorted(reference)) if reference else ''}; the Triton kernels must "
                        f"compute it) {_EXPLOIT_1}")
    if torch_ops and isinstance(policy, tuple):
        outside = sorted(computed - set(policy))
        if outside:
            return rejected(f"PyTorch computes {', '.join(outside)} on the inputs, which the policy does not "
                            f"allow (allowed: {', '.join(policy) or 'none'}) {_EXPLOIT_1}")
    real = [name for name in kernels if name not in tokens]
    if kernels and not real:
        named = "; ".join(f"{name} {why}" for name, why in sorted(tokens.items()))
        return rejected(f"no Triton kernel does input-dependent work: {named} "
                        "(token kernel: launched for show while other code computes the result)")
    if reference and torch_ops and reference <= computed:
        return rejected(f"PyTorch computes every operator of the reference ({', '.join(sorted(reference))}): "
                        f"the Triton kernels replace none of it {_EXPLOIT_1}")
    for name, why in sorted(tokens.items()):
        notes.append(f"kernel {name} {why}; other kernels do the work")
    return WorkJudgement(None, summary, shown_policy, notes)
