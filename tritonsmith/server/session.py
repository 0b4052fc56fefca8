"""What the server knows of this editor session, apart from the connection: the open documents
(each incrementally parsed, indexed and checked), the workspace (settings, rule packs, matcher),
and what the client said it supports.

`Session` is what the collaborators that do the work depend on (`jobs.py`, `publish.py`,
`searches.py`, the features): they read and change documents through it, and talk to the
client through the pygls `LanguageServer` they are handed beside it, never through
`TritonsmithServer` (server.py), which owns the connection and the checking loop's schedule.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from lsprotocol import types

from ..analysis import Document, ModuleIndex, index_module
from ..analysis.index import LaunchCache
from ..analysis.rebase import Rebased, rebase
from ..rules import Finding
from ..rules.matcher import CheckRecord
from ..settings import Settings
from ..workspace import Workspace
from .compile_findings import CompileFinding
from .rule_pages import RulePages

if TYPE_CHECKING:
    from ..evaluator.reports import KernelReport
    from ..evaluator.verify import Verdict
    from .early import EarlyCheck

__all__ = ["ClosedCompile", "OpenDocument", "Session", "mark_dirty"]

log = logging.getLogger(__name__)


@dataclass
class OpenDocument:
    uri: str
    version: int | None
    document: Document
    index: ModuleIndex | None = None
    findings: list[Finding] = field(default_factory=list)
    dirty: bool = True
    launch_cache: LaunchCache = field(default_factory=LaunchCache)
    # Every edit or change of rules starts a new generation: a check of an older one is stale.
    generation: int = 0
    index_generation: int = -1  # the generation `index` was built for
    published_generation: int = -1
    pending: tuple[int, Generator[None, None, list[Finding]]] | None = None  # the running check
    # What the last finished check saw, the text `index` was built from, and, when `index` was
    # carried across an edit in a kernel's body (analysis/rebase.py), how: together they let the
    # next check re-check only the kernels the edit may have changed (`Matcher.check_rebased`).
    record: CheckRecord | None = None
    index_source: bytes = b""
    rebased: Rebased | None = None
    # The last save's compile results (each finding with the kernel text it was computed on:
    # `compile_findings.live` shows it while that text is unchanged) and its job's cancel switch.
    compile_findings: list[CompileFinding] = field(default_factory=list)
    compile_reports: list[KernelReport] = field(default_factory=list)  # full compiles only
    # Kernels whose compiler frontend failed after a pause in typing: the code lens shows this
    # report over the last full compile's until the kernel passes again or the file is saved.
    typing_failures: dict[str, KernelReport] = field(default_factory=dict)
    compile_cancel: threading.Event | None = None
    # Each kernel's definition as last compiled (a save, or a pause in typing): a kernel whose
    # text differs is compiled again after the next pause (jobs.py, compileWhileTypingMs).
    compiled_texts: dict[str, bytes] = field(default_factory=dict)
    # The same, as last compiled in full (a save, or the full compile after a pause): a kernel
    # whose text differs is compiled in full after its frontend passes.
    full_texts: dict[str, bytes] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)  # the last save's checks against references


PREPARE_EDITS_BYTES = 256 * 1024
"""From this size on, an opened document is re-parsed once at open (`Document.prepare_for_edits`)."""

KEEP_CLOSED_COMPILES = 64
"""How many closed documents' compile results are kept for their reopening."""


class ClosedCompile(NamedTuple):
    """What a closed document's last compile found (`OpenDocument`'s fields of the same names)."""

    compile_findings: list[CompileFinding]
    compile_reports: list[KernelReport]
    compiled_texts: dict[str, bytes]
    full_texts: dict[str, bytes]
    verdicts: list[Verdict]


def mark_dirty(state: OpenDocument) -> None:
    """The document or the rules changed: a new generation, and the running check is stale."""
    state.dirty = True
    state.generation += 1
    state.pending = None


