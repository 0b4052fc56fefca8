"""The matcher: runs the rules in force over every kernel of a module.

Work is cached per kernel. A kernel's findings depend on its own text and on a little context
(the module's imports and jit signatures, its launch sites, the Triton version), so the cache
key is exactly that; findings are stored relative to the kernel's first row and byte, and an
edit elsewhere in the file (even one that shifts the kernel down) costs a dictionary lookup.
Only the kernel an edit touched is checked again.

Suppressions (`# tritonsmith: ignore[TS101]`) and rule selection are applied after the cache,
since they are cheap and change independently of the code.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from ..analysis.document import Window
from ..analysis.index import Kernel, ModuleIndex, index_module
from ..analysis.rebase import Rebased
from ..analysis.statement_memo import StatementMemo
from ..analysis.syntax import enclosing

if TYPE_CHECKING:
    from tree_sitter import Node
from .checks import CHECKS, NEEDLES, RULE_CHECKS, Check, Hit
from .context import KernelContext, NeedsTypes, launch_param_types
from .findings import Finding, Fix, Related, Span, SpanEdit
from .forked import map_forked
from .model import Rule
from .pack import RuleSet

_CALLED = re.compile(rb"(?<![\w.])([A-Za-z_]\w*)\s*\(")  # `name(` in a kernel: the functions it calls
_CALLED_BY_TEXT: dict[bytes, frozenset[str]] = {}
_NAMES_A_LINE = re.compile(r"\bline \d")


def _called_names(kernel_text: bytes) -> frozenset[str]:
    """The names a kernel's text calls, memoised by the text: every edit recomputes every
    kernel's cache key, and an unchanged kernel should cost a dict lookup."""
    found = _CALLED_BY_TEXT.get(kernel_text)
    if found is None:
        if len(_CALLED_BY_TEXT) > 4096:
            _CALLED_BY_TEXT.clear()
        found = _CALLED_BY_TEXT[kernel_text] = frozenset(m.decode() for m in _CALLED.findall(kernel_text))
    return found

__all__ = ["CheckRecord", "Matcher", "select_rules", "suppressed_codes"]

KernelKey = tuple[bytes, bytes, tuple[tuple[int, int, int, bytes], ...], tuple[bytes, ...],
                  tuple[tuple[tuple[str, str], ...], ...], tuple[bytes, ...]]
"""A kernel's cache key (`Matcher._kernel_key`)."""
_Anchor = tuple[int, int, tuple[int, int], bytes]
"""A span outside a kernel and its launch sites that a finding points at (`'z' is defined
here`): its bytes, start point and text, which must all still hold for the finding to be reused."""
# One kernel's findings by check (its position in the plan), from a syntax-level pass.
_SyntaxDone = dict[int, list[Finding]]
_Cached = tuple[tuple[int, int] | int | None, list[Finding], tuple[_Anchor, ...]]
"""A kernel's findings relative to its start; the row, or (row, byte), they are pinned to, or
None; and the anchors they point at (`_Anchor`)."""

MEMO_BUDGET = 120_000
"""The statement memos' sizes (`StatementMemo.size`), summed, past which the least recently
checked kernels' memos go: a few MB, the memos of tens of thousands of lines of kernels."""

FORK_MIN_KERNELS = 64
"""A forked process checks at least this many kernels: fewer would not pay for the fork."""

log = logging.getLogger(__name__)

_SUPPRESS = re.compile(r"#\s*tritonsmith:\s*ignore(?:\[([^\]]*)\])?", re.IGNORECASE)


def suppressed_codes(line: str) -> set[str] | None:
    """Codes or names suppressed by a comment on this line; an empty set means all rules;
    None means no suppression comment."""
    match = _SUPPRESS.search(line)
    if match is None:
        return None
    if match.group(1) is None:
        return set()
    return {part.strip() for part in match.group(1).split(",") if part.strip()}


def _selected(rule: Rule, patterns: Sequence[str]) -> bool:
    return any(rule.code.startswith(p) or rule.name == p for p in patterns)


