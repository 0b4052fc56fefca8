"""When two candidates are the same kernel for what the search measures.

A candidate whose kernel is identical to one already evaluated, once the hints that cannot
change the measured time are set aside, is not re-timed and cannot win: its measurement is the
other's. Re-timing it would only give noise a chance to look like a speedup (on a loaded
machine, an eviction hint plus `num_warps=2` once "measured" 1.9× under the interpreter).

`equivalence_key(source, device)` is a normalised syntax tree (tree-sitter; the experience
memory's canonical form, `analysis.canonical.canonical`: names numbered by first use, comments,
docstrings, whitespace, trailing commas and quote styles dropped) with, under the interpreter,
these hints stripped:

- keyword arguments `num_warps`, `num_stages`, `num_ctas`, `maxnreg`, `eviction_policy`,
  `cache_modifier`, `volatile`, and `tl.range`'s `loop_unroll_factor`, `warp_specialize`,
  `disallow_acc_multi_buffer`, wherever they are passed (launches, `triton.Config`, `tl.load`,
  `tl.store`, `tl.range`);
- the compiler hints `tl.max_contiguous(x, n)`, `tl.multiple_of(x, n)` and
  `tl.max_constancy(x, n)`, replaced by `x`; an assignment that becomes `x = x` goes;
- every `triton.Config` of a literal `@triton.autotune(configs=[...])` list but the first, when
  the autotuner prunes nothing (no `prune_configs_by`): under the interpreter the autotuner
  cannot time its Configs and keeps the first (evaluator/cuda_shim.py), so an edit to another
  Config changes nothing that runs.

Under the predicted objective (`device="predicted"`, a search without a GPU ranking by predicted
time) the options the compile for the target sees (`num_warps`, `num_stages`, `num_ctas`,
`maxnreg`, `tl.range`'s options) are kept: they change registers, occupancy and the instructions
issued, which the prediction reads. Cache and eviction hints and the `tl.multiple_of` family are
still set aside: the model has no term for them, so crediting them would credit noise.

The interpreter runs every program with NumPy and none of these reach it. On a GPU each of them
can change the binary, so there the key is the canonical form alone (all hints kept). The
compile results (evaluator/compile.py) expose no hash of the compiled binary, which would be the
exact rule on a GPU; until they do, a GPU candidate that differs from another only by a hint is
timed like any other.

Pure Python over tree-sitter: nothing here imports torch or triton.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import re

from tree_sitter import Node

from ..analysis import Document
from ..analysis.canonical import Canonicaliser, Scope
from ..analysis.syntax import text
from .model import Task

__all__ = ["HINT_CALLS", "HINT_KEYWORDS", "equivalence_key", "normalised", "without_unmeasured"]

HINT_KEYWORDS = frozenset({
    "num_warps", "num_stages", "num_ctas", "maxnreg", "eviction_policy", "cache_modifier", "volatile",
    "loop_unroll_factor", "warp_specialize", "disallow_acc_multi_buffer",
})
"""Keyword arguments that change what a GPU compiles, never what the interpreter computes or
how long it takes."""

COMPILE_OPTIONS = frozenset({
    "num_warps", "num_stages", "num_ctas", "maxnreg", "loop_unroll_factor", "warp_specialize",
    "disallow_acc_multi_buffer",
})
"""The hints a predicted time reads (through the compile's resources and the warps issued)."""

HINT_CALLS = frozenset({"max_contiguous", "multiple_of", "max_constancy"})
"""`tl.<name>(x, n)` tells the compiler about `x` and returns it unchanged."""


def _hint_call(node: Node) -> bool:
    if node.type != "call":
        return False
    function = node.child_by_field_name("function")
    if function is None or function.type != "attribute":
        return False
    attribute = function.child_by_field_name("attribute")
    arguments = node.child_by_field_name("arguments")
    return (attribute is not None and text(attribute) in HINT_CALLS and arguments is not None
            and arguments.type == "argument_list" and bool(_positional(arguments)))


def _positional(arguments: Node) -> list[Node]:
    return [c for c in arguments.named_children if c.type not in ("keyword_argument", "comment")]


def _unwrapped(node: Node) -> Node:
    """`node` without the hint calls around it."""
    while _hint_call(node):
        arguments = node.child_by_field_name("arguments")
        assert arguments is not None
        node = _positional(arguments)[0]
    return node


def _hint_keyword(node: Node, keep: frozenset[str] = frozenset()) -> bool:
    if node.type != "keyword_argument":
        return False
    name = node.child_by_field_name("name")
    return name is not None and text(name) in HINT_KEYWORDS and text(name) not in keep


def _self_assignment(statement: Node) -> bool:
    """`x = tl.multiple_of(x, 16)`: a statement that does nothing once hints are unwrapped."""
    if statement.type != "expression_statement" or statement.named_child_count != 1:
        return False
    assign = statement.named_children[0]
    if assign.type != "assignment":
        return False
    left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
    if left is None or right is None or left.type != "identifier" or not _hint_call(right):
        return False
    inner = _unwrapped(right)
    return inner.type == "identifier" and text(inner) == text(left)


def _untimed_configs(node: Node) -> bool:
    """A literal list of an autotuner's Configs of which the interpreter runs only the first:
    `configs=[...]` (or the first positional argument) of a `...autotune(...)` call that does
    not prune them."""
    if node.type != "list":
        return False
    holder = node.parent
    if holder is not None and holder.type == "keyword_argument":
        name = holder.child_by_field_name("name")
        if name is None or text(name) != "configs":
            return False
        arguments = holder.parent
    elif holder is not None and holder.type == "argument_list" and _positional(holder)[:1] == [node]:
        arguments = holder
    else:
        return False
    call = arguments.parent if arguments is not None else None
    function = call.child_by_field_name("function") if call is not None and call.type == "call" else None
    if function is None or text(function).rsplit(".", 1)[-1] != "autotune" or arguments is None:
        return False
    return not any(c.type == "keyword_argument" and text(c.child_by_field_name("name") or c) == "prune_configs_by"
                   for c in arguments.named_children)


class _HintBlind(Canonicaliser):
    """The canonical form with the hints the measure cannot see left out (`keep`: those it can)."""

    def __init__(self, root: Node, keep: frozenset[str] = frozenset()) -> None:
        super().__init__(root)
        self.keep = keep

    def emit(self, node: Node, scope: Scope) -> None:
        if _hint_keyword(node, self.keep) or _self_assignment(node):
            return
        if _untimed_configs(node):
            first = [c for c in node.named_children if c.type != "comment"][:1]
            self.tokens += ["(list", "["]
            for child in first:
                self.emit(child, scope)
            self.tokens += ["]", ")"]
            return
        if _hint_call(node):
            self.emit(_unwrapped(node), scope)
            return
        if node.type == "argument_list":
            kept = [c for c in node.named_children if c.type != "comment" and not _hint_keyword(c, self.keep)]
            self.tokens += ["(argument_list", "("]
            for i, child in enumerate(kept):
                if i:
                    self.tokens.append(",")
                self.emit(child, scope)
            self.tokens += [")", ")"]
            return
        super().emit(node, scope)


def normalised(source: str, device: str) -> str:
    """The form two candidates share when they are the same kernel for `device`'s timing
    ("interpreter": hints stripped; "predicted": hints but the compile's options stripped; "gpu":
    the canonical form alone)."""
    root = Document(source).root
    if device == "gpu":
        canon = Canonicaliser(root)
    else:
        canon = _HintBlind(root, COMPILE_OPTIONS if device == "predicted" else frozenset())
    canon.emit(root, canon.module)
    return " ".join(canon.tokens)


def equivalence_key(source: str, device: str) -> str:
    """sha256 of `normalised(source, device)`; of the text itself when it does not parse into
    a form (never raises)."""
    try:
        form = normalised(source, device)
    except Exception:  # a candidate tree-sitter reads oddly: compare it as text
        form = "text:" + source
    return hashlib.sha256(form.encode("utf-8")).hexdigest()


def measure_of(task: Task) -> str:
    """What a task's equivalence keys are for: "gpu", "interpreter" or "predicted"."""
    return "predicted" if task.objective == "predicted" else task.device


def without_unmeasured(original: str, candidate: str, measure: str) -> str:
    """`candidate` with each change that the measure cannot see put back as in `original` (a
    cache hint, a `tl.multiple_of`, under the interpreter a `num_warps`): what a patch should
    carry, since a search credits only what it measured. First whole blocks of lines, then,
    within a line that still differs, each changed run of tokens (a `num_warps=8` next to a
    block size it was proposed with). A change goes back only when the candidate keeps its
    `equivalence_key` without it; on a GPU, where every hint can change the binary, only what
    the canonical form ignores (comments, layout) goes back.

    Every text tried must also be Python that `ast` parses: the canonical form is read from
    tree-sitter's tree, which recovers from a misplaced indent, so a block put back at its old
    depth (a loop's body after the loop was unrolled) keeps the key but no longer parses. Such
    a block stays as the candidate wrote it. The search trims before it evaluates
    (`engine.Search._step`), so what a patch carries is the text that was verified."""
    if not _parses(candidate):
        return candidate
    target = equivalence_key(candidate, measure)
    before, after = original.splitlines(keepends=True), candidate.splitlines(keepends=True)
    blocks = [op for op in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes() if op[0] != "equal"]
    kept = list(after)
    # From the last block back, so earlier blocks' line numbers in `after` stay valid.
    for tag, i1, i2, j1, j2 in reversed(blocks):
        trial = kept[:j1] + before[i1:i2] + kept[j2:]
        if _same(trial, measure, target):
            kept = trial
        elif tag == "replace" and i2 - i1 == j2 - j1:  # line for line: try each changed run of tokens
            for offset in range(j2 - j1):
                kept[j1 + offset] = _line_without_unmeasured(before[i1 + offset], kept, j1 + offset, measure, target)
    return "".join(kept)


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):  # ValueError: a NUL byte
        return False
    return True


