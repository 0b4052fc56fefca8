"""Normalised signatures on real Triton error texts (shared reference: triton-constraints.md)."""

from __future__ import annotations

import re

import pytest

from tritonsmith.state.signature import error_type, fill, normalise, signature_regex

# (raw message as Triton prints it, its signature)
REAL = [
    ("at 5:12:\n    acc = acc + tl.load(p)\n            ^\nNameError('y is not defined')",
     "NameError: <name> is not defined"),
    ("ValueError: arange's range must be a power of 2", "ValueError: arange's range must be a power of <n>"),
    ("TypeError(\"'dtype' object is not callable\")", "TypeError: 'dtype' object is not callable"),
    ("ValueError: numel (2097152) exceeds triton maximum tensor numel (1048576)",
     "ValueError: numel (<n>) exceeds triton maximum tensor numel (<n>)"),
    ("AssertionError(\"Loop-carried variable acc has initial type int32 but is re-assigned to <['128'], fp32> in "
     "loop! Please make sure that the type stays consistent.\")",
     "AssertionError: Loop-carried variable <name> has initial type <dtype> but is re-assigned to <<shape>, <dtype>> in "
     "loop! Please make sure that the type stays consistent."),
    ("AssertionError('Mismatched type for y between then block (int32) and else block (fp32)')",
     "AssertionError: Mismatched type for <name> between then block (<dtype>) and else block (<dtype>)"),
    ("ValueError: atomic_max does not support fp16", "ValueError: <op> does not support <dtype>"),
    ("ValueError: histogram only supports 32-bit integer input, but got fp16",
     "ValueError: <op> only supports <n>-bit integer input, but got <dtype>"),
    ("ValueError: Expected dtype ['fp32', 'fp64'] but got int32",
     "ValueError: Expected dtype ['<dtype>', '<dtype>'] but got <dtype>"),
    ("RuntimeError: Unsupported function referenced: <function helper at 0x7f3a2c1d5e10>",
     "RuntimeError: Unsupported function referenced: <function>"),
    ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 262144, Hardware limit: "
     "232448. Reducing block sizes or `num_stages` may help.",
     "OutOfResources: out of resource: shared memory, Required: <n>, Hardware limit: <n>. Reducing block sizes "
     "or `num_stages` may help."),
    ("/tmp/tritonsmith-compile-x1/_tritonsmith_kernel_3fa2.py:14:11: error: 'tt.load' op operand #1 must be "
     "1-bit signless integer or ranked tensor of 1-bit signless integer values, but got 'tensor<128xi32>'",
     "'tt.load' op operand #<n> must be <n>-bit signless integer or ranked tensor of <n>-bit "
     "signless integer values, but got 'tensor<<shape>x<dtype>>'"),
    ("TypeError: zeros() missing 1 required positional argument: 'dtype'",
     "TypeError: zeros() missing <n> required positional argument: 'dtype'"),
    ("UnsupportedLanguageConstruct: unsupported AST node type: Break",
     "UnsupportedLanguageConstruct: unsupported AST node type: Break"),
    ("NameError(\"Cannot access global variable BLOCK from within @jit'ed function.\")",
     "NameError: Cannot access global variable <name> from within @jit'ed function."),
    ("TypeError: Shape element 0 must have type `constexpr[int]`, got "
     "`constexpr[<class 'triton.language.core.tensor'>]`",
     "TypeError: Shape element <n> must have type `constexpr[<value>]`, got `constexpr[<value>]`"),
    ("TypeError: my_helper() got an unexpected keyword argument 'BLOCK_M'",
     "TypeError: <name>() got an unexpected keyword argument <name>"),
]


# One mistake in MLIR's and Triton's spellings of types and shapes: each group is one signature.
SPELLINGS = [
    ["'tt.load' op operand #1 must be 1-bit signless integer or ranked tensor of 1-bit signless integer values, "
     "but got 'tensor<512xi32>'",
     "/tmp/k.py:9:8: error: 'tt.load' op operand #1 must be 1-bit signless integer or ranked tensor of 1-bit "
     "signless integer values, but got 'tensor<1024xi64>'",
     "'tt.load' op operand #1 must be 1-bit signless integer or ranked tensor of 1-bit signless integer values, "
     "but got 'tensor<64x64xi8, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4]}>>'"],
    ["IncompatibleTypeErrorImpl: invalid operands of type pointer<fp32> and triton.language.float32",
     "IncompatibleTypeErrorImpl: invalid operands of type pointer<bf16> and triton.language.float16"],
    ["error: 'tt.addptr' op operand #0 must be ptr or ranked tensor of ptr values, but got 'tensor<128x!tt.ptr<f16>>'",
     "error: 'tt.addptr' op operand #0 must be ptr or ranked tensor of ptr values, but got 'tensor<64x32x!tt.ptr<bf16>>'"],
    ["failed to legalize operation 'tt.dot': (tensor<32x32xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.nvidia_mma<"
     "{versionMajor = 2, warpsPerCTA = [2, 2]}>, kWidth = 2}>>) -> tensor<32x32xi32, #mma>",
     "failed to legalize operation 'tt.dot': (tensor<64x16xbf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.nvidia_mma<"
     "{versionMajor = 2, warpsPerCTA = [4, 1]}>, kWidth = 4}>>) -> tensor<64x16xi32, #mma1>"],
    ["AssertionError(\"Loop-carried variable acc has initial type int32 but is re-assigned to <['128'], fp32> in loop\")",
     "AssertionError(\"Loop-carried variable t has initial type fp16 but is re-assigned to <['64', '32'], bf16> in loop\")"],
    ["ValueError: Shape element 1 must be a power of 2 (got a 64x48 tile)",
     "ValueError: Shape element 2 must be a power of 2 (got a 4x8x12 tile)"],
]


