"""The LLM proposers' prompts (AdaExplore's proposer, reviser and tuner) and their parsers.

Every prompt is a `Prompt`: stable system blocks, then one per-step user message. The system
blocks are the same for every call of a search (Triton guidance; then the common pitfalls,
demonstrations and the task), so a provider can cache them; what changes from step to step (the
refinement chain with its execution feedback, the kernel pool, the reviser's advice, the output
format) is in the user message.

    regenerate_prompt   a large step: the Kernel Pool, "outperform them all", a whole new file
    reviser_prompt      a small step's first call: the 1-3 most important improvements
    tuner_prompt        a small step's second call: `<old_str_i>/<new_str_i>` edits
    parse_edits         the tuner's answer -> `Edit`s
    parse_file          a large step's answer -> the file in its ```python block

Builders are pure functions of a `StepContext`; parsers raise `ProposalError` with a one-line
reason on malformed answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .model import Edit, ProposalError, StepContext, Task

__all__ = [
    "FIX_OR_IMPROVE",
    "PITFALLS_HEADING",
    "Prompt",
    "demonstrations_block",
    "parse_edits",
    "parse_file",
    "pitfalls_block",
    "regenerate_prompt",
    "reviser_prompt",
    "system_blocks",
    "task_block",
    "tuner_prompt",
]

PITFALLS_HEADING = "## Common Pitfalls (from previous optimization attempts)"

FIX_OR_IMPROVE = (
    "None of the kernels above is correct yet. First fix what the feedback reports (the compile "
    "error or the verification failure) with the smallest change that makes the kernel correct; "
    "if the fix is clear and cheap, also improve its performance."
)


@dataclass(frozen=True)
class Prompt:
    """One request: cacheable system blocks (stable within a search) and the step's message."""

    system: tuple[str, ...]
    user: str

    @property
    def system_text(self) -> str:
        """The system blocks as one text, for APIs without block-level caching."""
        return "\n\n".join(block for block in self.system if block)


GUIDANCE = """\
You are an expert in writing fast, correct Triton GPU kernels. You improve one kernel in a \
user's Python file. Every candidate you write is compiled, verified against a reference with \
randomised inputs at several sizes, and timed; only verified kernels count, and a faster \
verified kernel is better.

What you may change: the kernel, its launcher (grid, block sizes, num_warps, num_stages), its \
autotune configs and heuristics, its jit helpers. You may fuse operations, change the algorithm, \
reorder arithmetic and change the tiling, as long as the results stay within tolerance.

What must stay: the file's public names and signatures that the verification calls (the \
launcher, `Model`, `ModelNew`, `get_inputs`, `get_init_inputs`, harness functions), imports \
the file needs, and the meaning of every output. The verification detects shortcuts: computing \
the result with PyTorch instead of Triton, caching or replaying outputs, editing the inputs, \
special-casing the test sizes, or catching errors to fall back. Do not attempt any of them.

Triton facts that matter:
- Block sizes and other shape parameters must be `tl.constexpr`; `tl.arange` bounds must be \
powers of two (mask the tail with `mask=` and `other=` on `tl.load`, `mask=` on `tl.store`).
- `tl.dot` needs each dimension >= 16; accumulate in `tl.float32` and cast on store.
- Inside a kernel there is no `break`, `continue`, `return` in a loop, recursion, Python lists \
of tensors, or calls to Python/torch functions; `tl.float32` is a dtype, not a function \
(use `x.to(tl.float32)`).
- Memory traffic usually dominates: fuse elementwise work into the producer, keep loads \
coalesced and contiguous along the last axis, reuse loaded tiles, avoid re-reading inputs.
- Occupancy: registers and shared memory per program bound how many programs run per SM; \
large tiles with many stages can spill registers or exceed shared memory.
- Prefer `@triton.autotune` over a few good configs to a single guess, keyed on the sizes.

A small example of the style expected:

```python
import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (1024, 2048) for w in (4, 8)],
    key=["n"],
)
@triton.jit
def scale_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x * alpha + y, mask=mask)


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    scale_add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n, alpha)
    return out
```"""


def pitfalls_block(pitfalls: tuple[str, ...] | list[str]) -> str:
    """AdaExplore's block: the heading, one sentence, then the rules one per line ("" if none)."""
    rules = [rule.strip() for rule in pitfalls if rule.strip()]
    if not rules:
        return ""
    lines = [
        PITFALLS_HEADING,
        "Avoid these patterns: each of them broke kernels in earlier attempts (most relevant first).",
    ]
    lines += [f"- {rule}" for rule in rules]
    return "\n".join(lines)


def demonstrations_block(demonstrations: tuple[str, ...] | list[str]) -> str:
    """Verified kernels from the experience memory, hardest-won first ("" if none)."""
    demos = [demo.strip() for demo in demonstrations if demo.strip()]
    if not demos:
        return ""
    parts = [
        "## Verified examples from earlier searches",
        "These kernels passed the same kind of verification; reuse their techniques where they fit.",
    ]
    for i, demo in enumerate(demos, 1):
        parts.append(f"### Example {i}\n{_fenced(demo)}")
    return "\n\n".join(parts)