def select_rules(
    rules: Iterable[Rule], *, select: Sequence[str] = (), ignore: Sequence[str] = ()
) -> list[Rule]:
    """Rules picked by code, code prefix (`TS1`) or name; `ignore` wins over `select`."""
    out = []
    for rule in rules:
        if select and not _selected(rule, select):
            continue
        if ignore and _selected(rule, ignore):
            continue
        out.append(rule)
    return out


class Matcher:
    """Checks modules against a set of rules for one Triton version."""

    def __init__(
        self,
        rules: RuleSet | Iterable[Rule],
        *,
        version: tuple[int, int] | None,
        select: Sequence[str] = (),
        ignore: Sequence[str] = (),
        targets: Sequence[str] | None = None,
        remember_statements: bool = False,
    ) -> None:
        # A new matcher starts cold: the memos kept across edits (per file text) start empty.
        _CALLED_BY_TEXT.clear()
        self.version = version
        all_rules = list(rules)
        # A rule that fails for some targets only fires when the check is for one of them
        # (`targets`: the settings'; None, a check for any target, keeps every rule).
        self.rules = [
            r for r in select_rules(all_rules, select=select, ignore=ignore)
            if r.check and r.applies_to(version) and (targets is None or not r.targets or set(r.targets) & set(targets))
        ]
        unknown = [r for r in self.rules if r.check not in CHECKS and r.check not in RULE_CHECKS]
        for rule in unknown:
            log.warning("rule %s names an unknown check %r; it is skipped", rule.code, rule.check)
        # Each rule with its check and pre-filter, looked up once rather than per kernel; and
        # every distinct needle, so a kernel's text is searched once per needle, not per rule.
        self._plan: list[tuple[Rule, Check, tuple[bytes, ...] | None]] = []
        for r in self.rules:
            if r.check in CHECKS:
                self._plan.append((r, CHECKS[r.check or ""], NEEDLES.get(r.check or "")))
            elif r.check in RULE_CHECKS:  # a generic check bound to the rule (its stored query)
                try:
                    self._plan.append((r, *RULE_CHECKS[r.check or ""](r)))
                except ValueError as error:
                    log.warning("rule %s is skipped: %s", r.code, error)
        self.rules = [r for r, _, _ in self._plan]
        self._needles = sorted({n for _, _, needles in self._plan for n in needles or ()})
        self._cache: dict[KernelKey, _Cached] = {}
        # What each kernel's statements did (`analysis/statement_memo.py`), for an editor's
        # checks after an edit; off for a check of files, where it costs more than it replays.
        self.remember_statements = remember_statements
        self._statement_memos: dict[tuple[str, bytes, tuple[bytes, ...]], StatementMemo] = {}
        self._memo_ledger = [0]  # their sizes, summed
        # The last syntax-level pass (`check_syntax`): its index, text and, per kernel (by start
        # byte), each check's findings that needed no types. A check of that same index and text
        # runs only the checks the pass left out (`_SyntaxDone`).
        self._syntax_done: tuple[ModuleIndex, bytes, dict[int, _SyntaxDone]] | None = None
        self._identity = repr((version, [(r.code, r.severity.value, r.title, r.query, r.targets)
                                         for r in self.rules])).encode()

    # -- public ----------------------------------------------------------------------------

    def check_source(self, source: str | bytes, *, jobs: int = 1) -> list[Finding]:
        """Parse and check a whole file (the command line's entry point), its kernels split
        between `jobs` processes when there are enough of them to be worth a fork."""
        from ..analysis.document import Document

        document = Document(source)
        index = index_module(document.root)
        if jobs > 1 and len(index.kernels) >= FORK_MIN_KERNELS * jobs:
            return self._check_forked(document.source, index, jobs)
        return self.check_module(document.source, index)

    def check_module(self, source: bytes, index: ModuleIndex, record: CheckRecord | None = None) -> list[Finding]:
        steps = self.check_steps(source, index, record)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def check_steps(self, source: bytes, index: ModuleIndex,
                    record: CheckRecord | None = None) -> Generator[None, None, list[Finding]]:
        """`check_module` one kernel at a time: yields after each kernel and returns the
        findings. The language server runs it in slices between messages and drops it when an
        edit makes it stale; the kernels checked so far stay in the cache, so the next check
        starts where this one stopped. `record`, if given, is filled with what `check_rebased`
        starts from."""
        module_key = self._module_key(index)
        findings: list[Finding] = []
        live: set[KernelKey] = set()
        jit = {k.name: k for k in index.kernels}
        per_kernel: list[list[Finding]] = []
        for kernel in index.kernels:
            found, key = self._kernel_findings(kernel, module_key, index, source, jit)
            live.add(key)
            findings.extend(found)
            per_kernel.append(found)
            yield
        if record is not None:
            record.fill(self, index, module_key, source, per_kernel)
        if self._syntax_done is not None and self._syntax_done[0] is index:
            self._syntax_done = None  # what a kernel found in the cache left there
        # Forget kernels that no longer exist, so the cache stays the size of the file.
        if len(self._cache) > 2 * len(live) + 64:
            self._cache = {k: v for k, v in self._cache.items() if k in live}
        return self._finish(findings, source)

    def check_rebased(self, rebased: Rebased, source: bytes, previous: CheckRecord,
                      point: Callable[[int], tuple[int, int]]) -> tuple[list[Finding], CheckRecord]:
        """The findings of a rebased index (`analysis/rebase.py`: an edit inside one kernel's
        body), from the check of the index it was rebased from (`previous`): the kernels the
        edit may have changed are checked (most often the edited one alone), the others'
        findings are moved by the edit. `point`: a byte offset's (row, column) in `source`.
        Equal to a check of the whole file; the tests hold it to that."""
        index, window = rebased.index, rebased.window
        dirty = rebased.dirty_kernels()
        old_rows = previous.source.count(b"\n", window.start, window.old_end)
        rows_moved = source.count(b"\n", window.start, window.new_end) != old_rows
        for position, found in enumerate(previous.per_kernel):
            # A finding the edit reached into cannot be moved; a message naming a line cannot
            # move when lines come or go: check those kernels again.
            if found and position not in dirty and any(
                    _reached(f, window) or rows_moved and _NAMES_A_LINE.search(f.message) for f in found):
                dirty.add(position)
        jit = {k.name: k for k in index.kernels}
        per_kernel = list(previous.per_kernel)  # a kernel with nothing found: its empty list
        for position, found in enumerate(previous.per_kernel):
            if position in dirty:
                per_kernel[position], _ = self._kernel_findings(index.kernels[position], previous.module_key, index,
                                                                source, jit)
            elif found:
                per_kernel[position] = [_moved_finding(f, window, point) for f in found]
        record = CheckRecord()
        record.fill(self, index, previous.module_key, source, per_kernel)
        return self._finish([f for found in per_kernel for f in found], source), record

    def check_kernels(self, source: bytes, index: ModuleIndex, kernels: list[Kernel]) -> list[Finding]:
        """The findings of some of a file's kernels (what a hover needs while the whole file's
        check is still running); each is checked at most once, as in `check_module`."""
        module_key = self._module_key(index)
        jit = {k.name: k for k in index.kernels}
        findings = [f for kernel in kernels for f in self._kernel_findings(kernel, module_key, index, source, jit)[0]]
        return self._finish(findings, source)

    def check_syntax(self, source: bytes, index: ModuleIndex) -> list[Finding]:
        """The findings of the checks that need no type inference and no launch argument types
        (a check that asks for them is skipped whole, `NeedsTypes`): a subset of `check_module`'s,
        each finding the same, for a first answer sooner (the server's first diagnostics,
        server/early.py). What each check found is kept for the next check of this same index
        and text, which then runs only the checks left out here: the two passes cost one check."""
        findings: list[Finding] = []
        done: dict[int, _SyntaxDone] = {}
        for kernel in index.kernels:
            context = KernelContext(kernel, index, source, self.version, typed=False)
            kept = done[kernel.outer.start_byte] = {}
            try:
                findings.extend(self._run_checks(context, self._haystack(kernel, index), keep=kept))
            finally:
                context.close()
        self._syntax_done = (index, source, done)
        return self._finish(findings, source)

    # -- internals -------------------------------------------------------------------------

    def _check_forked(self, source: bytes, index: ModuleIndex, jobs: int) -> list[Finding]:
        """`check_module` with the kernels split between forked processes (`forked.py`). Each
        sends back its cache entries too, so a re-check here (`check --fix`) starts warm."""
        module_key = self._module_key(index)
        jit = {k.name: k for k in index.kernels}

        def work(kernels: list[Kernel]) -> list[tuple[KernelKey, _Cached, list[Finding]]]:
            out = []
            for kernel in kernels:
                found, key = self._kernel_findings(kernel, module_key, index, source, jit)
                out.append((key, self._cache[key], found))
            return out

        findings: list[Finding] = []
        for part in map_forked(index.kernels, jobs, work):
            for key, cached, found in part:
                self._cache[key] = cached
                findings.extend(found)
        return self._finish(findings, source)

    def _kernel_findings(self, kernel: Kernel, module_key: bytes, index: ModuleIndex, source: bytes,
                         jit: dict[str, Kernel]) -> tuple[list[Finding], KernelKey]:
        """A kernel's findings at its place in the file, and its cache key."""
        key = self._kernel_key(kernel, module_key, index, source, jit)
        base_row, base_byte = kernel.outer.start_point[0], kernel.outer.start_byte
        cached = self._cache.get(key)
        if cached is None or not _still_holds(cached, base_row, base_byte, source):
            memo = self._statement_memo(kernel, key) if self.remember_statements else None
            found = self._check_kernel(kernel, index, source, memo)
            # Findings are kept relative to the kernel, so they move with it. A message that
            # names a line ("with the values of this launch, line 21") cannot move: it is kept
            # for this row only. A span elsewhere in the file (a global's definition) moves
            # with that text, not the kernel: kept for this place only, while its text stays.
            anchors = _anchors(kernel, found, source)
            pinned: tuple[int, int] | int | None = (base_row, base_byte) if anchors else \
                base_row if any(_NAMES_A_LINE.search(f.message) for f in found) else None
            cached = (pinned, [f.shifted(-base_row, -base_byte) for f in found], anchors)
            self._cache[key] = cached
        return [f.shifted(base_row, base_byte) for f in cached[1]], key

    @staticmethod
    def _finish(findings: list[Finding], source: bytes) -> list[Finding]:
        findings = _drop_suppressed(findings, source)
        findings.sort(key=lambda f: (f.span.start, f.code))
        return findings

    def _module_key(self, index: ModuleIndex) -> bytes:
        digest = hashlib.blake2b(self._identity, digest_size=16)
        digest.update(repr(sorted(index.imports.names.items())).encode())
        digest.update(b"".join(kernel.name.encode() + kernel.signature for kernel in index.kernels))
        digest.update(repr(sorted(index.functions)).encode())
        for name, value in sorted(index.globals.items()):
            digest.update(name.encode() + b"=" + (value.text or b"")[:200])
        # Which of several definitions is the global (the last) decides where a finding's "defined
        # here" points: a definition more or less changes the key.
        digest.update(repr(sorted(index.redefined.items())).encode())
        return digest.digest()

    def _kernel_key(self, kernel: Kernel, module_key: bytes, index: ModuleIndex, source: bytes,
                    jit: dict[str, Kernel]) -> KernelKey:
        """What a kernel's findings depend on: its text, its launch sites and the argument types
        they allocate (the type checks read `torch.empty(..., dtype=...)` lines that are not part
        of the launch), and the jit helpers it calls (their return types). A tuple of the texts
        themselves, not a digest of them: a dict compares them exactly, and hashing 2 MB of
        kernels per keystroke with blake2 cost more than the rest of the key."""
        outer = kernel.outer
        base_row, base_byte = outer.start_point[0], outer.start_byte
        # Where each site is from the kernel, in rows, column and bytes: a finding at a launch is
        # kept relative to the kernel too, so the text between them must not have moved.
        sites = tuple((site.node.start_point[0] - base_row, site.node.start_point[1],
                       site.node.start_byte - base_byte, site.node.text or b"")
                      for site in kernel.launches + kernel.direct_calls)
        # The functions the sites are in: checks read the names a launch passes back to their
        # assignments there (`grid = lambda META: ...`, `BLOCK = 1024`).
        launchers = tuple({id(n): n.text or b"" for site in kernel.launches + kernel.direct_calls
                           if (n := _launcher(site.node)) is not None}.values())
        types = tuple(tuple(sorted(launch_param_types(kernel, index, site, source).items()))
                      for site in kernel.launches)
        outer_text = outer.text or b""
        # Names called in the decorators too (read from the text this key holds anyway, not a
        # second copy of the body): a helper more in the key only makes it stricter.
        called = _called_names(outer_text)
        helpers = tuple(jit[name].outer.text or b"" for name in sorted(n for n in called if n in jit and n != kernel.name))
        return (module_key, outer_text, sites, launchers, types, helpers)

    def _statement_memo(self, kernel: Kernel, key: KernelKey) -> StatementMemo:
        """What the kernel's statements did when its last version was checked, for the type
        inference to replay those an edit left alone (`analysis/statement_memo.py`). One per
        kernel name, module key and helper texts: what a memo takes as fixed."""
        memo_key = (kernel.name, key[0], key[5])
        memo = self._statement_memos.pop(memo_key, None) or StatementMemo(self._memo_ledger)
        self._statement_memos[memo_key] = memo  # the most recently used last
        while self._memo_ledger[0] > MEMO_BUDGET and len(self._statement_memos) > 1:
            self._statement_memos.pop(next(iter(self._statement_memos))).clear()  # the least recently used
        return memo

    def _check_kernel(self, kernel: Kernel, index: ModuleIndex, source: bytes,
                      memo: StatementMemo | None = None) -> list[Finding]:
        context = KernelContext(kernel, index, source, self.version, memo=memo)
        done = None
        if self._syntax_done is not None and self._syntax_done[0] is index and self._syntax_done[1] is source:
            done = self._syntax_done[2].pop(kernel.outer.start_byte, None)
        try:
            return self._run_checks(context, self._haystack(kernel, index), done=done)
        finally:
            context.close()
            if memo is not None:
                memo.end_check()

    @staticmethod
    def _haystack(kernel: Kernel, index: ModuleIndex) -> bytes:
        """The text the rules' needles are looked for in: the kernel, the imports, its launches."""
        return b"\n".join(
            [kernel.outer.text or b"", index.imports.text]
            + [site.node.text or b"" for site in kernel.launches + kernel.direct_calls]
        )

    def _run_checks(self, context: KernelContext, haystack: bytes, *, keep: _SyntaxDone | None = None,
                    done: _SyntaxDone | None = None) -> list[Finding]:
        """Every check of the plan on one kernel, in the plan's order. `keep`: filled with each
        check's findings (the syntax-level pass); `done`: such findings, taken instead of
        running those checks again."""
        findings: list[Finding] = []
        seen: set[tuple[str, int, int]] = set()
        present = {n for n in self._needles if n in haystack}
        for position, (rule, check, needles) in enumerate(self._plan):
            if needles is not None and present.isdisjoint(needles):
                continue
            found = done.get(position) if done is not None else None
            if found is None:
                try:
                    found = [_finding(rule, hit) for hit in check(context)]
                except NeedsTypes:  # a syntax-level pass (`check_syntax`): left to the typed one
                    continue
                except Exception:  # a bug in one check must not hide the others
                    log.exception("check %s failed on kernel %s", rule.check, context.kernel.name)
                    found = []
                if keep is not None:
                    keep[position] = found
            for finding in found:
                key = (rule.code, finding.span.start_byte, finding.span.end_byte)
                if key not in seen:
                    seen.add(key)
                    findings.append(finding)
        return findings


