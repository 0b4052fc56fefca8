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

__all__ = ["COMPILE_SOURCE", "CompileFinding", "anchor", "compiled_on", "kernel_texts", "live", "merge"]

COMPILE_SOURCE = "tritonsmith-verify"  # the diagnostics' source of what a compile or verification found


@dataclass(frozen=True)
class CompileFinding:
    """A finding with what it was computed on: the kernel's name (None for the whole file),
    its `compiled_on` text as saved (or the whole file's), and where the part of that text the
    finding is in (`part`: 0 the kernel, then each launcher in file order) started then."""

    finding: Finding
    kernel: str | None
    text: bytes
    row: int = 0
    start_byte: int = 0
    part: int = 0


def _parts(kernel: Kernel) -> list[tuple[int, int, int]]:
    """What a compile of `kernel` reads, as (start byte, end byte, first row): its definition,
    then each top-level statement that launches or calls it (the launcher function, whose
    allocations give the pointer types and whose launch gives the constexprs), in file order."""
    launchers: dict[int, tuple[int, int, int]] = {}
    for site in kernel.launches + kernel.direct_calls:
        statement = site.node
        while statement.parent is not None and statement.parent.type != "module":
            statement = statement.parent
        launchers[statement.start_byte] = (statement.start_byte, statement.end_byte, statement.start_point[0])
    outer = kernel.outer
    return [(outer.start_byte, outer.end_byte, outer.start_point[0])] + [launchers[k] for k in sorted(launchers)]


def compiled_on(data: bytes, kernel: Kernel) -> bytes:
    """What a compile of `kernel` read in the file `data` (`_parts`), joined."""
    return _joined(data, _parts(kernel))


def _joined(data: bytes, parts: list[tuple[int, int, int]]) -> bytes:
    return b"\0".join(data[start:end] for start, end, _ in parts)


def anchor(source: str, by_kernel: Iterable[tuple[str, list[Finding]]], whole_file: Iterable[Finding] = ()
           ) -> list[CompileFinding]:
    """Tie each kernel's findings to its saved definition and launchers (a finding at a launch,
    such as shared memory over the limit, goes with the kernel: a compile of the kernel
    recomputes it); findings outside them, and `whole_file`, to the saved file."""
    document = Document(source)
    index = index_module(document.root)
    data = document.source
    out: list[CompileFinding] = []
    for name, findings in by_kernel:
        kernel = index.kernel(name)
        parts = _parts(kernel) if kernel is not None else []
        text = _joined(data, parts)
        for finding in findings:
            at = document.offset(*finding.span.start)
            part = next((i for i, (start, end, _) in enumerate(parts) if start <= at <= end), None)
            if kernel is not None and part is not None:
                start, _, row = parts[part]
                out.append(CompileFinding(finding, name, text, row, start, part))
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
    their part of the kernel's text is now."""
    out: list[Finding] = []
    now: dict[str, tuple[bytes, list[tuple[int, int, int]]]] = {}  # each kernel's text and parts, once per publish
    for item in anchored:
        if item.kernel is None:
            if item.text == data:
                out.append(item.finding)
            continue
        kernel = index.kernel(item.kernel) if index is not None else None
        if kernel is not None and item.kernel not in now:
            parts = _parts(kernel)
            now[item.kernel] = (_joined(data, parts), parts)
        if kernel is None or now[item.kernel][0] != item.text:
            continue  # edited (here or where it is launched) or gone: stale until compiled again
        start, _, row = now[item.kernel][1][item.part]
        out.append(item.finding.shifted(row - item.row, start - item.start_byte))
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