def _describe_spec(task: Task) -> str:
    if task.spec.startswith("harness:"):
        launcher = task.spec.split(":", 1)[1]
        return (
            f"the file's own harness for launcher `{launcher}`: keep `{launcher}`'s name and "
            "signature and the harness functions unchanged"
        )
    if task.spec == "kernelbench":
        return (
            "KernelBench format: `ModelNew` must match `Model` on `get_inputs()`; keep `Model`, "
            "`get_inputs` and `get_init_inputs` unchanged and make `ModelNew` use Triton kernels"
        )
    if task.spec == "oracle":
        return (
            "the original kernel's outputs are the reference: keep the launcher's name and "
            "signature, and compute the same results"
        )
    return task.spec


def task_block(task: Task) -> str:
    """The task: kernel, file, verification, target GPU facts and the original file."""
    target = task.target + (f" ({task.target_facts})" if task.target_facts else "")
    if task.device == "interpreter":
        where = (
            "Triton's interpreter on the CPU (no GPU here). Timings are interpreter timings: "
            "they fall with fewer program instances (larger blocks) and fewer Python-level "
            "operations; GPU-only effects (warps, stages, coalescing) do not show"
        )
    else:
        where = "the GPU, timed with CUDA events"
    return "\n".join([
        "## Task",
        f"Make the Triton kernel `{task.kernel}` in `{task.path}` faster.",
        f"- Target: {target}",
        f"- Runs on: {where}",
        f"- Correctness: {_describe_spec(task)}",
        "",
        "The file as it was when the search started:",
        _fenced(task.source),
    ])


def system_blocks(context: StepContext) -> tuple[str, ...]:
    """The stable, cacheable part: guidance, then pitfalls + demonstrations + task."""
    stable = [
        pitfalls_block(context.pitfalls),
        demonstrations_block(context.demonstrations),
        task_block(context.task),
    ]
    return (GUIDANCE, "\n\n".join(part for part in stable if part))


def _fenced(source: str) -> str:
    fence = "````" if "```" in source else "```"
    return f"{fence}python\n{source.rstrip()}\n{fence}"


def _chain_section(context: StepContext) -> str:
    chain = context.chain
    parts = [
        "## Refinement history (oldest first)",
        "Each kernel below is the previous one after a small change, with what evaluating it "
        "measured.",
    ]
    for i, (source, evaluation) in enumerate(chain, 1):
        label = "current kernel" if i == len(chain) else "earlier kernel"
        parts.append(
            f"### Kernel {i} of {len(chain)} ({label})\nFeedback: {evaluation.feedback()}\n"
            f"{_fenced(source)}"
        )
    return "\n\n".join(parts)


def reviser_prompt(context: StepContext) -> Prompt:
    """The reviser: read the chain and its feedback, name the 1-3 most important improvements."""
    user = "\n\n".join([
        _chain_section(context),
        "## Your job\n"
        "Suggest only the 1-3 most important improvements to the current kernel (the last one), "
        "most promising first. For each, one or two sentences: what to change and why it should "
        "be faster or fix the failure, plus any tip that avoids a pitfall. Base them on the "
        "feedback and the timings above. Do not write code or a full kernel.",
    ])
    return Prompt(system=system_blocks(context), user=user)


TUNER_FORMAT = """\
## Output format
Answer only with edit blocks that are applied, in order, as exact text replacements to the \
current kernel's file (the last one above):

<reasoning_1>why this change helps (one or two sentences)</reasoning_1>
<old_str_1>
exact text copied from the current file
</old_str_1>
<new_str_1>
the replacement text
</new_str_1>

Number the blocks 1, 2, 3, ... Each old_str must occur exactly once in the file at that point \
(copy it character for character, indentation included, with enough lines to be unique). Prefer \
a few small edits to one large one; do not repeat the whole file."""


def tuner_prompt(context: StepContext, advice: str | None = None) -> Prompt:
    """The tuner: edits to the last kernel of the chain, guided by the reviser's advice."""
    parts = [_chain_section(context)]
    if advice:
        parts.append(f"## What to change\n{advice.strip()}")
    parts.append(
        "## Your job\nImprove the current kernel with small, exact edits"
        + (" that carry out the changes above." if advice else ".")
    )
    parts.append(TUNER_FORMAT)
    return Prompt(system=system_blocks(context), user="\n\n".join(parts))


REGENERATE_FORMAT = """\
## Output format
First a short plan (a few sentences: the algorithm, the tiling, what makes it faster). Then the \
complete new file in one ```python fenced block: it replaces the user's file as a whole, so it \
must include every import, helper, launcher and harness function the file needs."""


