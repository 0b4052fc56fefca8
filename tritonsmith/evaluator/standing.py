"""The verdict's vocabulary: where a check ended (`Stage`) and what that tells the user
(`standing`). Imported by the verification (verify.py), the reports and the pipeline, and by
nothing they depend on, so the verdict rule has one home below all of them.

## Why a verdict says what it says

Every check ends at a `Stage`, and `standing` alone turns (ok, stage) into what a user reads:
**verified** only when every trial matched and no check failed (stage `done`); **NOT VERIFIED**
when the run could not judge the kernel (`NOT_VERIFIED_STAGES`: it could not run, or what ran
cannot cover what a GPU would run); **FAILED** otherwise: the kernel, or a check of what it
computes, failed. docs/verification.md lists every check and the stage it ends at.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["NOT_VERIFIED_STAGES", "Stage", "Standing", "standing"]


class _Word(str, Enum):
    """A `str` enum that reads, compares, formats and serialises as its value (on Python 3.10 too,
    which has no `StrEnum`)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Stage(_Word):
    """Where a check ended."""

    SYNTAX = "syntax"  # the file does not parse
    STATIC = "static"  # refused unread: the static checks (exploits.py) name the trick
    BRANCH = "branch"  # it branches on the device or the interpreter: a CPU run covers one path
    CUDA_ONLY = "cuda-only"  # a CUDA-only call or CUDA autocast the CPU cannot honour
    COMPILE = "compile"  # a kernel does not compile for a target: the check did not run
    IMPORTS = "imports"  # the file imports what the workers' environment lacks
    INPUTS = "inputs"  # the spec's inputs could not be made
    REFERENCE = "reference"  # the reference itself failed
    SPEC = "spec"  # the spec cannot tell a right answer from a wrong one (degenerate outputs)
    CANDIDATE = "candidate"  # the candidate raised, hung or ran out of memory
    COMPARE = "compare"  # outputs differ from the reference's
    WORK = "work"  # the answer was computed elsewhere than in the kernels (policy.py, attribution.py)
    SHAPES = "shapes"  # it fails at the odd-size trial
    SIZES = "sizes"  # it fails only at the reduced sizes the interpreter can afford
    UNSEEN = "unseen"  # the task's output ignores its inputs and a kernel's work: nothing to check it by
    INTERPRETER = "interpreter"  # Triton's interpreter cannot run a kernel that compiles
    TIMING = "timing"  # on a GPU: the timing shows work outside the timed stream
    DONE = "done"  # every check passed


class Standing(_Word):
    """What a verdict tells the user."""

    VERIFIED = "verified"
    NOT_VERIFIED = "NOT VERIFIED"  # the run could not judge the kernel
    FAILED = "FAILED"  # the kernel, or what it computes, is wrong


NOT_VERIFIED_STAGES = frozenset({Stage.COMPILE, Stage.INTERPRETER, Stage.SIZES, Stage.IMPORTS, Stage.BRANCH,
                                 Stage.CUDA_ONLY, Stage.UNSEEN})
"""Stages that end a check without a judgement of the kernel: it could not be run (a compile
failure, a limit of the interpreter, sizes too large for it, an import the environment lacks),
the run could not cover it (a branch on where it runs, a call only CUDA honours), or the task's
output cannot show its work (the same for every input, with or without the kernel)."""


def standing(ok: bool, stage: str) -> Standing:
    """The one rule: verified, NOT VERIFIED or FAILED."""
    if ok:
        return Standing.VERIFIED
    return Standing.NOT_VERIFIED if Stage(stage) in NOT_VERIFIED_STAGES else Standing.FAILED