def _same(lines: list[str], measure: str, target: str) -> bool:
    """Whether the file of `lines` is valid Python with the key `target`."""
    source = "".join(lines)
    return equivalence_key(source, measure) == target and _parses(source)


_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def _line_without_unmeasured(old_line: str, lines: list[str], at: int, measure: str, target: str) -> str:
    """`lines[at]` with each run of tokens that differs from `old_line` put back where the
    file keeps `target` as its key without it."""
    old, new = _TOKEN.findall(old_line), _TOKEN.findall(lines[at])
    head, tail = "".join(lines[:at]), "".join(lines[at + 1:])

    def revert(i1: int, i2: int, j1: int, j2: int) -> bool:
        nonlocal new
        trial = new[:j1] + old[i1:i2] + new[j2:]
        if not _same([head, *trial, tail], measure, target):
            return False
        new = trial
        return True

    runs = [op for op in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes() if op[0] != "equal"]
    for _, i1, i2, j1, j2 in reversed(runs):
        if revert(i1, i2, j1, j2) or i2 - i1 == j2 - j1:
            continue
        # One run that both changed and grew (`16` -> `64, num_warps=8`): the growth as written
        # after the change, else before it, put back on its own.
        grown = j2 - j1 - (i2 - i1)
        if grown > 0:
            revert(i2, i2, j2 - grown, j2) or revert(i1, i1, j1, j1 + grown)
    return "".join(new)
