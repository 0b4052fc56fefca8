"""The language server's state: open documents, the workspace's rules, and the checking loop.

`TritonsmithServer` holds one `OpenDocument` per URI (its incrementally parsed `Document`, its
kernel index and its latest findings) and one `Workspace` (settings, packs, matcher). Features in
`features/` register handlers that call into it; only `publish.py` sends diagnostics.

Checking is coalesced: an edit marks the document dirty and schedules one check with
`call_soon`, so a burst of `didChange` notifications already queued is applied first and
checked once. A check of an edited file re-runs the rules only for the kernels the edit touched
(the matcher's per-kernel cache), so it stays within milliseconds on large files.

A check that takes longer (opening a large file, new rules) runs in slices of `SLICE_S`
between messages, a kernel at a time (`Matcher.check_steps`): the next edit drops it (every
edit starts a new `generation`), and what it checked so far stays in the matcher's cache. Hover
and code actions never wait for it: they check the kernels they need (`findings_near`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol.language_server import LanguageServerProtocol, lsp_method
from pygls.uris import to_fs_path

from .. import __version__
from ..analysis import Document, ModuleIndex, index_module
from ..analysis.index import LaunchCache
from ..analysis.rebase import Rebased, rebase
from ..rules import Finding
from ..rules.matcher import CheckRecord
from ..settings import Settings, find_workspace_root, read_pyproject
from ..workspace import Workspace
from .compile_findings import CompileFinding
from .framing import Framer
from .rule_pages import RulePages

if TYPE_CHECKING:
    from ..evaluator.reports import KernelReport
    from ..evaluator.verify import Verdict
    from .features.watch import PackWatcher

__all__ = ["OpenDocument", "TritonsmithServer"]

log = logging.getLogger(__name__)

SLICE_S = 0.02  # a long check gives the event loop back at least this often


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


class TritonsmithProtocol(LanguageServerProtocol):
    """pygls' protocol without its copy of each open document, and without its future leak.

    pygls keeps a copy of each document in its workspace and applies every edit to it by
    splitting the whole text into lines, on every keystroke, for a copy nothing reads. The
    server keeps the documents (`OpenDocument`: the text, edited in place, and tree-sitter's
    incremental parse).

    pygls (2.1) files the future of every asynchronous or threaded handler under a message id in
    `_request_futures`, and only a request's response takes it out again: a notification's
    handler, and each handler a generator handler yields to, stay there for good (about 2 KB per
    edit). `_execute_handler` takes each one out when it is done."""

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):  # type: ignore[no-untyped-def]
        def forget_then(future, _callback=callback):  # type: ignore[no-untyped-def]
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            _callback(future)

        return super()._execute_handler(msg_id, handler, forget_then, args, kwargs)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args):  # type: ignore[no-untyped-def]
        """pygls' own, over a copy of the pending futures: cancelling one runs its callback at
        once, which (`_execute_handler`) takes it out of the dict being walked."""
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True

    exit_without_shutdown = False  # `exit` came first: the process must end with status 1

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args):  # type: ignore[no-untyped-def]
        self.exit_without_shutdown = not self._shutdown
        yield from super().lsp_exit(*args)

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):  # type: ignore[no-untyped-def]
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):  # type: ignore[no-untyped-def]
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):  # type: ignore[no-untyped-def]
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


class TritonsmithServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("tritonsmith", __version__, protocol_cls=TritonsmithProtocol)
        self.documents: dict[str, OpenDocument] = {}
        # The compile results of documents closed lately, by URI: reopening a file shows the
        # last compile's findings again while its text is what they were computed on.
        self._closed_compiles: dict[str, ClosedCompile] = {}
        self.framer = Framer()  # what splits the client's stream (transport.py); maxMessageMb sets its limit
        self.editor_settings: dict = {}
        self.settings_warnings: list[str] = []
        self.root: Path | None = None
        # Read at `initialize` (`reload`), where the root is known: not here as well, the
        # packs would be read twice before the first diagnostics.
        self._workspace_state: Workspace | None = None
        self._rule_pages: RulePages | None = None
        self.pull_diagnostics = False
        self.supports_refresh = False
        self.client_supports_code_lens_refresh = False
        self._scheduled: set[str] = set()
        self._checks: dict[str, asyncio.Task[None]] = {}  # checks running in slices, by URI
        self._reported_pack_errors: set[str] = set()
        self.watcher: PackWatcher | None = None  # set by features.watch
        from .jobs import CompileJobs
        from .searches import Searches

        self.jobs = CompileJobs(self)
        self.searches = Searches(self)  # "Optimize this kernel"

    # -- settings and rules ----------------------------------------------------------------

    @property
    def workspace_state(self) -> Workspace:
        """The workspace's settings and rules; the defaults until `initialize` (a server a test
        drives without one)."""
        if self._workspace_state is None:
            self._workspace_state = Workspace(None, Settings())
        return self._workspace_state

    @property
    def rule_pages(self) -> RulePages:
        if self._rule_pages is None:
            self._rule_pages = RulePages(self.workspace_state.rules, self.root)
        return self._rule_pages

    @property
    def encoding(self) -> str:
        try:
            encoding = self.workspace.position_encoding
        except Exception:  # before initialize
            return "utf-16"
        return str(getattr(encoding, "value", encoding) or "utf-16")

    def set_root(self, root_uri: str | None) -> None:
        path = to_fs_path(root_uri) if root_uri else None
        self.root = find_workspace_root(Path(path)) if path else None

    def compute_settings(self) -> Settings:
        warnings: list[str] = []
        pyproject = read_pyproject(self.root, warnings=warnings) if self.root else {}
        settings = Settings.merged(pyproject, self.editor_settings, warnings=warnings)
        for warning in warnings:
            if warning not in self.settings_warnings:
                self.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"tritonsmith: {warning}"))
        self.settings_warnings = warnings
        return settings

    def reload(self, *, editor_settings: dict | None = None) -> None:
        """Re-read settings and packs, then re-check every open document."""
        if editor_settings is not None:
            self.editor_settings = editor_settings
        self._workspace_state = Workspace(self.root, self.compute_settings())
        self._rule_pages = RulePages(self._workspace_state.rules, self.root)
        # tritonsmith.logLevel: the server's own loggers (pygls stays at warnings).
        logging.getLogger("tritonsmith").setLevel(self.workspace_state.settings.log_level.upper())
        self.framer.max_bytes = self.workspace_state.settings.max_message_mb * 1024 * 1024
        self.report_pack_errors()
        for uri, state in list(self.documents.items()):
            mark_dirty(state)
            self.schedule_check(uri)
        if self.watcher is not None:
            self.watcher.update(self)
        from .publish import refresh

        refresh(self)

    def report_pack_errors(self) -> None:
        """Show each malformed pack once (per distinct error), and log it every time."""
        current = {e.user_message for e in self.workspace_state.pack_errors}
        for message in sorted(current - self._reported_pack_errors):
            log.error("rule pack error: %s", message)
            self.window_show_message(
                types.ShowMessageParams(types.MessageType.Error, f"tritonsmith: {message}. The other rule packs are in use.")
            )
        self._reported_pack_errors = current

    # -- documents -------------------------------------------------------------------------

    def open(self, uri: str, version: int | None, text: str) -> OpenDocument:
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
        self.searches.cancel_document(uri)
        self._scheduled.discard(uri)
        self._checks.pop(uri, None)  # it ends at its next slice: the document is gone

    def shutdown(self) -> None:
        self.searches.cancel_all()  # search threads must end before the interpreter can exit
        super().shutdown()

    def schedule_check(self, uri: str) -> None:
        """Check `uri` once the notifications already queued have been applied."""
        if uri in self._scheduled:
            return
        self._scheduled.add(uri)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a direct call): check it all now
            self._scheduled.discard(uri)
            if (state := self.documents.get(uri)) is not None:
                self.ensure_checked(state)
                self._publish(state)
            return
        loop.call_soon(self._run_scheduled, uri)

    def _run_scheduled(self, uri: str) -> None:
        """The first slice of the check at once (most checks fit in it); the rest in a task."""
        self._scheduled.discard(uri)
        state = self.documents.get(uri)
        if state is None:
            return
        if self._advance(state, time.monotonic() + SLICE_S):
            self._publish(state)
            return
        task = self._checks.get(uri)
        if task is None or task.done():
            self._checks[uri] = asyncio.get_running_loop().create_task(self._check_in_slices(uri))

    async def _check_in_slices(self, uri: str) -> None:
        while True:
            await asyncio.sleep(0)  # let the messages already waiting go first
            state = self.documents.get(uri)
            if state is None:
                return
            if state.dirty and not self._advance(state, time.monotonic() + SLICE_S):
                continue
            if state.published_generation != state.generation:  # a hover may have finished it
                self._publish(state)
            return

    def _publish(self, state: OpenDocument) -> None:
        from .publish import publish

        state.published_generation = state.generation
        publish(self, state)

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
        self._advance(state, None)

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
                found = self.workspace_state.matcher.check_kernels(state.document.source, index, kernels)
            except Exception:  # never let one file's analysis take the server down
                log.exception("checking %s failed", state.uri)
                return []
        else:
            found = state.findings
        return [f for f in found if f.span.start <= end and start <= f.span.end]

    def _advance(self, state: OpenDocument, until: float | None) -> bool:
        """Run the current generation's check until it is done (True) or `until` passes."""
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
        matcher, source, previous, rebased = self.workspace_state.matcher, state.document.source, state.record, state.rebased
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


def mark_dirty(state: OpenDocument) -> None:
    """The document or the rules changed: a new generation, and the running check is stale."""
    state.dirty = True
    state.generation += 1
    state.pending = None