def _anchors(kernel: Kernel, found: list[Finding], source: bytes) -> tuple[_Anchor, ...]:
    """The spans of `found` outside the kernel and its launch sites (`_Anchor`)."""
    if not found:
        return ()
    ranges = [(kernel.outer.start_byte, kernel.outer.end_byte)] + \
        [(s.node.start_byte, s.node.end_byte) for s in kernel.launches + kernel.direct_calls]
    return tuple((span.start_byte, span.end_byte, span.start, source[span.start_byte:span.end_byte])
                 for finding in found for span in _spans(finding)
                 if not any(start <= span.start_byte and span.end_byte <= end for start, end in ranges))


def _still_holds(cached: _Cached, base_row: int, base_byte: int, source: bytes) -> bool:
    """Whether cached findings may be reused for a kernel starting here (`_Cached`)."""
    pinned, _, anchors = cached
    if pinned is None:
        return True
    if isinstance(pinned, int):
        return pinned == base_row
    return pinned == (base_row, base_byte) and all(
        source[start:end] == text and (source.count(b"\n", 0, start), start - source.rfind(b"\n", 0, start) - 1) == point
        for start, end, point, text in anchors)


def _launcher(site: Node) -> Node | None:
    """The function a launch site is in (None at module level: its names are globals, which
    the module's key holds)."""
    return enclosing(site, "function_definition")


