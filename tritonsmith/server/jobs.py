"""Jobs started by saves: compile, then verify against each spec; debounced, cancellable,
with work-done progress.

A save schedules a compile of the document's kernels for the configured targets and, with
`verifyOnSave = "verify"`, a check of each spec in the file (a KernelBench problem or an in-file
harness) against its reference, timed when there is a GPU. A newer save of the same document
cancels the older job (its workers are killed) before the new one starts. The work runs in the
evaluator's sandboxed worker pools, off the event loop, so typing stays fast while a job runs.
Results become diagnostics (source `tritonsmith-verify`) and code lenses.

Between saves, a pause in typing (`compileWhileTypingMs`) runs the compiler's frontend (Triton's
code generator, where its type, shape and constexpr errors come from: a fraction of a full
compile's time), for the first target only and from the unsaved text, on the kernels whose
definition changed since they were last compiled: compiler errors appear and clear while typing.
Those runs are not recorded in the failure log (half-typed text is not a failure to learn from),
and a save compiles fully (resources, backend errors).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.uris import to_fs_path

from ..analysis.document import Document
from ..version import installed_triton_version
from .compile_findings import anchor, compiled_on, kernel_texts

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from ..evaluator.pipeline import Checked, Pipeline
    from ..evaluator.pool import WorkerPool
    from ..evaluator.reports import KernelReport
    from ..evaluator.verify import Verdict
    from ..rules import Rule
    from ..state import FailureLog
    from .compile_findings import CompileFinding
    from .session import OpenDocument, Session

__all__ = ["SAVE_DEBOUNCE_S", "CompileJobs", "job_summary"]

log = logging.getLogger(__name__)

SAVE_DEBOUNCE_S = 0.3


def job_summary(name: str, reports: Sequence[KernelReport], verdicts: Sequence[Verdict], seconds: float) -> str:
    """The output channel's one line for a save's job: what compiled, what was verified, how long."""
    failed = [r.kernel for r in reports if r.outcome == "failed"]
    unknown = [r.kernel for r in reports if r.outcome == "not compiled"]  # as the lens says
    done = len(reports) - len(failed) - len(unknown)
    compiled = f"{done} of {len(reports)} kernels compiled" if reports else "no kernel"
    if failed:
        compiled += f" ({', '.join(failed)} failed)"
    if unknown:
        compiled += f" ({', '.join(unknown)} not compiled: constexpr values known only at run time)"
    checked = "; ".join(v.summary() for v in verdicts)
    return f"{name}: {compiled}{'; ' + checked if checked else ''} ({seconds:.1f} s)"


class CompileJobs:
    def __init__(self, session: Session, client: LanguageServer) -> None:
        self.session, self.client = session, client
        self._pipeline: Pipeline | None = None
        self._pending: dict[str, asyncio.TimerHandle] = {}
        self._idle: dict[str, asyncio.TimerHandle] = {}  # verifications waiting for no edits after an autosave
        self._save_reasons: dict[str, types.TextDocumentSaveReason] = {}
        self.running: dict[str, asyncio.Task[None]] = {}
        self._typing: dict[str, asyncio.TimerHandle] = {}  # compiles waiting for a pause in typing
        self._typing_cancel: dict[str, threading.Event] = {}
        # Full compiles after a pause in typing, one per document at a time: a keystroke never
        # kills one (its worker stays warm; a stale result is dropped), a save or close does.
        self._backend: dict[str, threading.Event] = {}
        self._backend_again: set[str] = set()  # the text moved on while one ran: compile again after it
        self._failure_log: FailureLog | None = None
        self._available: bool | None = None

    def pipeline(self) -> Pipeline:
        """The verification pipeline (evaluator/pipeline.py), as `tritonsmith verify` runs it,
        with the workspace's current settings. Its workers start on the first save (an editor
        that never saves pays nothing) and stay warm between saves (imports and Triton's compile
        cache survive); the verification workers restart when the `importPaths` setting changes."""
        # The evaluator is imported on the first save, not at start-up: the first diagnostics
        # never wait for it.
        from ..evaluator.pipeline import Options, Pipeline
        from ..evaluator.pool import compile_workers
        from ..evaluator.verify import default_mode

        state = self.session.workspace
        options = Options.from_settings(state.settings, state.root, mode=default_mode())
        if self._pipeline is None:
            self._pipeline = Pipeline(options, compile_size=compile_workers())
        elif options != self._pipeline.options:
            self._pipeline.reconfigure(options)
        return self._pipeline

    @property
    def pool(self) -> WorkerPool:
        """The compile workers (a save's compile and the compiles while typing)."""
        return self.pipeline().compile_pool

    def failure_log(self) -> FailureLog | None:
        """The workspace's failure log (`.tritonsmith/state.db`); None outside a workspace or when
        it cannot be opened (compiling goes on, unlogged)."""
        if self._failure_log is None and self.session.root is not None:
            from ..state import FailureLog  # the state database opens on the first save

            try:
                self._failure_log = FailureLog(self.session.root)
            except Exception:
                log.exception("cannot open the failure log")
        return self._failure_log

    def _learned_rules(self) -> list[Rule]:
        """The workspace's learned rules, whose codes label the compile errors they match."""
        from ..state import active_learned

        root = self.session.workspace.root
        return active_learned(root) if root is not None else []

    def _record(self, checked: Checked) -> None:
        """What a save's run taught, into the failure log (the adaptation learns from it) and the
        learned rules it contradicts (`state.record_checked`, as the command line records). Run
        off the event loop: recording parses the file."""
        failure_log = self.failure_log()
        if failure_log is None:
            return
        from ..state import record_checked

        try:
            record_checked(failure_log, checked, root=self.session.workspace.root)
        except Exception:  # a locked database or a malformed pack must not lose the diagnostics
            log.exception("what the check of %s found is not recorded", checked.path)

    def available(self) -> bool:
        """Whether Triton is installed (read once: the client restarts the server after installing it)."""
        if self._available is None:
            self._available = installed_triton_version() is not None
        return self._available

    def will_save(self, uri: str, reason: types.TextDocumentSaveReason) -> None:
        """Why the next save of `uri` happens (`textDocument/willSave`): an explicit save, or
        an autosave after a delay or on a focus change."""
        self._save_reasons[uri] = reason

    def on_change(self, uri: str) -> None:
        """An edit: a verification waiting for the editor to be idle after an autosave waits
        again, and so does the compile of the edited kernels."""
        if (waiting := self._idle.pop(uri, None)) is not None:
            waiting.cancel()
        self._stop_typing_compile(uri)
        settings = self.session.workspace.settings
        state = self.session.documents.get(uri)
        if (settings.compile_while_typing_ms <= 0 or settings.verify_on_save == "off" or state is None
                or not state.compiled_texts or not self.available()):
            return  # nothing compiled yet: the first compile is a save's
        loop = asyncio.get_running_loop()
        self._typing[uri] = loop.call_later(settings.compile_while_typing_ms / 1000, self._compile_edited, uri)

    def on_close(self, uri: str) -> None:
        """A closed document: nothing waits for it or compiles it while typing any more."""
        if (waiting := self._idle.pop(uri, None)) is not None:
            waiting.cancel()
        self._stop_typing_compile(uri, backend=True)

    def _stop_typing_compile(self, uri: str, *, backend: bool = False) -> None:
        """Stop waiting for a pause and any frontend compile of `uri`; `backend`: its full
        compile too (a save compiles everything anyway; a closed document needs nothing)."""
        if (waiting := self._typing.pop(uri, None)) is not None:
            waiting.cancel()
        if (running := self._typing_cancel.pop(uri, None)) is not None:
            running.set()
        if backend:
            self._backend_again.discard(uri)
            if (full := self._backend.pop(uri, None)) is not None:
                full.set()

    def _compile_edited(self, uri: str) -> None:
        """After a pause in typing: compile the kernels edited since their last compile."""
        self._typing.pop(uri, None)
        state = self.session.documents.get(uri)
        task = self.running.get(uri)
        if state is None or (task is not None and not task.done()):
            return  # closed, or a save's job is compiling it anyway
        index = self.session.current_index(state)
        data = state.document.source
        edited = [k.name for k in index.kernels if k.name in state.compiled_texts
                  and compiled_on(data, k) != state.compiled_texts[k.name]]
        if not edited:
            self._start_backend(uri)
            return
        cancel = threading.Event()
        self._typing_cancel[uri] = cancel
        asyncio.ensure_future(self._compile_typed(uri, state.document.text, edited, cancel))

    async def _compile_unsaved(self, uri: str, source: str, kernels: list[str], cancel: threading.Event, *,
                               frontend_only: bool) -> _Unsaved | None:
        """Compile `kernels` of the unsaved `source` for the first target: the reports, their
        findings tied to the text they were computed on, and that text per kernel. None when
        compiling failed here (logged: a bug must not take the editor down)."""
        settings = self.session.workspace.settings
        target = (list(settings.targets) or ["sm_90"])[0]
        path = to_fs_path(uri) or uri
        began = time.monotonic()
        from ..evaluator.reports import compile_file

        try:
            learned = await asyncio.to_thread(self._learned_rules)
            reports = await asyncio.to_thread(compile_file, self.pool, source, path=path,
                                              targets=[target], kernels=kernels, cancel_event=cancel, rules=learned,
                                              frontend_only=frontend_only)
            anchored = await asyncio.to_thread(anchor, source, [(r.kernel, r.findings) for r in reports])
            texts = await asyncio.to_thread(kernel_texts, source, kernels)
        except Exception:
            log.exception("compile of %s while typing failed", uri)
            return None
        return _Unsaved(Path(path).name, frozenset(kernels), reports, anchored, texts, target, time.monotonic() - began)

    async def _compile_typed(self, uri: str, source: str, kernels: list[str], cancel: threading.Event) -> None:
        """The first of two compiles after a pause: the compiler's frontend only (tens of ms),
        so a compile-class error shows at once. Then `_start_backend` compiles in full what
        passed: the backend's findings (shared memory over the limit, spills) and the lens's
        resources need a whole compile."""
        compiled = await self._compile_unsaved(uri, source, kernels, cancel, frontend_only=True)
        state = self.session.documents.get(uri)
        if compiled is None or cancel.is_set() or state is None or state.document.text != source:
            return  # typed on meanwhile: the next pause compiles again
        if self._typing_cancel.get(uri) is cancel:
            del self._typing_cancel[uri]
        compiled.apply_findings(state)
        # A frontend that passes has no resources to show: the lens keeps the last full compile's
        # figures until the full compile that follows; one that fails shows its error over them.
        for report in compiled.reports:
            if report.ok:
                state.typing_failures.pop(report.kernel, None)
            else:
                state.typing_failures[report.kernel] = report
        log.info("%s: compiled while typing for %s: %s by the compiler's frontend: %s (%.2f s)", compiled.file,
                 compiled.target, ", ".join(kernels), "ok" if all(r.ok for r in compiled.reports) else "errors",
                 compiled.seconds)
        from .publish import publish

        publish(self.session, self.client, state)
        self._start_backend(uri)

    def _start_backend(self, uri: str) -> None:
        """Compile in full, from the unsaved text, the kernels that changed since their last full
        compile and whose frontend passed; one such compile per document at a time."""
        if uri in self._backend:
            self._backend_again.add(uri)
            return
        state = self.session.documents.get(uri)
        task = self.running.get(uri)
        if state is None or (task is not None and not task.done()):
            return
        data = state.document.source
        now = {k.name: compiled_on(data, k) for k in self.session.current_index(state).kernels
               if k.name in state.full_texts and k.name not in state.typing_failures}
        stale = [name for name, text in now.items()
                 if text == state.compiled_texts.get(name) and text != state.full_texts[name]]  # its frontend ran on this text
        if stale:
            self._backend[uri] = cancel = threading.Event()
            asyncio.ensure_future(self._compile_backend(uri, state.document.text, stale, cancel))

    async def _compile_backend(self, uri: str, source: str, kernels: list[str], cancel: threading.Event) -> None:
        try:
            compiled = await self._compile_unsaved(uri, source, kernels, cancel, frontend_only=False)
        finally:
            if self._backend.get(uri) is cancel:
                del self._backend[uri]
        again = uri in self._backend_again
        self._backend_again.discard(uri)
        state = self.session.documents.get(uri)
        if cancel.is_set() or state is None or compiled is None:
            return
        if state.document.text != source:
            if again:
                self._start_backend(uri)  # a pause came while this compiled: compile what it left
            return
        compiled.apply_findings(state)
        replaced = {r.kernel: r for r in compiled.reports}
        state.compile_reports = [replaced.pop(r.kernel, r) for r in state.compile_reports] + list(replaced.values())
        for name in kernels:
            state.typing_failures.pop(name, None)
        state.full_texts.update(compiled.texts)
        log.info("%s: compiled while typing for %s: %s in full: %s (%.2f s)", compiled.file, compiled.target,
                 ", ".join(kernels), "ok" if all(r.ok and not r.findings for r in compiled.reports) else "findings",
                 compiled.seconds)
        from .publish import publish

        publish(self.session, self.client, state)
        if self.session.client_supports_code_lens_refresh:
            self.client.workspace_code_lens_refresh(None)

    def on_save(self, uri: str, *, now: bool = False) -> None:
        """Schedule a compile of `uri`, replacing a pending or running one. An explicit save
        (or a client that never says why it saves) verifies too; an autosave compiles only, and
        verifies once the editor has been idle `verifyAfterAutosave` seconds since."""
        settings = self.session.workspace.settings
        if not now and settings.verify_on_save == "off":
            return
        if not self.available():
            log.info("triton is not installed in this environment; compile-on-save is off")
            return
        reason = self._save_reasons.pop(uri, types.TextDocumentSaveReason.Manual)
        autosave = not now and reason != types.TextDocumentSaveReason.Manual and settings.verify_on_save == "verify"
        loop = asyncio.get_running_loop()
        if uri in self._pending:
            self._pending.pop(uri).cancel()
        if (waiting := self._idle.pop(uri, None)) is not None:
            waiting.cancel()
        self._stop_typing_compile(uri, backend=True)  # the save compiles everything
        self._pending[uri] = loop.call_later(0 if now else SAVE_DEBOUNCE_S, self._start, uri, not autosave)
        if autosave and settings.verify_after_autosave > 0:
            state = self.session.documents.get(uri)
            saved = state.document.text if state is not None else None
            self._idle[uri] = loop.call_later(settings.verify_after_autosave + SAVE_DEBOUNCE_S,
                                              self._verify_when_idle, uri, saved)
            log.info("autosave of %s: compiling; verifying after %d s without an edit", uri,
                     settings.verify_after_autosave)

    def _verify_when_idle(self, uri: str, saved: str | None) -> None:
        self._idle.pop(uri, None)
        state = self.session.documents.get(uri)
        if state is not None and state.document.text == saved:  # unchanged since the autosave
            self._start(uri, True)

    def _start(self, uri: str, verify: bool = True) -> None:
        self._pending.pop(uri, None)
        state = self.session.documents.get(uri)
        if state is None:
            return
        if state.compile_cancel is not None:
            state.compile_cancel.set()  # a newer save supersedes the running job
        cancel = threading.Event()
        state.compile_cancel = cancel
        self.running[uri] = asyncio.ensure_future(self._run(uri, state.document.text, cancel, verify=verify))

    async def _run(self, uri: str, source: str, cancel: threading.Event, *, verify: bool = True) -> None:
        from ..evaluator.reports import verdict_findings

        settings = self.session.workspace.settings
        verify = verify and settings.verify_on_save == "verify"
        pipeline = self.pipeline()
        targets = list(pipeline.options.targets)
        token = await self._begin_progress(f"Compiling kernels for {', '.join(targets)}")
        path = to_fs_path(uri) or uri
        began = time.monotonic()
        log.info("%s: compiling for %s%s", Path(path).name, ", ".join(targets), " and verifying" if verify else "")
        loop = asyncio.get_running_loop()

        def progress(message: str) -> None:  # called from the pipeline's thread
            if token is not None:
                loop.call_soon_threadsafe(self.client.work_done_progress.report, token,
                                          types.WorkDoneProgressReport(message=message))

        checked: Checked | None = None
        try:
            learned = await asyncio.to_thread(self._learned_rules)
            # Warnings (spills, a Config the autotuner prunes) and errors under assumed pointer
            # types never stop the check; a kernel that truly cannot launch does, and says so. A
            # hang or a memory hog ends in seconds (sandbox.py); a newer save sets `cancel`,
            # which kills the running worker within the pool's poll.
            checked = await asyncio.to_thread(pipeline.run, path, source, specs=None if verify else [],
                                              rules=learned, cancel=cancel, progress=progress)
            await asyncio.to_thread(self._record, checked)
        except Exception:  # a bug here must not take the editor down
            log.exception("compile job for %s failed", uri)
        finally:
            self._end_progress(token, "cancelled" if cancel.is_set() else "done")
        state = self.session.documents.get(uri)
        if checked is None or cancel.is_set() or state is None or state.compile_cancel is not cancel:
            if checked is not None:
                log.info("%s: superseded or closed after %.1f s", Path(path).name, time.monotonic() - began)
            return
        reports, verdicts = checked.reports, checked.verdicts
        for name, predicted in checked.predicted.items():
            log.info("%s: %s", name, predicted.summary())
        log.info("%s", job_summary(Path(path).name, reports, verdicts, time.monotonic() - began))
        state.compile_reports = reports
        state.typing_failures = {}
        state.verdicts = verdicts
        checked_findings = [f for verdict in verdicts if not verdict.ok
                            for f in verdict_findings(Document(source), verdict)]
        state.compile_findings = await asyncio.to_thread(
            anchor, source, [(r.kernel, r.findings) for r in reports], checked_findings)
        state.compiled_texts = await asyncio.to_thread(kernel_texts, source, [r.kernel for r in reports])
        state.full_texts = dict(state.compiled_texts)
        from .publish import publish, refresh

        publish(self.session, self.client, state)
        refresh(self.session, self.client)
        if self.session.client_supports_code_lens_refresh:
            self.client.workspace_code_lens_refresh(None)

    async def _begin_progress(self, title: str) -> str | None:
        if not get_capability(self.client.client_capabilities, "window.work_done_progress", False):
            return None
        token = str(uuid.uuid4())
        try:
            await self.client.work_done_progress.create_async(token)
            self.client.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=False))
        except Exception:  # a client that refuses progress still gets the results
            return None
        return token

    def _end_progress(self, token: str | None, message: str) -> None:
        if token is not None:
            self.client.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))

    def close(self) -> None:
        for handle in (*self._pending.values(), *self._idle.values(), *self._typing.values()):
            handle.cancel()
        for event in (*self._typing_cancel.values(), *self._backend.values()):
            event.set()
        self._backend.clear()
        self._pending.clear()
        self._idle.clear()
        self._typing.clear()
        self._typing_cancel.clear()
        if self._pipeline is not None:
            self._pipeline.close()
            self._pipeline = None


@dataclass(frozen=True)
class _Unsaved:
    """A compile of some kernels of the unsaved text (`CompileJobs._compile_unsaved`)."""

    file: str  # the file's name, for the log
    kernels: frozenset[str]
    reports: list[KernelReport]
    anchored: list[CompileFinding]
    texts: dict[str, bytes]  # each kernel's `compiled_on` text
    target: str
    seconds: float

    def apply_findings(self, state: OpenDocument) -> None:
        """These kernels' compile findings replace their earlier ones; they were compiled on these texts."""
        state.compile_findings = [c for c in state.compile_findings if c.kernel not in self.kernels] + self.anchored
        state.compiled_texts.update(self.texts)
