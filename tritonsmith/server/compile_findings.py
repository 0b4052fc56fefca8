"""The last save's compile and verification findings, kept true while the user types.

A compile finding was computed on the text of one kernel as saved, and on its launches: the
constexpr values and argument types a compile uses come from the functions that launch it.
Each is kept with those texts (`compiled_on`) and the kernel's first row (`anchor`); on every
publish (`live`) a finding whose kernel and launchers still read exactly so moves with the
kernel (lines added above shift it), and one whose kernel or launcher changed, or went, is
hidden until a compile recomputes it: a `BLOCK_SIZE=100` error must not outlive the edit that
fixed it, in the kernel or at its launch. A finding outside every kernel (a module's syntax error, a failed check
against the reference) belongs to the whole file and shows only while the file is as saved.

`merge` folds a compile finding into the static finding of the same rule on the same line, so
one mistake is one Problems entry that names both sources.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..analysis.document import Document
from ..analysis.index import Kernel, ModuleIndex, index_module
from ..rules.findings import Finding

__all__ = ["CompileFinding", "anchor", "compiled_on", "kernel_texts", "live", "merge"]


@dataclass(frozen=True)
class CompileFinding:
    """A finding with what it was computed on: the kernel's name (None for the whole file),
    its `compiled_on` text as saved (or the whole file's), and where it started then."""

    finding: Finding
    kernel: str | None
    text: bytes
    row: int = 0
    start_byte: int = 0


def compiled_on(data: bytes, kernel: Kernel) -> bytes:
    """What a compile of `kernel` read in the file `data`: its definition, then each top-level
    statement that launches or calls it (the launcher function, whose allocations give the
    pointer types and whose launch gives the constexprs), in file order."""
    launchers: dict[int, tuple[int, int]] = {}
    for site in kernel.launches + kernel.direct_calls:
        statement = site.node
        while statement.parent is not None and statement.parent.type != "module":
            statement = statement.parent
        launchers[statement.start_byte] = (statement.start_byte, statement.end_byte)
    parts = [data[kernel.outer.start_byte:kernel.outer.end_byte]]
    parts += [data[start:end] for start, end in (launchers[k] for k in sorted(launchers))]
    return b"\0".join(parts)


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
            if kernel is not None and kernel.outer.start_point[0] <= finding.span.start[0] <= kernel.outer.end_point[0]:
                out.append(CompileFinding(finding, name, compiled_on(data, kernel), kernel.outer.start_point[0],
                                          kernel.outer.start_byte))
            else:
                out.append(CompileFinding(finding, None, data))
    out += [CompileFinding(finding, None, data) for finding in whole_file]
    return out


def kernel_texts(source: str, names: Iterable[str]) -> dict[str, bytes]:
    """What was compiled of each named kernel in `source` (`compiled_on`), by name."""
    document = Document(source)
    index = index_module(document.root)
    out = {}
    for name in names:
        kernel = index.kernel(name)
        if kernel is not None:
            out[name] = compiled_on(document.source, kernel)
    return out


def live(anchored: Iterable[CompileFinding], data: bytes, index: ModuleIndex | None) -> list[Finding]:
    """The findings still true of the document now (`data`, parsed as `index`), moved to where
    their kernel is now."""
    out: list[Finding] = []
    now: dict[str, bytes] = {}  # each kernel's `compiled_on` text, read once per publish
    for item in anchored:
        if item.kernel is None:
            if item.text == data:
                out.append(item.finding)
            continue
        kernel = index.kernel(item.kernel) if index is not None else None
        if kernel is not None and item.kernel not in now:
            now[item.kernel] = compiled_on(data, kernel)
        if kernel is None or now[item.kernel] != item.text:
            continue  # edited (here or where it is launched) or gone: stale until compiled again
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
