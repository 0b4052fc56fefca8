"""Normalised failure signatures: the same mistake gives the same text, whatever the kernel.

`normalise(message)` keeps the error type and the words of the message's template and abstracts
what differs between occurrences: paths, `at L:C:` locations and line numbers, numbers, hex
addresses, tensor shapes, and the user's identifiers (quoted or in known name positions), while
the names of Triton's and Python's API stay (`'dtype' object is not callable` keeps `dtype`).
Element types become `<dtype>` (`histogram only supports 32-bit integer input, but got fp16` and
`... got fp32` are one mistake; the typed matcher recovers which types fail), in every spelling
Triton and MLIR print: `tensor<512xi32>` and `tensor<64x64xi8, #ttg.blocked<...>>` are
`tensor<<shape>x<dtype>>`, `!tt.ptr<f16>` and `pointer<fp32>` are `...<<dtype>>`, a block type
`<['128'], fp32>` is `<<shape>, <dtype>>`, `64x48` is `<shape>`, and MLIR's location prefix goes
(`named_types` reads the types a message names, for the matcher's operands), and the operation
that names itself as the subject of an unsupported-feature message becomes `<op>` (Triton says
`atomic_max does not support fp16` and `atomic_min does not support fp16`). A compile error's
preamble (`at 3:4:`, the source lines and the caret) is dropped, and the
`NameError('y is not defined')` form becomes `NameError: <name> is not defined`.

    >>> normalise("at 5:12:\\n    acc = acc + tl.load(p)\\n            ^\\nNameError('y is not defined')")
    'NameError: <name> is not defined'

`signature_regex(template)` turns a normalised template back into a regular expression that
matches the raw messages it came from (a learned rule's error signature), and `error_type` reads
the error's class off a template.
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Iterable

from ..analysis.infer import DTYPES

__all__ = ["API_NAMES", "PLACEHOLDERS", "core_message", "error_type", "fill", "named_types", "normalise",
           "signature_regex"]

# What the template keeps: Triton's language and runtime names, MLIR dialects, dtypes and Python's
# own names. Anything else that looks like an identifier in a quoted or name position is the user's.
_API_WORDS = """
    tl triton language jit autotune heuristics Config constexpr tensor dtype block_type pointer_type
    program_id num_programs arange zeros zeros_like full full_like load store dot dot_scaled
    atomic_add atomic_max atomic_min atomic_cas atomic_xchg atomic_and atomic_or atomic_xor
    make_block_ptr advance make_tensor_descriptor load_tensor_descriptor store_tensor_descriptor
    where maximum minimum max min sum reduce argmax argmin cumsum cumprod associative_scan sort
    exp exp2 log log2 sqrt rsqrt sin cos abs fma cdiv next_power_of_2 sigmoid softmax
    reshape view trans permute broadcast broadcast_to expand_dims split join cat interleave
    static_range static_assert static_print device_assert device_print debug_barrier
    multiple_of max_contiguous assume range to cast bitcast item histogram rand randn randint
    num_warps num_stages num_ctas maxnreg
    int1 int8 int16 int32 int64 uint8 uint16 uint32 uint64 float8e4nv float8e5 bfloat16 float16
    float32 float64 fp8 fp16 bf16 fp32 fp64 i1 i8 i16 i32 i64 f16 f32 f64 bf16 void
    tt ttg arith scf math llvm gpu nvgpu nvvm amdgpu rocdl cf func builtin
    torch cuda Tensor nn Module ModelNew Model forward get_inputs get_init_inputs
    to_ir is_int scalar func semantic _semantic builder _builder end start step
    PassManager OutOfResources CompilationError UnsupportedLanguageConstruct
    CompileTimeAssertionFailure
    make_shape_compatible broadcast_impl_shape broadcast_impl_value binary_op_type_checking_impl
