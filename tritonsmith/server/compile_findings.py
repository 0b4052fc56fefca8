"""The last save's compile and verification findings, kept true while the user types.

A compile finding was computed on the text of one kernel as saved. Each is kept with that text
and the kernel's first row (`anchor`); on every publish (`live`) a finding whose kernel still has
exactly that text moves with it (lines added above shift it), and one whose kernel changed or
went is hidden until the next save recomputes it: a `BLOCK_SIZE=100` error must not outlive
the edit that fixed it. A finding outside every kernel (a module's syntax error, a failed check
against the reference) belongs to the whole file and shows only while the file is as saved.

`merge` folds a compile finding into the static finding of the same rule on the same line, so
one mistake is one Problems entry that names both sources.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..analysis.document import Document
from ..analysis.index import ModuleIndex, index_module
from ..rules.findings import Finding

__all__ = ["CompileFinding", "anchor", "kernel_texts", "live", "merge"]


@dataclass(frozen=True)
class CompileFinding:
    """A finding with what it was computed on: the kernel's name (None for the whole file),
    its definition's text as saved (or the whole file's), and where it started then."""

    finding: Finding
    kernel: str | None
    text: bytes
    row: int = 0
    start_byte: int = 0


def anchor(source: str, by_kernel: Iterable[tuple[str, list[Finding]]], whole_file: Iterable[Finding] = ()
           ) -> list[CompileFinding]:
    """Tie each kernel's findings to its saved definition; findings outside it, and
    `whole_file`, to the saved file."""
    document = Document(source)
    index = index_module(document.root)
    data = document.source
    out: list[CompileFinding] = []
    for name, findings in by_kernel:
        kernel = index.kernel(name)
        for finding in findings:
            outer = kernel.outer if kernel is not None else None
            if outer is not None and outer.start_point[0] <= finding.span.start[0] <= outer.end_point[0]:
                out.append(CompileFinding(finding, name, data[outer.start_byte:outer.end_byte], outer.start_point[0],
                                          outer.start_byte))
            else:
                out.append(CompileFinding(finding, None, data))
    out += [CompileFinding(finding, None, data) for finding in whole_file]
    return out


def kernel_texts(source: str, names: Iterable[str]) -> dict[str, bytes]:
    """The definitions' texts of the named kernels in `source` (what was compiled), by name."""
    document = Document(source)
    index = index_module(document.root)
    out = {}
    for name in names:
        kernel = index.kernel(name)
        if kernel is not None:
            out[name] = document.source[kernel.outer.start_byte:kernel.outer.end_byte]
    return out


def live(anchored: Iterable[CompileFinding], data: bytes, index: ModuleIndex | None) -> list[Finding]:
    """The findings still true of the document now (`data`, parsed as `index`), moved to where
    their kernel is now."""
    out: list[Finding] = []
    for item in anchored:
        if item.kernel is None:
            if item.text == data:
                out.append(item.finding)
            continue
        kernel = index.kernel(item.kernel) if index is not None else None
        if kernel is None or data[kernel.outer.start_byte:kernel.outer.end_byte] != item.text:
            continue  # edited or gone: stale until the next save
        out.append(item.finding.shifted(kernel.outer.start_point[0] - item.row, kernel.outer.start_byte - item.start_byte))
    return out


def merge(static: list[Finding], compiled: list[Finding]) -> tuple[list[Finding], set[int]]:
    """The compile findings that no static finding already reports (same rule, same line), and
    the positions in `static` of those that do (their diagnostic names the compiler too)."""
    where = {(f.code, f.span.start[0]): i for i, f in enumerate(static) if f.code.startswith("TS")}
    kept: list[Finding] = []
    both: set[int] = set()
    for finding in compiled:
        position = where.get((finding.code, finding.span.start[0]))
        if position is None:
            kept.append(finding)
        else:
            both.add(position)
    return kept, both