class CheckRecord:
    """What a finished check of a document saw: the matcher and index it ran with, the module's
    key, the text, and each kernel's findings before suppressions (in `index.kernels` order)."""

    def __init__(self) -> None:
        self.matcher: Matcher | None = None
        self.index: ModuleIndex | None = None
        self.module_key = b""
        self.source = b""
        self.per_kernel: list[list[Finding]] = []

    def fill(self, matcher: Matcher, index: ModuleIndex, module_key: bytes, source: bytes,
             per_kernel: list[list[Finding]]) -> None:
        self.matcher, self.index, self.module_key, self.source, self.per_kernel = \
            matcher, index, module_key, source, per_kernel


def _spans(finding: Finding) -> Iterator[Span]:
    yield finding.span
    for related in finding.related:
        yield related.span
    if finding.fix is not None:
        for edit in finding.fix.edits:
            yield edit.span


def _reached(finding: Finding, window: Window) -> bool:
    """Whether an edit reached into one of the finding's spans (or touched one)."""
    return any(span.start_byte <= window.old_end and span.end_byte >= window.start for span in _spans(finding))


def _moved_span(span: Span, window: Window, point: Callable[[int], tuple[int, int]]) -> Span:
    if span.end_byte <= window.start:
        return span
    start, end = span.start_byte + window.shift, span.end_byte + window.shift
    return Span(point(start), point(end), start, end)