"""
API_NAMES = frozenset(_API_WORDS.split()) | frozenset(dir(builtins)) | frozenset(keyword.kwlist)

PLACEHOLDERS = ("<path>", "<addr>", "<shape>", "<name>", "<n>", "<function>", "<value>", "<dtype>", "<op>", "<layout>")

# Element types as Triton and PyTorch print them (`fp16`, `int32`, `tl.float16`'s `float16`).
_DTYPE_WORDS = (r"fp8e4nv|fp8e4b15|fp8e4b8|fp8e5b16|fp8e5|fp8|bf16|bfloat16|fp16|fp32|fp64|f16|f32|f64|"
                r"float16|float32|float64|u?int(?:1|8|16|32|64)|[iu](?:1|8|16|32|64)")
_DTYPE = re.compile(r"(?<![\w<])(?<!shape )(?:" + _DTYPE_WORDS + r")(?![\w>])")
# An operation that is the subject of its own unsupported-feature message.
_OP_SUBJECT = re.compile(r"(?:^|(?<=: ))([a-z_][a-z0-9_]*)(?= (?:does not|doesn't|only) supports?\b)")

_CARET = re.compile(r"^\s*\^+\s*$")
_AT = re.compile(r"^at \d+:\d+:\s*$")
_REPR = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Construct|Failure|Resources|Warning|Interrupt))"
                   r"\((?P<q>['\"])(?P<body>.*)(?P=q)\)$", re.DOTALL)
_BARE_REPR = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Failure))\(\)$")
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# Order matters: the wide shapes first, then paths and addresses, then names, then numbers.
_STEPS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"<function [^>]*>"), "<function>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<addr>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:[\w.~-]*[/\\])+[\w.-]+(?::\d+)*"), "<path>"),
    (re.compile(r"\b[\w-]+\.(?:py|pyi|ttir|ttgir|llir|ptx|cubin|so|mlir|json)(?::\d+)*\b"), "<path>"),
    (re.compile(r"\b(?:line|lines)\s+\d+(?:\s*(?:,|and|-)\s*\d+)*", re.IGNORECASE), "line <n>"),
    (re.compile(r"\bat \d+:\d+:?"), "at <n>"),
    # Types with their shapes, in every spelling: Triton's block type <['128', '64'], fp32>,
    # MLIR's tensor<128x64xf32, #layout> and !tt.ptr<f16>, Triton's pointer<fp16>; then shapes
    # alone: [128, 64], (16, 32), 128x64. The element type is `<dtype>` (the typed matcher reads
    # which types failed off the kernel), the layout `<layout>` (`_LAYOUT` runs first).
    (re.compile(r"(!tt\.ptr|\bpointer|\bptr)<(?:" + _DTYPE_WORDS + r")>"), r"\1<<dtype>>"),
    (re.compile(r"<\[[^\]]*\],\s*(?:" + _DTYPE_WORDS + r")>"), "<<shape>, <dtype>>"),
    (re.compile(r"<\[[^\]]*\],\s*(\w+)>"), r"<<shape>, \1>"),
    (re.compile(r"\btensor<(?:[\d?]+x)+(?:" + _DTYPE_WORDS + r")(?:,\s*<layout>)?>"), "tensor<<shape>x<dtype>>"),
    (re.compile(r"\btensor<(?:[\d?]+x)+(?=!tt\.ptr<)"), "tensor<<shape>x"),
    # Signatures written before these spellings were abstracted, normalised again when read.
    (re.compile(r"\btensor<shape (?:" + _DTYPE_WORDS + r")>"), "tensor<<shape>x<dtype>>"),
    (re.compile(r"<shape (?:" + _DTYPE_WORDS + r")>"), "<<shape>, <dtype>>"),
    (re.compile(r"[\[(]\s*-?\d+(?:\s*,\s*-?\d+)+\s*,?\s*[\])]"), "<shape>"),
    (re.compile(r"\b\d+(?:x\d+)+\b"), "<shape>"),
    (re.compile(r"\bconstexpr\[[^\]]*\]"), "constexpr[<value>]"),
]
# The positions in Triton's messages where the user's names appear unquoted.
_NAME_SLOTS = [
    re.compile(r"(?:^|(?<=: ))(" + _IDENT + r")(?= is not defined)"),
    re.compile(r"(?<=\b[Vv]ariable )(" + _IDENT + r")"),
    re.compile(r"(?<=\bglobal variable )(" + _IDENT + r")"),
    re.compile(r"(?<=\bMismatched type for )(" + _IDENT + r")"),
    re.compile(r"(?<=\bconstexpr )(" + _IDENT + r")(?= in the loop)"),
    re.compile(r"(?<=\bFunction )\"?(" + _IDENT + r")\"?(?= is being called)"),
    re.compile(r"(?<=\bfunction )(" + _IDENT + r")(?= is)"),
    re.compile(r"\b(" + _IDENT + r")(?=\(\) (?:missing|got|takes))"),
]
_QUOTED = re.compile(r"(['\"`])(" + _IDENT + r"(?:\." + _IDENT + r")*)\1")
_NUMBER = re.compile(r"(?<![\w<.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w>])")
_TYPE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Construct|Failure|Resources|Warning|Interrupt))\b")


def _is_api(name: str) -> bool:
    head = name.split(".")[0]
    return name in API_NAMES or head in API_NAMES or (name.startswith("__") and name.endswith("__"))


def _user_name(match: re.Match[str]) -> str:
    name = match.group(1)
    return match.group(0) if _is_api(name) else match.group(0).replace(name, "<name>")


def _core_lines(message: str) -> list[str]:
    """The lines that say what went wrong: after a CompilationError's caret, without blanks."""
    lines = message.replace("\r\n", "\n").split("\n")
    carets = [i for i, line in enumerate(lines) if _CARET.match(line)]
    if carets and any(_AT.match(line.strip()) for line in lines[: carets[0]]):
        lines = lines[carets[-1] + 1:]
    return [line.strip() for line in lines if line.strip() and not _AT.match(line.strip())]


