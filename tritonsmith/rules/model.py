"""The rule model: one validity rule of the memory, whatever pack it came from.

A rule is data. It states what you cannot do (the AdaExplore "You cannot …" form), where it
applies (a Triton version range), how it is detected (a static check by name, optional
tree-sitter query, and error signatures that match compiler and runtime messages) and how it is
fixed, with a bad and a good example. Builtin, learned and imported rules share this model; only
their code prefix and provenance differ (DESIGN.md, "Rule identity").

Learned rules (`TSL`, written by `tritonsmith.adapt`) also carry their lifecycle and where they
came from: a `status` (pending, active or rejected; only active rules are in force), whether a
person `reviewed` it, the normalised failure message (`template`) they were induced from, and
provenance (failure ids, distinct kernels, first and last seen, example messages).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from ..version import parse_version  # re-exported: rules read versions in their ranges

__all__ = ["STATUSES", "Rule", "Severity", "VersionRange", "parse_version"]

_CODE = re.compile(r"^TS(\d{3}|L\d+|A\d+)$")
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
# A rule's lifecycle: learned rules start pending; only active ones are in force.
STATUSES = ("pending", "active", "rejected")


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"
    HINT = "hint"


@dataclass(frozen=True)
class VersionRange:
    """A conjunction of `>=X.Y`, `<X.Y`, `<=X.Y`, `>X.Y`, `==X.Y` bounds; empty means all."""

    spec: str = ""
    bounds: tuple[tuple[str, tuple[int, int]], ...] = ()

    @classmethod
    def parse(cls, spec: str) -> VersionRange:
        bounds = []
        for part in filter(None, (p.strip() for p in spec.split(","))):
            match = re.match(r"^(>=|<=|==|<|>)\s*(\d+\.\d+(?:\.\d+)?)$", part)
            if match is None:
                raise ValueError(f"bad version bound {part!r} (use e.g. '>=3.0,<3.9')")
            bounds.append((match.group(1), parse_version(match.group(2))))
        return cls(spec=spec, bounds=tuple(bounds))

    def __contains__(self, version: tuple[int, int] | None) -> bool:
        if version is None:
            return True
        checks = {
            ">=": lambda v, b: v >= b,
            "<=": lambda v, b: v <= b,
            ">": lambda v, b: v > b,
            "<": lambda v, b: v < b,
            "==": lambda v, b: v == b,
        }
        return all(checks[op](version, bound) for op, bound in self.bounds)

    def __str__(self) -> str:
        return self.spec or "all versions"


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    title: str
    statement: str
    severity: Severity
    category: str
    triton: VersionRange = field(default_factory=VersionRange)
    check: str | None = None
    query: str | None = None
    signatures: tuple[str, ...] = ()
    fix: str | None = None
    how_to_fix: str | None = None
    bad: str | None = None
    good: str | None = None
    # The source text of what the rule flags in `bad`, one entry per expected finding; the
    # tests hold every builtin rule to it.
    expect: tuple[str, ...] = ()
    explanation: str | None = None
    compiler_rejects: bool = False
    provenance: str = "builtin"
    count: int = 0
    advisory: bool = False
    source: str = "<builtin>"  # the pack file it came from
    source_line: int = 0
    # -- lifecycle and provenance of learned rules (pack format 2) --
    status: str = "active"  # one of STATUSES
    reviewed: bool = False  # a person accepted or rejected it (`tritonsmith rules review`)
    hold: str | None = None  # why a pending rule is not active yet
    template: str | None = None  # the normalised failure message it was induced from
    failures: tuple[int, ...] = ()  # ids in the failure log (the most recent ones)
    kernels: tuple[str, ...] = ()  # distinct kernels it was seen in (short hashes)
    first_seen: str | None = None  # ISO 8601, UTC
    last_seen: str | None = None
    examples: tuple[str, ...] = ()  # raw failure messages from its cluster
    contradictions: tuple[str, ...] = ()  # kernels its matcher flagged that then compiled (path:kernel)
    # The GPU targets it fails for, where it compiles for another (fp8e4nv on sm_80 and not on
    # sm_90): it fires only when the check is for one of them. Empty: every target.
    targets: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return self.status == "active"

    @property
    def doc_url(self) -> str:
        return f"https://github.com/tritonsmith/tritonsmith/blob/main/docs/rules/{self.code}.md"

    def applies_to(self, version: tuple[int, int] | None) -> bool:
        return version in self.triton

    def matches_error(self, message: str) -> bool:
        """Whether a compiler or runtime message matches one of this rule's signatures."""
        return self.active and any(re.search(sig, message) for sig in self.signatures)

    @staticmethod
    def valid_code(code: str) -> bool:
        return bool(_CODE.match(code))

    @staticmethod
    def valid_name(name: str) -> bool:
        return bool(_NAME.match(name))