def _moved_finding(finding: Finding, window: Window, point: Callable[[int], tuple[int, int]]) -> Finding:
    """A finding of a kernel the edit did not reach, where its text is now (spans before the
    edit stay; those after it move by its bytes, their rows and columns read again)."""
    if all(span.end_byte <= window.start for span in _spans(finding)):
        return finding
    return finding._replace(
        span=_moved_span(finding.span, window, point),
        related=tuple(Related(_moved_span(r.span, window, point), r.message) for r in finding.related),
        fix=None if finding.fix is None else Fix(finding.fix.title, tuple(
            SpanEdit(_moved_span(e.span, window, point), e.new_text) for e in finding.fix.edits)),
    )


def _finding(rule: Rule, hit: Hit) -> Finding:
    span = hit.node if isinstance(hit.node, Span) else Span.of(hit.node)
    message = hit.message or rule.title
    if hit.fix is None and rule.how_to_fix:
        message = f"{message}. {rule.how_to_fix}"
    return Finding(
        code=rule.code,
        name=rule.name,
        severity=rule.severity,
        message=message,
        span=span,
        related=tuple(hit.related),
        fix=hit.fix,
        secondary=hit.secondary,
    )


def _drop_suppressed(findings: list[Finding], source: bytes) -> list[Finding]:
    # Whether the file mentions tritonsmith at all, where that is cheaper than reading each
    # finding's lines (lower-casing 2 MB costs a millisecond).
    if len(findings) * 256 > len(source) and b"tritonsmith" not in source.lower():
        return findings
    out = []
    for finding in findings:
        suppressed = False
        # The line around each end of the finding, found from its byte offset: splitting a
        # 55,000-line file into lines on every keystroke cost more than the findings.
        for at in {finding.span.start_byte, finding.span.end_byte}:
            end = source.find(b"\n", at)
            line = source[source.rfind(b"\n", 0, at) + 1:end if end >= 0 else len(source)]
            codes = suppressed_codes(line.decode("utf-8", errors="replace"))
            if codes is not None and (not codes or finding.code in codes or finding.name in codes):
                suppressed = True
        if not suppressed:
            out.append(finding)
    return out