def core_message(message: str) -> str:
    """The raw message without a compile error's preamble (location, source lines, caret)."""
    return "\n".join(_core_lines(message))


def _unrepr(line: str) -> str:
    """`ValueError('x')` as `ValueError: x`."""
    repr_form = _REPR.match(line)
    if repr_form:
        body = repr_form.group("body").replace("\\'", "'").replace('\\"', '"')
        return f"{repr_form.group('type')}: {body}"
    if _BARE_REPR.match(line):
        return _BARE_REPR.sub(r"\g<type>", line)
    return line


# MLIR's diagnostic prefix (`/tmp/k.py:9:8: error: `, `loc("k.py":9:8): error: `): where, not what.
_MLIR_LOCATION = re.compile(r"^(?:<path>|loc\(.*?\))?:?\s*error:\s*")
_LAYOUT_HEAD = re.compile(r"#[A-Za-z_][\w.]*")


def _layouts(line: str) -> str:
    """MLIR attributes (`#ttg.nvidia_mma<{versionMajor = 2, warpsPerCTA = [2, 2]}>`, `#blocked1`)
    as `<layout>`: their angle brackets nest, so they are matched by counting."""
    out: list[str] = []
    i = 0
    while (head := _LAYOUT_HEAD.search(line, i)) is not None:
        out.append(line[i:head.start()])
        end = head.end()
        if end < len(line) and line[end] == "<":
            depth = 0
            while end < len(line):
                depth += {"<": 1, ">": -1}.get(line[end], 0)
                end += 1
                if depth == 0:
                    break
        out.append("<layout>")
        i = end
    out.append(line[i:])
    return "".join(out)


def _normalise_line(line: str) -> str:
    line = re.sub(r"\x1b\[[0-9;]*m", "", line)  # colour codes
    line = _layouts(line)
    line = re.sub(r"^(?:\w+\.)+(?=[A-Z]\w*(?:Error|Exception|Construct|Failure|Resources)\b)", "", line)
    line = _unrepr(line)
    for pattern, replacement in _STEPS:
        line = pattern.sub(replacement, line)
    line = _MLIR_LOCATION.sub("", line)
    for slot in _NAME_SLOTS:
        line = slot.sub(_user_name, line)

    def quoted(match: re.Match[str]) -> str:
        return match.group(0) if _is_api(match.group(2)) else "<name>"

    line = _QUOTED.sub(quoted, line)
    line = _DTYPE.sub("<dtype>", line)
    line = _OP_SUBJECT.sub(lambda m: "<op>" if m.group(1) in API_NAMES else m.group(0), line)
    line = _NUMBER.sub("<n>", line)
    line = re.sub(r"(?:<n>\s*,\s*)+<n>", "<n>", line)  # a list of numbers is one placeholder
    return re.sub(r"\s+", " ", line).strip()


def normalise(message: str, *, max_lines: int = 3) -> str:
    """The signature of a failure message: its error type and template, the specifics abstracted.

    Args:
        message: the raw message (a CompilationError's text, a runtime error, an MLIR diagnostic).
        max_lines: how many of the message's lines go into the signature (joined with " | ").
    """
    seen: list[str] = []
    for line in _core_lines(message):
        normal = _normalise_line(line)
        if normal and normal not in seen:
            seen.append(normal)
        if len(seen) >= max_lines:
            break
    return " | ".join(seen) if seen else "<empty>"


def error_type(template: str) -> str | None:
    """`"NameError: <name> is not defined"` -> "NameError"; None when the template names none."""
    match = _TYPE.match(template)
    return match.group(1).rsplit(".", 1)[-1] if match else None


_PLACEHOLDER_RE = {
    "<path>": r"\S+",
    "<addr>": r"0x[0-9a-fA-F]+",
    "<function>": r"<function [^>]*>",
    "<value>": r"[^\]]*",
    "<name>": r"['\"`]?[A-Za-z_][\w.]*['\"`]?",
    "<n>": r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?:\s*,\s*[-+]?\d+(?:\.\d+)?)*",
    "<dtype>": r"(?:tl\.|triton\.language\.|torch\.)?(?:" + _DTYPE_WORDS + r")",
    "<op>": r"[a-z_][a-z0-9_]*",
    "<shape>": r".+?",
    "<layout>": r"#.+?",
}
# An MLIR tensor type, its encoding (a layout) printed or not.
_TENSOR = "tensor<<shape>x<dtype>>"
_TENSOR_RE = r"tensor<[\d?x]+(?:!tt\.ptr<)?({})>?(?:,\s*#.*?)?>"  # {}: the element type's group
_TOKENS = re.compile(r"(tensor<<shape>x<dtype>>|<path>|<addr>|<function>|<value>|<name>|<n>|<dtype>|<op>|<layout>|<shape(?: \w+)?>"
                     r"|tensor<shape \w+>|\s+)")


