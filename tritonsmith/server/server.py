"""The language server: pygls' connection, and the schedule of the checking loop over the
`Session` (session.py: open documents, workspace, client capabilities).

Features in `features/` register handlers that call into the session; only `publish.py` sends
diagnostics.

Checking is coalesced: an edit marks the document dirty and schedules one check with
`call_soon`, so a burst of `didChange` notifications already queued is applied first and
checked once. A check of an edited file re-runs the rules only for the kernels the edit touched
(the matcher's per-kernel cache), so it stays within milliseconds on large files.

A check that takes longer (opening a large file, new rules) runs in slices of `SLICE_S`
between messages, a kernel at a time (`Matcher.check_steps`): the next edit drops it (every
edit starts a new `generation`), and what it checked so far stays in the matcher's cache. Hover
and code actions never wait for it: they check the kernels they need (`Session.findings_near`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol.language_server import LanguageServerProtocol, lsp_method
from pygls.uris import to_fs_path

from .. import __version__
from ..settings import Settings, find_workspace_root, read_pyproject
from ..workspace import Workspace
from .framing import Framer
from .session import OpenDocument, Session

if TYPE_CHECKING:
    from .features.watch import PackWatcher

__all__ = ["TritonsmithServer"]

log = logging.getLogger(__name__)

SLICE_S = 0.02  # a long check gives the event loop back at least this often


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
    """The connection (pygls) and the checking loop's schedule over the `Session` (session.py):
    a document edited is checked between messages and its findings published."""

    def __init__(self) -> None:
        super().__init__("tritonsmith", __version__, protocol_cls=TritonsmithProtocol)
        self.session = Session(self._position_encoding)
        self.framer = Framer()  # what splits the client's stream (transport.py); maxMessageMb sets its limit
        self.editor_settings: dict = {}
        self.settings_warnings: list[str] = []
        self._scheduled: set[str] = set()
        self._checks: dict[str, asyncio.Task[None]] = {}  # checks running in slices, by URI
        self._reported_pack_errors: set[str] = set()
        self.watcher: PackWatcher | None = None  # set by features.watch
        from .jobs import CompileJobs
        from .searches import Searches

        self.jobs = CompileJobs(self.session, self)
        self.searches = Searches(self.session, self)  # "Optimize this kernel"

    # -- settings and rules ----------------------------------------------------------------

    def _position_encoding(self) -> str:
        try:
            encoding = self.workspace.position_encoding
        except Exception:  # before initialize
            return "utf-16"
        return str(getattr(encoding, "value", encoding) or "utf-16")

    def set_root(self, root_uri: str | None) -> None:
        path = to_fs_path(root_uri) if root_uri else None
        self.session.root = find_workspace_root(Path(path)) if path else None

    def compute_settings(self) -> Settings:
        warnings: list[str] = []
        root = self.session.root
        pyproject = read_pyproject(root, warnings=warnings) if root else {}
        settings = Settings.merged(pyproject, self.editor_settings, warnings=warnings)
        for warning in warnings:
            if warning not in self.settings_warnings:
                self.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"tritonsmith: {warning}"))
        self.settings_warnings = warnings
        return settings

    def reload(self, *, editor_settings: dict | None = None) -> None:
        """Re-read settings and packs, then re-check every open document, unless they check
        exactly as before (`Workspace.same_as`): the workspace and its results then stay."""
        if editor_settings is not None:
            self.editor_settings = editor_settings
        session = self.session
        workspace = Workspace(session.root, self.compute_settings(), editing=True)
        # Settings and rules as they were (the settings pulled after `initialize`, most often):
        # the current workspace stays, with its cached results, and nothing is checked again.
        if not session.keep_workspace(workspace):
            session.use_workspace(workspace)
        # tritonsmith.logLevel: the server's own loggers (pygls stays at warnings).
        logging.getLogger("tritonsmith").setLevel(session.workspace.settings.log_level.upper())
        self.framer.max_bytes = session.workspace.settings.max_message_mb * 1024 * 1024
        self.report_pack_errors()
        for uri in list(session.documents):
            self.schedule_check(uri)
        if self.watcher is not None:
            self.watcher.update(self)
        from .publish import refresh

        refresh(self.session, self)

    def report_pack_errors(self) -> None:
        """Show each malformed pack once (per distinct error), and log it every time."""
        current = {e.user_message for e in self.session.workspace.pack_errors}
        for message in sorted(current - self._reported_pack_errors):
            log.error("rule pack error: %s", message)
            self.window_show_message(
                types.ShowMessageParams(types.MessageType.Error, f"tritonsmith: {message}. The other rule packs are in use.")
            )
        self._reported_pack_errors = current

    # -- documents -------------------------------------------------------------------------

    def close(self, uri: str) -> None:
        self.session.close(uri)
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
            if (state := self.session.documents.get(uri)) is not None:
                self.session.ensure_checked(state)
                self._publish(state)
            return
        loop.call_soon(self._run_scheduled, uri)

    def _run_scheduled(self, uri: str) -> None:
        """The first slice of the check at once (most checks fit in it); the rest in a task."""
        self._scheduled.discard(uri)
        state = self.session.documents.get(uri)
        if state is None:
            return
        if self.session.advance(state, time.monotonic() + SLICE_S):
            self._publish(state)
            return
        task = self._checks.get(uri)
        if task is None or task.done():
            self._checks[uri] = asyncio.get_running_loop().create_task(self._check_in_slices(uri))

    async def _check_in_slices(self, uri: str) -> None:
        while True:
            await asyncio.sleep(0)  # let the messages already waiting go first
            state = self.session.documents.get(uri)
            if state is None:
                return
            if state.dirty and not self.session.advance(state, time.monotonic() + SLICE_S):
                continue
            if state.published_generation != state.generation:  # a hover may have finished it
                self._publish(state)
            return

    def _publish(self, state: OpenDocument) -> None:
        from .publish import publish

        state.published_generation = state.generation
        publish(self.session, self, state)