@pytest.mark.parametrize("group", SPELLINGS)
def test_every_spelling_of_a_type_and_shape_is_one_signature(group: list[str]) -> None:
    signatures = {normalise(message) for message in group}
    assert len(signatures) == 1, signatures
    signature = signatures.pop()
    assert normalise(signature) == signature  # read again, as old signatures are
    regex = signature_regex(signature)
    assert regex is not None and all(re.search(regex, message) for message in group)
    assert fill(signature, group[:1]).count("<dtype>") < max(1, signature.count("<dtype>"))  # types come back


def test_signatures_written_before_the_spellings_were_abstracted_meet_the_new_ones() -> None:
    new = normalise("'tt.load' op operand #1 must be 1-bit signless integer or ranked tensor of 1-bit signless "
                    "integer values, but got 'tensor<128xi32>'")
    old = ("<path>: error: 'tt.load' op operand #<n> must be <n>-bit signless integer or ranked tensor of <n>-bit "
           "signless integer values, but got 'tensor<shape i32>'")
    assert normalise(old) == new
    assert normalise("re-assigned to <shape fp32> in loop") == "re-assigned to <<shape>, <dtype>> in loop"


@pytest.mark.parametrize(("message", "expected"), REAL)
def test_real_triton_errors_normalise_to_their_template(message: str, expected: str) -> None:
    assert normalise(message) == expected


@pytest.mark.parametrize(("message", "expected"), REAL)
def test_the_signature_regex_matches_the_raw_message(message: str, expected: str) -> None:
    regex = signature_regex(normalise(message))
    assert regex is not None and re.search(regex, message)


def test_one_mistake_on_different_operations_and_types_has_one_signature() -> None:
    # Triton names the operation and the type in the message; the mistake is the same.
    assert normalise("ValueError: atomic_min does not support bf16") == \
        normalise("at 10:4:\n    tl.atomic_xchg(p, v)\n    ^\nValueError('atomic_xchg does not support fp16')")
    # A user's function named as the subject stays a user's name, not an operation.
    assert "<op>" not in normalise("ValueError: my_helper does not support fp16")


def test_fill_gives_back_what_the_messages_agree_on() -> None:
    message = "at 10:4:\n    tl.atomic_max(p, v)\n    ^\nValueError('atomic_max does not support fp16')"
    assert fill(normalise(message), [message]) == "ValueError: atomic_max does not support fp16"
    assert fill(normalise(message), [message, "ValueError: atomic_min does not support fp16"]) == \
        "ValueError: atomic_max/atomic_min does not support fp16"
    # A number the messages agree on is the rule's; one that differs, and names, stay abstract.
    dot = "AssertionError: Input shapes should have M >= 1, N >= 1 and K >= 16"
    assert fill(normalise(dot), [dot]) == dot
    numel = normalise("ValueError: numel (2097152) exceeds triton maximum tensor numel (1048576)")
    assert fill(numel, ["ValueError: numel (2097152) exceeds triton maximum tensor numel (1048576)",
                        "ValueError: numel (4194304) exceeds triton maximum tensor numel (1048576)"]) == \
        "ValueError: numel (<n>) exceeds triton maximum tensor numel (1048576)"
    undefined = normalise("NameError('y is not defined')")
    assert fill(undefined, ["NameError('y is not defined')"]) == undefined
    # Messages of another template are ignored.
    assert fill(numel, ["NameError: x is not defined"]) == numel


def test_the_same_mistake_in_different_kernels_has_one_signature() -> None:
    first = "at 3:8:\n    y = x + z\n        ^\nNameError('z is not defined')"
    second = "at 41:20:\n        out = tl.exp(scale_factor)\n                    ^\nNameError('scale_factor is not defined')"
    assert normalise(first) == normalise(second) == "NameError: <name> is not defined"
    assert normalise("File \"/home/me/k.py\", line 223, in kernel") == "File \"<path>\", line <n>, in kernel"


def test_api_names_stay_and_user_names_go() -> None:
    assert "'dtype'" in normalise("TypeError(\"'dtype' object is not callable\")")
    assert "my_kernel" not in normalise("AssertionError('cannot reasign constexpr my_kernel in the loop')")
    assert normalise("AttributeError(\"module 'triton.language' has no attribute 'foo_bar'\")") == (
        "AttributeError: module 'triton.language' has no attribute <name>"
    )


def test_error_type_and_a_regex_too_vague_to_keep() -> None:
    assert error_type("NameError: <name> is not defined") == "NameError"
    assert error_type("<path>: error: x") is None
    assert signature_regex("AssertionError: <name>") is None  # would match anything
    assert normalise("") == "<empty>"