def signature_regex(template: str) -> str | None:
    """A regex matching the raw messages a template was normalised from, built from the body of
    its first line (the error type prints differently by form, so it is left out); None when too
    little literal text would be left to tell this failure from others."""
    first = template.split(" | ")[0]
    body = first[len(error_type(first) or ""):].lstrip(": ").strip()
    tokens = _TOKENS.split(body)
    parts: list[str] = []
    literal = 0
    for token in tokens:
        if not token:
            continue
        if token.isspace():
            parts.append(r"\s+")
        elif token == _TENSOR:
            parts.append(_TENSOR_RE.format("?:" + _PLACEHOLDER_RE["<dtype>"]))
        elif token in _PLACEHOLDER_RE:
            parts.append(_PLACEHOLDER_RE[token])
        elif token.startswith(("<shape", "tensor<shape")):
            parts.append(r".+?")
        else:
            parts.append(re.escape(token))
            literal += sum(ch.isalpha() for ch in token)
    if literal < 12:
        return None
    return "".join(parts)


def fill(template: str, messages: Iterable[str]) -> str:
    """The template's first line with placeholders given back what the raw messages say there,
    for a statement that quotes what the user saw: a number every message agrees on (`K >= 16`,
    `a power of 2`), and the types and operations (`atomic_max/atomic_min does not support
    fp16`). Numbers that differ, names and paths stay placeholders; messages of another template
    are ignored, and with none left the template is returned as it is."""
    first = template.split(" | ")[0]
    restored = ("<n>", "<dtype>", "<op>")
    parts: list[str] = []
    kinds: list[str] = []
    for token in _TOKENS.split(first):
        if not token:
            continue
        if token.isspace():
            parts.append(r"\s+")
        elif token == _TENSOR:  # its element type comes back, as a <dtype> does
            parts.append(_TENSOR_RE.format(_PLACEHOLDER_RE["<dtype>"]))
            kinds.append(token)
        elif token in restored:
            parts.append(f"({_PLACEHOLDER_RE[token]})")
            kinds.append(token)
        elif token in _PLACEHOLDER_RE:
            parts.append(f"(?:{_PLACEHOLDER_RE[token]})")
        elif token.startswith(("<shape", "tensor<shape")):
            parts.append(r".+?")
        else:
            parts.append(re.escape(token))
    try:
        pattern = re.compile("".join(parts))
    except re.error:
        return first
    seen: list[list[str]] = [[] for _ in kinds]
    for message in messages:
        said = " ".join(_unrepr(line) for line in _core_lines(message))
        match = pattern.search(" ".join(said.split()))
        if match is not None:
            for values, value in zip(seen, match.groups()):
                if value not in values:
                    values.append(value)
    if not seen or not seen[0]:
        return first
    words = iter(zip(kinds, seen))

    def back(placeholder: re.Match[str]) -> str:
        if placeholder.group(0) == _TENSOR:
            return f"tensor<<shape> x {'/'.join(next(words)[1])}>"  # spaced: the type is not a name
        if placeholder.group(0) not in restored:
            return placeholder.group(0)
        kind, values = next(words)
        if len(values) == 1 or (kind != "<n>" and values):
            return "/".join(values)
        return kind

    return _TOKENS.sub(back, first)


# Every spelling of an element type -> Triton's short name (`float32`, `f32`, `tl.float32` -> fp32).
_SHORT = {**DTYPES, "f16": "fp16", "f32": "fp32", "f64": "fp64"}
_NAMED_TYPE = re.compile(r"(?<![A-Za-z])(?:" + _DTYPE_WORDS + r")(?![\w])")
_NAMED_TENSOR = re.compile(r"\btensor<(?:[\d?]+x)+(" + _DTYPE_WORDS + r")\b")


def named_types(messages: Iterable[str]) -> set[str]:
    """The element types the messages name, in Triton's short spelling, MLIR's included
    (`'tensor<512xi32>'` names i32, `pointer<fp16> and triton.language.float32` fp16 and fp32):
    which operands' types the compiler objected to."""
    found: set[str] = set()
    for message in messages:
        said = core_message(message)
        for match in _NAMED_TENSOR.finditer(said):
            found.add(_SHORT.get(match.group(1), match.group(1)))
        for match in _NAMED_TYPE.finditer(_NAMED_TENSOR.sub(" ", said)):
            found.add(_SHORT.get(match.group(0), match.group(0)))
    return found - {"fp8"}