def regenerate_prompt(context: StepContext) -> Prompt:
    """AdaExplore's proposer: a complete rewrite seeded by the Kernel Pool."""
    parts: list[str] = []
    if context.pool:
        parts.append(
            "## Kernel Pool\nVerified kernels found so far in this search, with what evaluating "
            "them measured. Write a new kernel that outperforms them all: a different algorithm, "
            "fusion, tiling or memory layout is welcome, not just different constants."
        )
        for i, entry in enumerate(context.pool, 1):
            parts.append(
                f"### Pool kernel {i}\nFeedback: {entry.evaluation.feedback()}\n"
                f"{_fenced(entry.source)}"
            )
    else:
        parts.append(
            "## Kernel Pool\nNo verified kernel yet in this search. Write a correct kernel that "
            "is faster than the original file above; a different algorithm, fusion or tiling is "
            "welcome."
        )
    parts.append(REGENERATE_FORMAT)
    return Prompt(system=system_blocks(context), user="\n\n".join(parts))


def repair_prompt(context: StepContext, source: str, violations: list[str]) -> Prompt:
    """The guardian's one chance: the candidate breaks rules that have no mechanical fix."""
    listed = "\n".join(f"- {v}" for v in violations)
    user = (
        "## Repair\nThis candidate breaks Triton rules that make it fail to compile or run. Fix exactly "
        f"these violations and change nothing else:\n{listed}\n\n{_fenced(source)}\n\n{REGENERATE_FORMAT}"
    )
    return Prompt(system=system_blocks(context), user=user)


# -- parsers ---------------------------------------------------------------------------------

_TAG = re.compile(r"<(reasoning|old_str|new_str)_(\d+)>(.*?)</\1_\2>", re.DOTALL)
_OPEN_TAG = re.compile(r"<(old_str|new_str)_(\d+)>")
_WRAPPING_FENCE = re.compile(r"\A```[a-zA-Z0-9_+-]*\n(.*?)\n?```\Z", re.DOTALL)


def _block_text(text: str) -> str:
    """A tag's content: the newline after the opening tag and before the closing one removed,
    and a code fence around the whole content unwrapped."""
    stripped = text.strip("\r\n")
    fenced = _WRAPPING_FENCE.match(stripped.strip())
    if fenced:
        return fenced.group(1).strip("\r\n")
    return stripped.rstrip(" \t")  # spaces before the closing tag are formatting


def parse_edits(text: str) -> list[Edit]:
    """The tuner's `<reasoning_i>/<old_str_i>/<new_str_i>` blocks, in index order."""
    for kind, index in _OPEN_TAG.findall(text):
        if f"</{kind}_{index}>" not in text:
            raise ProposalError(f"edit {index}'s <{kind}_{index}> block is not closed")
    found: dict[int, dict[str, str]] = {}
    for kind, index, content in _TAG.findall(text):
        found.setdefault(int(index), {}).setdefault(kind, content)
    pairs = {i: parts for i, parts in found.items() if "old_str" in parts or "new_str" in parts}
    if not pairs:
        raise ProposalError("the answer has no <old_str_1>/<new_str_1> edit blocks")
    edits: list[Edit] = []
    for i in sorted(pairs):
        parts = pairs[i]
        if "old_str" not in parts:
            raise ProposalError(f"edit {i} has <new_str_{i}> but no <old_str_{i}>")
        if "new_str" not in parts:
            raise ProposalError(f"edit {i} has <old_str_{i}> but no <new_str_{i}>")
        old = _block_text(parts["old_str"])
        if not old.strip():
            raise ProposalError(f"edit {i} has an empty <old_str_{i}>")
        new = _block_text(parts["new_str"])
        if old == new:
            continue
        edits.append(Edit(old=old, new=new, reasoning=parts.get("reasoning", "").strip()))
    if not edits:
        raise ProposalError("every edit in the answer leaves the kernel unchanged")
    return edits


_FENCE_OPEN = re.compile(r"^(?P<fence>`{3,})[ \t]*(?P<lang>[A-Za-z0-9_+-]*)[ \t]*$", re.MULTILINE)


def _fenced_blocks(text: str) -> tuple[list[tuple[str, str]], bool]:
    """(language, body) of each fenced block, and whether a fence was left open."""
    blocks: list[tuple[str, str]] = []
    pos = 0
    while True:
        opening = _FENCE_OPEN.search(text, pos)
        if opening is None:
            return blocks, False
        fence = opening.group("fence")
        closing = re.compile(rf"^{fence}[ \t]*$", re.MULTILINE).search(text, opening.end())
        if closing is None:
            return blocks, True
        body = text[opening.end() + 1 : closing.start()]
        blocks.append((opening.group("lang").lower(), body.rstrip("\n") + "\n"))
        pos = closing.end()


def parse_file(text: str) -> str:
    """The complete file in the answer's ```python block (the longest, if several)."""
    blocks, unterminated = _fenced_blocks(text)
    python = [body for lang, body in blocks if lang in ("python", "py", "python3")]
    if not python:
        python = [body for lang, body in blocks if not lang]
    python = [body for body in python if body.strip()]
    if not python:
        if unterminated:
            raise ProposalError("the answer's ```python block is not closed")
        raise ProposalError("the answer has no ```python block with the new file")
    with_kernel = [body for body in python if "triton" in body]
    return max(with_kernel or python, key=len)