class Session:
    """The open documents, the workspace and the client's capabilities (see the module's
    docstring). `position_encoding` says what the client negotiated (pygls knows it once
    `initialize` is answered)."""

    def __init__(self, position_encoding: Callable[[], str] = lambda: "utf-16") -> None:
        self.documents: dict[str, OpenDocument] = {}
        # The compile results of documents closed lately, by URI: reopening a file shows the
        # last compile's findings again while its text is what they were computed on.
        self._closed_compiles: dict[str, ClosedCompile] = {}
        self._position_encoding = position_encoding
        self.root: Path | None = None
        # Read at `initialize` (`TritonsmithServer.reload`), where the root is known: not when the
        # session is made as well, the packs would be read twice before the first diagnostics.
        self._workspace: Workspace | None = None
        self._rule_pages: RulePages | None = None
        # What the client supports (features/configuration.py, at `initialize`).
        self.pull_diagnostics = False
        self.supports_refresh = False
        self.client_supports_code_lens_refresh = False
        # What the early phase (early.py) checked before this session existed, until the first
        # document is opened: `keep_workspace` and `open` take it up instead of doing it again.
        self._early: EarlyCheck | None = None

    # -- workspace -------------------------------------------------------------------------

    @property
    def workspace(self) -> Workspace:
        """The workspace's settings and rules; the defaults until `initialize` (a server a test
        drives without one)."""
        if self._workspace is None:
            self._workspace = Workspace(None, Settings(), editing=True)
        return self._workspace

    @property
    def rule_pages(self) -> RulePages:
        if self._rule_pages is None:
            self._rule_pages = RulePages(self.workspace.rules, self.root)
        return self._rule_pages

    def adopt_early(self, checked: EarlyCheck | None) -> None:
        self._early = checked

    def keep_workspace(self, workspace: Workspace) -> bool:
        """Whether `workspace` checks exactly as the one in use, which then stays, with its cached
        results, and nothing is checked again (the settings pulled after `initialize` are most
        often the ones it had). Before any, the early phase's workspace is taken up so."""
        early = self._early.workspace if self._early is not None else None
        if early is not None and self._workspace is not early and early.same_as(workspace):
            self.use_workspace(early)
            return True
        return self._workspace is not None and self._workspace.same_as(workspace)

    def use_workspace(self, workspace: Workspace) -> None:
        """New settings or rules: every open document is checked again."""
        self._workspace = workspace
        self._rule_pages = RulePages(workspace.rules, self.root)
        if self._early is not None and self._early.workspace is not workspace:
            self._early = None  # checked with other settings or rules: nothing to take up
        for state in self.documents.values():
            mark_dirty(state)

    @property
    def encoding(self) -> str:
        return self._position_encoding()

    # -- documents -------------------------------------------------------------------------

    def open(self, uri: str, version: int | None, text: str) -> OpenDocument:
        early = self._early
        if early is not None and early.uri == uri:
            self._early = None
        if early is not None and (early.uri, early.version, early.text) == (uri, version, text) \
                and early.workspace is self._workspace and early.document.encoding == self.encoding:
            # The document the early phase checked, with this session's workspace: its parse,
            # index and findings are this check's.
            state = OpenDocument(uri=uri, version=version, document=early.document, index=early.index,
                                 findings=early.findings, dirty=False, launch_cache=early.index.launch_cache,
                                 index_generation=0, record=early.record, index_source=early.document.source)
        else:
            state = OpenDocument(uri=uri, version=version, document=Document(text, encoding=self.encoding))
        if len(state.document.source) > PREPARE_EDITS_BYTES:
            state.document.prepare_for_edits()
        if (kept := self._closed_compiles.pop(uri, None)) is not None:
            (state.compile_findings, state.compile_reports, state.compiled_texts, state.full_texts,
             state.verdicts) = kept
        self.documents[uri] = state
        return state

    def change(self, uri: str, version: int | None, changes: list[types.TextDocumentContentChangeEvent]) -> None:
        state = self.documents.get(uri)
        if state is None:
            log.warning("didChange for a document that is not open: %s", uri)
            return
        for change in changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                rng = change.range
                state.document.edit(
                    (rng.start.line, rng.start.character), (rng.end.line, rng.end.character), change.text
                )
            else:
                state.document.replace(change.text)
        state.version = version
        mark_dirty(state)

    def close(self, uri: str) -> None:
        state = self.documents.pop(uri, None)
        if state is not None and state.compile_cancel is not None:
            state.compile_cancel.set()
        if state is not None and (state.compile_findings or state.compiled_texts):
            self._closed_compiles.pop(uri, None)
            self._closed_compiles[uri] = ClosedCompile(state.compile_findings, state.compile_reports,
                                                       state.compiled_texts, state.full_texts, state.verdicts)
            while len(self._closed_compiles) > KEEP_CLOSED_COMPILES:
                del self._closed_compiles[next(iter(self._closed_compiles))]  # the oldest

    # -- checking --------------------------------------------------------------------------

    def current_index(self, state: OpenDocument) -> ModuleIndex:
        """The kernel index of the document as it is now, built once per generation: carried
        across the edits since the last one when they all lie in one kernel's body, else built
        from the whole tree."""
        if state.index is None or state.index_generation != state.generation:
            window = state.document.take_window()
            state.rebased = None
            if state.index is not None and window is not None:
                try:
                    state.rebased = rebase(state.index, state.index_source, state.document.root,
                                           state.document.source, window)
                except Exception:  # never worse than indexing in full
                    log.exception("carrying the index of %s across an edit failed", state.uri)
            state.index = state.rebased.index if state.rebased is not None else \
                index_module(state.document.root, launch_cache=state.launch_cache)
            state.index_source = state.document.source
            state.index_generation = state.generation
        return state.index

    def ensure_checked(self, state: OpenDocument) -> None:
        """Finish the check of the document as it is now, here (the whole file's findings)."""
        self.advance(state, None)

    def check_open_documents(self) -> None:
        """Finish the check of every open document now: after the early phase (early.py) the
        client has the first diagnostics and may act on them (a lightbulb, a fix-all) before a
        check in slices would have finished."""
        for state in list(self.documents.values()):
            self.ensure_checked(state)

    def findings_near(self, state: OpenDocument, start: tuple[int, int], end: tuple[int, int]) -> list[Finding]:
        """The findings that touch rows and columns `start`..`end`, without waiting for the
        rest of the file: while its check is running, only the kernels there are checked."""
        if state.dirty:
            try:
                index = self.current_index(state)
                kernels = [k for k in index.kernels if k.outer.start_point <= end and start <= k.outer.end_point]
                found = self.workspace.matcher.check_kernels(state.document.source, index, kernels)
            except Exception:  # never let one file's analysis take the server down
                log.exception("checking %s failed", state.uri)
                return []
        else:
            found = state.findings
        return [f for f in found if f.span.start <= end and start <= f.span.end]

    def advance(self, state: OpenDocument, until: float | None) -> bool:
        """Run the current generation's check until it is done (True) or `until` passes (the
        server runs a long one in slices between messages)."""
        if not state.dirty:
            return True
        try:
            if state.pending is None or state.pending[0] != state.generation:
                index = self.current_index(state)
                state.pending = (state.generation, self._check(state, index))
            steps = state.pending[1]
            while True:
                next(steps)
                if until is not None and time.monotonic() >= until:
                    return False
        except StopIteration as done:
            state.findings = done.value
        except Exception:  # never let one file's analysis take the server down
            log.exception("checking %s failed", state.uri)
            state.findings = []
            state.record = None
        state.pending = None
        state.dirty = False
        return True


    def _check(self, state: OpenDocument, index: ModuleIndex) -> Generator[None, None, list[Finding]]:
        """The check of `index`, in steps: the kernels an edit in one body may have changed
        when the index was carried across it from the last check's, else every kernel (from
        the matcher's cache where unchanged)."""
        matcher, source, previous, rebased = self.workspace.matcher, state.document.source, state.record, state.rebased
        if rebased is not None and previous is not None and previous.index is rebased.old and previous.matcher is matcher:
            findings, state.record = matcher.check_rebased(rebased, source, previous, state.document.point)
            return findings
        if rebased is not None:  # no check of the index it came from to start from: index in full
            index = state.index = index_module(state.document.root, launch_cache=state.launch_cache)
            state.rebased = None
        record = CheckRecord()
        findings = yield from matcher.check_steps(source, index, record)
        state.record = record
        return findings
