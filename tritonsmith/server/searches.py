"""Searches started from the editor ("Optimize this kernel"): consent, progress, cancellation,
and the result as a diff the user reviews (docs/lsp-extensions.md).

`Searches.start(uri, kernel, mode)` returns a search id at once and runs the search
(`tritonsmith.search.setup.open_search`, the same as `tritonsmith optimize`) in a worker thread,
on the buffer's text at that moment. Several searches on different kernels run at once; starting
a kernel that is already being searched is refused (the running search's id is returned and the
user told so). Each search owns a cancellable work-done progress ("step i/N · best x.xx×"); the
coroutine that waits for it polls the progress token's cancel state (pygls does not cancel
`workspace/executeCommand` handlers) and sets the search's cancel event, which also stops the
evaluator's workers. Closing a document cancels its searches; shutting the server down cancels
them all.

Code leaves the machine only with consent: a hosted proposer (Anthropic, or an
OpenAI-compatible endpoint that is not on this machine) asks once per workspace with
`window/showMessageRequest`, and "Allow" is remembered in `.tritonsmith/consent.json`.

A search that found a faster verified variant sends `tritonsmith/searchResult` (original and
best source, the confirmed speedup with its 95% interval and the noise floor, how it was
measured, the tree, and a ready workspace edit). "Faster" means confirmed: the candidate and the
original re-timed in alternating rounds in fresh workers, the interval's lower bound above 1 +
the noise floor (search/engine.py, evaluator/stats.py); screening figures are never offered.
Clients that declare `experimental.tritonsmith.searchResultSupport` show it themselves (VS Code's
diff editor) and apply it through `tritonsmith.server.applySearchResult`; other clients get
`window/showDocument` of `.tritonsmith/<searchId>.patch` and the edit through
`workspace/applyEdit`, annotated as needing confirmation. If the buffer changed since the search
started, the user chooses: apply anyway, rebase (a three-way merge, offered when it is clean),
re-run the search, or dismiss.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import ipaddress
import json
import logging
import os
import secrets
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.uris import from_fs_path, to_fs_path

from ..analysis.document import to_lsp_col
from ..settings import find_workspace_root

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from ..search.engine import Progress, SearchResult
    from .session import Session

__all__ = [
    "CONSENT_ALLOW",
    "CONSENT_CANCEL",
    "CONSENT_OFFLINE",
    "MODES",
    "PROPOSERS",
    "SEARCH_PROGRESS",
    "SEARCH_RESULT",
    "Searches",
    "list_searches",
    "search_node",
    "search_tree",
    "hosted_provider",
    "merge3",
    "read_consent",
    "record_consent",
]

log = logging.getLogger(__name__)

SEARCH_RESULT = "tritonsmith/searchResult"
SEARCH_PROGRESS = "tritonsmith/searchProgress"
MODES = ("auto", "refine", "regenerate")
PROPOSERS = ("offline", "anthropic", "openai", "auto")
CONSENT_ALLOW = "Allow for this workspace"
CONSENT_OFFLINE = "Use offline proposer"
CONSENT_CANCEL = "Cancel"
APPLY_ANYWAY = "Apply anyway"
REBASE = "Rebase"
RERUN = "Re-run the search"
DISMISS = "Dismiss"
_CHANGE_ANNOTATION = "tritonsmith-search"
_KEEP_FINISHED = 20  # finished results kept for `applySearchResult`
_POLL_S = 0.1  # how often a running search looks at its progress token's cancel state


@dataclass
class _Search:
    """One search started from the editor."""

    id: str
    uri: str
    kernel: str
    mode: str
    original: str  # the buffer when the search started
    version: int | None  # its version
    cancel: threading.Event = field(default_factory=threading.Event)
    device: str = "interpreter"
    token: str | None = None
    journal_id: str | None = None
    closed: bool = False  # its document was closed: nothing is offered any more
    task: asyncio.Future[None] | None = None
    proposer: str | None = None  # this search's proposer, overriding the setting


@dataclass
class _Finished:
    """A search that found a faster variant, kept so that a client can apply it later."""

    search: _Search
    best: str


# -- consent ---------------------------------------------------------------------------------


def hosted_provider(proposer: str, base_url: str) -> str | None:
    """Who a proposer sends code to, when that is off this machine: "Anthropic", an endpoint's
    origin ("https://host"), or None (offline, or an OpenAI-compatible server on localhost)."""
    if proposer == "anthropic":
        return "Anthropic"
    if proposer != "openai":
        return None
    parsed = urlparse(base_url)
    host = parsed.hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return None
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).is_loopback:
            return None
    return f"{parsed.scheme}://{parsed.netloc}" if parsed.netloc else base_url or "an OpenAI-compatible server"


def _consent_path(root: Path) -> Path:
    return root / ".tritonsmith" / "consent.json"


def read_consent(root: Path) -> set[str]:
    """The providers this workspace allowed; empty when the file is missing or unreadable."""
    try:
        data = json.loads(_consent_path(root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    allowed = data.get("allowed") if isinstance(data, dict) else None
    return {str(k) for k in allowed} if isinstance(allowed, dict) else set()


def record_consent(root: Path, provider: str) -> None:
    """Remember that this workspace allows sending kernels to `provider` (atomic write)."""
    path = _consent_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict) or not isinstance(data.get("allowed"), dict):
        data = {"version": 1, "allowed": {}}
    data["version"] = 1
    data["allowed"][provider] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    _write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- merging ---------------------------------------------------------------------------------


def merge3(base: str, ours: str, theirs: str) -> str | None:
    """Both sides' changes to `base`, by lines; None when they touch or overlap (a conflict)."""
    lines = base.splitlines(keepends=True)
    changes: list[tuple[int, int, list[str], int]] = []
    for side, other in enumerate((ours, theirs)):
        other_lines = other.splitlines(keepends=True)
        matcher = difflib.SequenceMatcher(None, lines, other_lines, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                changes.append((i1, i2, other_lines[j1:j2], side))
    mine = [c for c in changes if c[3] == 0]
    kept = list(mine)
    for change in (c for c in changes if c[3] == 1):
        same = [c for c in mine if c[:3] == change[:3]]
        if same:
            continue  # both sides made the same change
        if any(max(change[0], c[0]) <= min(change[1], c[1]) for c in mine):
            return None
        kept.append(change)
    out: list[str] = []
    at = 0
    for i1, i2, replacement, _ in sorted(kept, key=lambda c: (c[0], c[1])):
        out += lines[at:i1]
        out += replacement
        at = i2
    out += lines[at:]
    return "".join(out)


# -- edits -----------------------------------------------------------------------------------


def _end_position(text: str, encoding: str) -> types.Position:
    data = text.encode("utf-8")
    row = data.count(b"\n")
    last = data[data.rfind(b"\n") + 1:]
    return types.Position(row, to_lsp_col(last, len(last), encoding))


class Searches:
    """The searches the editor started, by id (several at once, one per kernel)."""

    def __init__(self, session: Session, client: LanguageServer) -> None:
        self.session, self.client = session, client
        self.running: dict[str, _Search] = {}
        self.finished: OrderedDict[str, _Finished] = OrderedDict()
        self._session_consent: set[tuple[str, str]] = set()  # (root, provider) outside a workspace file

    # -- starting and stopping ----------------------------------------------------------------

    def find(self, uri: str, kernel: str) -> _Search | None:
        return next((s for s in self.running.values() if s.uri == uri and s.kernel == kernel), None)

    def start(self, uri: str, kernel: str, mode: str = "auto", proposer: str | None = None) -> str | None:
        """Start a search on `kernel` in the open document `uri`; returns its id at once.

        `proposer` overrides the `proposer` setting for this search. None when the document is
        not open, or the mode or proposer is unknown. A kernel already being searched is not
        searched twice: the running search's id comes back, and the user is told.
        """
        if mode not in MODES:
            self._show(types.MessageType.Error, f"unknown search mode {mode!r} ({', '.join(MODES)})")
            return None
        if proposer is not None and proposer not in PROPOSERS:
            self._show(types.MessageType.Error, f"unknown proposer {proposer!r} ({', '.join(PROPOSERS)})")
            return None
        state = self.session.documents.get(uri)
        if state is None:
            log.warning("optimize: the document is not open: %s", uri)
            return None
        existing = self.find(uri, kernel)
        if existing is not None:
            self._show(types.MessageType.Info, f"{kernel} is already being optimised; cancel that search first "
                                               "(its progress, or the code action) to start another")
            return existing.id
        search = _Search(id=f"ts-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}", uri=uri, kernel=kernel,
                         mode=mode, original=state.document.text, version=state.version, proposer=proposer)
        self.running[search.id] = search
        search.task = asyncio.ensure_future(self._run(search))
        return search.id

    def cancel(self, search_id: str) -> bool:
        search = self.running.get(search_id)
        if search is None:
            return False
        search.cancel.set()
        return True

    def cancel_document(self, uri: str) -> None:
        """The document was closed: stop its searches, and offer nothing from them."""
        for search in list(self.running.values()):
            if search.uri == uri:
                search.closed = True
                search.cancel.set()

    def cancel_all(self) -> None:
        for search in list(self.running.values()):
            search.closed = True
            search.cancel.set()

    # -- one search ---------------------------------------------------------------------------

    async def _run(self, search: _Search) -> None:
        try:
            await self._run_search(search)
        except Exception:  # a bug here must not take the editor down
            log.exception("search %s on %s failed", search.id, search.kernel)
            self._show(types.MessageType.Error, f"the search on {search.kernel} failed; see the server's log")
        finally:
            self.running.pop(search.id, None)

    async def _run_search(self, search: _Search) -> None:
        from ..evaluator.verify import default_mode
        from ..search.setup import SearchRequest, SetupError

        settings = self.session.workspace.settings
        path = Path(to_fs_path(search.uri) or search.uri)
        root = find_workspace_root(path.resolve())
        search.device = {"cpu": "interpreter", "cuda": "gpu"}.get(settings.device) or default_mode()
        proposer = search.proposer or settings.proposer
        if proposer == "auto":
            proposer = "anthropic" if os.environ.get("ANTHROPIC_API_KEY") else (
                "openai" if settings.base_url else "offline")
        provider = hosted_provider(proposer, settings.base_url)
        if provider is not None and not self._consented(root, provider):
            answer = await self._ask(
                types.MessageType.Info, f"Send this kernel ({search.kernel}) to {provider} for optimisation?",
                [CONSENT_ALLOW, CONSENT_OFFLINE, CONSENT_CANCEL])
            if answer == CONSENT_ALLOW:
                self._remember_consent(root, provider)
            elif answer == CONSENT_OFFLINE:
                proposer = "offline"
            else:
                return
        if search.cancel.is_set():
            return
        request = SearchRequest(
            path=path, kernel=search.kernel, device=search.device, proposer=proposer, steps=settings.budget,
            patience=settings.patience, import_paths=tuple(settings.import_folders(root)),
            mode=search.mode, allow_upload=proposer != "offline", model=settings.model or None,
            base_url=settings.base_url or None, source=search.original, objective=settings.objective,
        )
        search.token = await self._begin_progress(search)
        loop = asyncio.get_running_loop()
        began = loop.time()
        log.info("search %s: optimising %s in %s (%s proposer, %s, budget %d)", search.id, search.kernel, path.name,
                 proposer, search.device, settings.budget)

        engine: list[Any] = []  # the engine's search, once open: its tree names each step's node

        def progress(update: Progress) -> None:  # on the search's thread
            node = _progress_node(engine[0].tree if engine else None, update.last)
            loop.call_soon_threadsafe(self._report, search, update, node)

        worker = asyncio.ensure_future(
            asyncio.to_thread(self._search_blocking, request, progress, search.cancel, engine))
        while not worker.done():
            await asyncio.wait({worker}, timeout=_POLL_S)
            if self._token_cancelled(search.token):
                search.cancel.set()
        self.running.pop(search.id, None)  # the kernel may be searched again from here on
        result: SearchResult | None = None
        try:
            result = worker.result()
        except SetupError as error:
            self._end_progress(search, f"not started: {error.user_message}")
            self._show(types.MessageType.Error, error.user_message)
            return
        except Exception:
            log.exception("search %s on %s failed", search.id, search.kernel)
            self._end_progress(search, "failed; see the server's log")
            self._show(types.MessageType.Error, f"the search on {search.kernel} failed; see the server's log")
            return
        summary = self._summary(search, result)
        log.info("search %s on %s: %s (%.0f s)", search.id, search.kernel, summary, loop.time() - began)
        self._end_progress(search, summary)
        if result is not None and not search.closed:
            await self._deliver(search, result)

    @staticmethod
    def _search_blocking(request: Any, progress: Any, cancel: threading.Event, engine: list[Any]) -> SearchResult:
        from ..search.setup import open_search

        with open_search(request, progress=progress, cancel=cancel) as opened:
            engine.append(opened.search)
            return opened.search.run()

    @staticmethod
    def _cancelled(search: _Search, result: SearchResult) -> bool:
        return result.stopped == "cancelled"

    def _summary(self, search: _Search, result: SearchResult) -> str:
        unit = result.task.measured
        count = max(0, result.tree.evaluated_count - 1)
        if self._cancelled(search, result):
            return f"cancelled after {count} candidates"
        if result.stopped == "original-fails":
            return "the original kernel fails verification"
        found = (f"{result.outcome_text()} faster ({unit})" if result.improved
                 else f"no faster verified variant ({unit}): {result.outcome_text()}")
        if result.stopped.startswith("proposer stopped"):
            return f"{result.stopped}; {found}, {count} candidates"
        return f"done: {found}, {count} candidates"

    # -- consent ------------------------------------------------------------------------------

    def _consented(self, root: Path, provider: str) -> bool:
        return (str(root), provider) in self._session_consent or provider in read_consent(root)

    def _remember_consent(self, root: Path, provider: str) -> None:
        self._session_consent.add((str(root), provider))
        try:
            record_consent(root, provider)
        except OSError:
            log.exception("cannot write %s; consent holds for this session only", _consent_path(root))

    # -- progress -----------------------------------------------------------------------------

    async def _begin_progress(self, search: _Search) -> str | None:
        if not get_capability(self.client.client_capabilities, "window.work_done_progress", False):
            return None
        token = str(uuid.uuid4())
        progress = self.client.work_done_progress
        try:
            await progress.create_async(token)
            unit = "GPU" if search.device == "gpu" else "interpreter"
            progress.begin(token, types.WorkDoneProgressBegin(
                title=f"Optimizing {search.kernel}", cancellable=True, percentage=0,
                message=f"evaluating the original kernel ({unit})"))
        except Exception:  # a client that refuses progress still gets the result
            log.warning("work-done progress refused for search %s", search.id)
            return None
        return token

    def _report(self, search: _Search, update: Progress, node: dict[str, Any] | None = None) -> None:
        search.journal_id = update.search_id
        if node is not None:
            self.client.protocol.notify(SEARCH_PROGRESS, {
                "searchId": search.id, "journalId": update.search_id, "uri": search.uri, "kernel": search.kernel,
                "step": update.step, "steps": update.steps, "node": node})
        if search.token is None:
            return
        percentage = min(100, int(100 * update.step / max(1, update.steps)))
        self.client.work_done_progress.report(
            search.token, types.WorkDoneProgressReport(message=update.message(search.device), percentage=percentage))

    def _token_cancelled(self, token: str | None) -> bool:
        future = self.client.work_done_progress.tokens.get(token) if token is not None else None
        return bool(future is not None and future.cancelled())

    def _end_progress(self, search: _Search, message: str) -> None:
        if search.token is None:
            return
        self.client.work_done_progress.end(search.token, types.WorkDoneProgressEnd(message=message))
        self.client.work_done_progress.tokens.pop(search.token, None)
        search.token = None

    # -- the result ---------------------------------------------------------------------------

    async def _deliver(self, search: _Search, result: SearchResult) -> None:
        count = max(0, result.tree.evaluated_count - 1)
        if not result.improved or result.best is None:
            if self._cancelled(search, result):
                return
            # The tree of a search that found nothing better, for views; never an edit.
            self.client.protocol.notify(SEARCH_RESULT, self._payload(search, result, None))
            if result.stopped.startswith("proposer stopped"):
                self._show(types.MessageType.Warning, f"the search on {search.kernel} {result.stopped} "
                                                      f"(no faster verified variant: {result.outcome_text()}, "
                                                      f"{count} candidates)")
                return
            if result.stopped == "original-fails":
                root = next((n for n in result.tree.evaluated() if n.id == 0), None)
                why = root.evaluation.message if root is not None and root.evaluation is not None else ""
                self._show(types.MessageType.Warning, f"{search.kernel} fails verification before any change"
                                                      + (f": {why}" if why else ""))
                return
            self._show(types.MessageType.Info,
                       f"no faster verified variant of {search.kernel} found: {result.outcome_text()} "
                       f"({count} candidates)")
            return
        best_source = result.patched or result.best.source
        self.finished[search.id] = _Finished(search, best_source)
        while len(self.finished) > _KEEP_FINISHED:
            self.finished.popitem(last=False)
        edit = self._edit(search.uri, search.version, search.original, best_source, confirm=True)
        self.client.protocol.notify(SEARCH_RESULT, self._payload(search, result, edit))
        if self._client_shows_results():
            return  # the client reviews it and calls applySearchResult
        patch = self._write_patch(search, result.diff)
        if patch is not None and get_capability(self.client.client_capabilities, "window.show_document.support", False):
            try:
                await self.client.window_show_document_async(
                    types.ShowDocumentParams(uri=from_fs_path(str(patch)) or patch.as_uri(), take_focus=True))
            except Exception:
                log.warning("window/showDocument of %s failed", patch)
        await self.apply(search.id, confirm=True)

    def _payload(self, search: _Search, result: SearchResult, edit: types.WorkspaceEdit | None) -> dict[str, Any]:
        best = result.best
        evaluation = best.evaluation if best is not None else None
        return {
            "uri": search.uri,
            "kernel": search.kernel,
            "searchId": search.id,
            "journalId": result.search_id,
            "mode": search.mode,
            "original": search.original,
            "best": (result.patched or best.source) if best is not None else "",
            "bestId": best.id if best is not None else None,
            **_claim(result.confirmation, evaluation),
            "result": result.outcome_text(),
            "measuredOn": search.device,
            "measured": result.task.measured,
            "stopped": result.stopped,
            "costUsd": result.cost_usd,
            "diff": result.diff,
            "tree": tree_entries(result.tree),
            "improved": bool(result.improved and edit is not None),
            "edit": self.client.protocol._converter.unstructure(edit) if edit is not None else None,
        }

    def _client_shows_results(self) -> bool:
        experimental = getattr(self.client.client_capabilities, "experimental", None)
        if not isinstance(experimental, dict):
            return False
        ours = experimental.get("tritonsmith")
        return isinstance(ours, dict) and bool(ours.get("searchResultSupport"))

    def _write_patch(self, search: _Search, diff: str) -> Path | None:
        path = Path(to_fs_path(search.uri) or search.uri)
        try:
            folder = find_workspace_root(path.resolve()) / ".tritonsmith"
            folder.mkdir(parents=True, exist_ok=True)
            patch = folder / f"{search.id}.patch"
            _write_atomic(patch, diff)
        except OSError:
            log.exception("cannot write the patch of search %s", search.id)
            return None
        return patch

    def _edit(self, uri: str, version: int | None, before: str, after: str, *, confirm: bool) -> types.WorkspaceEdit:
        """Replace the whole document (`before`, at `version`) with `after`; annotated as
        needing confirmation when asked and the client supports change annotations."""
        rng = types.Range(types.Position(0, 0), _end_position(before, self.session.encoding))
        caps = self.client.client_capabilities.workspace
        workspace_edit = caps.workspace_edit if caps is not None else None
        document_changes = bool(workspace_edit and workspace_edit.document_changes)
        annotations = bool(workspace_edit and workspace_edit.change_annotation_support is not None)
        if not document_changes:
            return types.WorkspaceEdit(changes={uri: [types.TextEdit(range=rng, new_text=after)]})
        identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        if confirm and annotations:
            return types.WorkspaceEdit(
                document_changes=[types.TextDocumentEdit(text_document=identifier, edits=[
                    types.AnnotatedTextEdit(range=rng, new_text=after, annotation_id=_CHANGE_ANNOTATION)])],
                change_annotations={_CHANGE_ANNOTATION: types.ChangeAnnotation(
                    label="Apply the faster kernel", needs_confirmation=True,
                    description="the fastest verified variant the search found")},
            )
        return types.WorkspaceEdit(document_changes=[
            types.TextDocumentEdit(text_document=identifier, edits=[types.TextEdit(range=rng, new_text=after)])])

    async def apply(self, search_id: str, *, confirm: bool) -> bool:
        """Offer a finished search's best variant as a workspace edit. When the buffer changed
        since the search started, ask first: apply anyway, rebase, re-run or dismiss."""
        finished = self.finished.get(search_id)
        if finished is None:
            self._show(types.MessageType.Warning, f"no result of search {search_id} to apply")
            return False
        search = finished.search
        state = self.session.documents.get(search.uri)
        if state is None:
            log.warning("the document of search %s is closed", search_id)
            return False
        current = state.document.text
        after = finished.best
        if current != search.original:
            merged = merge3(search.original, current, finished.best)
            choices = [APPLY_ANYWAY] + ([REBASE] if merged is not None else []) + [RERUN, DISMISS]
            answer = await self._ask(
                types.MessageType.Warning,
                f"{search.kernel} changed since the search started. Apply the faster kernel anyway (your "
                "changes since are lost)" + (", rebase your changes onto it" if merged is not None else "")
                + ", or re-run the search?", choices)
            if answer == RERUN:
                self.start(search.uri, search.kernel, search.mode)
                return False
            if answer not in (APPLY_ANYWAY, REBASE):
                return False
            state = self.session.documents.get(search.uri)
            if state is None:
                return False
            current = state.document.text
            if answer == REBASE:
                rebased = merge3(search.original, current, finished.best)
                if rebased is None:
                    self._show(types.MessageType.Warning, "the buffer changed again and the rebase no longer "
                                                          "merges cleanly; nothing was applied")
                    return False
                after = rebased
        edit = self._edit(search.uri, state.version, current, after, confirm=confirm)
        try:
            applied = await self.client.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=edit, label=f"Faster {search.kernel} (search {search.id})"))
        except Exception:
            log.exception("workspace/applyEdit failed for search %s", search_id)
            return False
        if not applied.applied:
            log.info("search %s's edit was not applied: %s", search_id, applied.failure_reason)
        return bool(applied.applied)

    # -- messages -----------------------------------------------------------------------------

    def _show(self, kind: types.MessageType, message: str) -> None:
        self.client.window_show_message(types.ShowMessageParams(kind, f"tritonsmith: {message}"))

    async def _ask(self, kind: types.MessageType, message: str, choices: list[str]) -> str | None:
        try:
            answer = await self.client.window_show_message_request_async(types.ShowMessageRequestParams(
                type=kind, message=f"tritonsmith: {message}", actions=[types.MessageActionItem(c) for c in choices]))
        except Exception:
            log.exception("window/showMessageRequest failed")
            return None
        return answer.title if answer is not None else None


# -- the journal, for views ------------------------------------------------------------------


def _claim(confirmation: Any, evaluation: Any) -> dict[str, Any]:
    """`speedup`, `spread` (the 95% interval), `confirmation` and `screeningSpeedup` of a
    result: the confirmed figures when a confirmation ran, never a screening figure alone."""
    ok = confirmation is not None and not confirmation.error
    return {
        "speedup": confirmation.speedup if ok else None,
        "spread": [confirmation.low, confirmation.high] if ok else None,
        "confirmation": confirmation.to_json() if confirmation is not None else None,
        "screeningSpeedup": evaluation.speedup if evaluation is not None else None,
    }


def _node_entry(node: Any, *, full_message: bool = False) -> dict[str, Any]:
    from ..search.tree import ROOT_ID

    ev = node.evaluation
    message = ev.message if ev is not None else ""
    entry: dict[str, Any] = {
        "id": node.id,
        "parent": None if node.parent in (None, ROOT_ID) else node.parent,
        "kind": node.kind.value,
        "outcome": ev.outcome.value if ev is not None else None,
        "speedup": ev.speedup if ev is not None else None,
        "sameAs": ev.same_as if ev is not None else None,
        "message": message if full_message else (message.splitlines() or [""])[0][:200],
    }
    if node.reward is not None:
        entry["reward"] = node.reward
    return entry


def tree_entries(tree: Any) -> list[dict[str, Any]]:
    """Every evaluated node of `tree` as `tritonsmith/searchResult` lists them."""
    return [_node_entry(node) for node in tree.evaluated()]


def _progress_node(tree: Any, last: str) -> dict[str, Any] | None:
    """The node a progress update is about (its `last` line starts "#<id> "), without its
    message: one node, cheap."""
    if tree is None or not last.startswith("#"):
        return None
    try:
        node = tree.nodes.get(int(last[1:].split(" ", 1)[0]))
    except ValueError:
        return None
    if node is None or node.evaluation is None:
        return None
    entry = _node_entry(node)
    for key in ("message", "reward", "sameAs"):
        entry.pop(key, None)
    return entry


def _journal_db(root: Path) -> Path:
    return root / ".tritonsmith" / "state.db"


def _open_journal(root: Path) -> Any:
    """The workspace's journal, or None when it has none (reading never creates one)."""
    from ..search.journal import Journal

    return Journal(root) if _journal_db(root).is_file() else None


def list_searches(roots: list[Path], path: Path | None = None) -> list[dict[str, Any]]:
    """The searches in the journals of `roots` (newest first), those of the file `path` only
    when given."""
    found: list[tuple[float, dict[str, Any]]] = []
    wanted = str(path.resolve()) if path is not None else None
    for root in dict.fromkeys(roots):
        journal = _open_journal(root)
        if journal is None:
            continue
        try:
            summaries = journal.searches()
        finally:
            journal.close()
        for summary in summaries:
            if wanted is not None and summary.path != wanted:
                continue
            found.append((summary.started, {
                "id": summary.id, "path": summary.path, "uri": from_fs_path(summary.path) or summary.path,
                "kernel": summary.kernel, "status": summary.status, "started": summary.started,
                "finished": summary.finished, "nodes": summary.nodes, "bestSpeedup": summary.best_speedup,
                "costUsd": summary.cost_usd,
            }))
    return [entry for _, entry in sorted(found, key=lambda item: -item[0])]


def _load(roots: list[Path], journal_id: str) -> tuple[Any, dict[str, Any], Any, list[Any]] | None:
    """(task, settings, tree, confirmations) of a journaled search."""
    from ..errors import TritonsmithError

    for root in dict.fromkeys(roots):
        journal = _open_journal(root)
        if journal is None:
            continue
        try:
            task, settings, tree = journal.load(journal_id)
            return task, settings, tree, journal.confirmations(journal_id)
        except TritonsmithError:
            continue
        finally:
            journal.close()
    return None


def search_node(roots: list[Path], journal_id: str, node_id: int) -> dict[str, Any] | None:
    """One evaluated node of a journaled search: its whole source and its evaluation."""
    loaded = _load(roots, journal_id)
    if loaded is None:
        return None
    nodes = loaded[2].nodes
    node = nodes.get(node_id)
    if node is None or node.evaluation is None:
        return None
    entry = _node_entry(node, full_message=True)
    entry["source"] = node.source
    # What this step changed: against its parent, or the original for a regenerated head.
    base = nodes.get(node.parent) if node.parent is not None and node.parent >= 0 else None
    base = base if base is not None and base.source else (nodes.get(0) if node_id != 0 else None)
    if base is not None:
        entry["diffAgainst"] = base.id
        entry["diff"] = step_diff(base.source, node.source)
    return entry


DIFF_MAX_LINES = 80


def step_diff(before: str, after: str) -> str:
    """A unified diff of one step (one line of context), cut at `DIFF_MAX_LINES` lines."""
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=1))[2:]  # no file names
    if len(lines) > DIFF_MAX_LINES:
        lines = lines[:DIFF_MAX_LINES] + [f"... {len(lines) - DIFF_MAX_LINES} more lines"]
    return "\n".join(lines)


def search_tree(roots: list[Path], journal_id: str) -> dict[str, Any] | None:
    """A journaled search as a `tritonsmith/searchResult` payload (without `edit`), so that a
    view draws a past search as it draws one that just ended."""
    from ..search.model import Outcome, StepKind

    loaded = _load(roots, journal_id)
    if loaded is None:
        return None
    task, settings, tree, confirmations = loaded
    nodes = list(tree.evaluated())
    claimed = next(((n, c) for n, c in reversed(confirmations) if c.claimed and n in tree.nodes), None)
    confirmation = claimed[1] if claimed is not None else (confirmations[0][1] if confirmations else None)
    best = tree.nodes[claimed[0]] if claimed is not None else (
        tree.nodes.get(confirmations[0][0]) if confirmations else None)
    if best is None:
        correct = [n for n in nodes if n.kind is not StepKind.ROOT and n.evaluation is not None
                   and n.evaluation.outcome is Outcome.CORRECT and n.evaluation.speedup is not None
                   and n.evaluation.same_as is None]
        best = max(correct, key=lambda n: n.evaluation.speedup or 0.0, default=None)
    improved = claimed is not None and best is not None and best.source != task.source
    summary = next((s for s in list_searches(roots) if s["id"] == journal_id), None)
    diff = ""
    patched = best.source if best is not None else ""
    if best is not None and improved:
        name = Path(task.path).name
        diff = "".join(difflib.unified_diff(task.source.splitlines(keepends=True), patched.splitlines(keepends=True),
                                            f"a/{name}", f"b/{name}"))
    return {
        "uri": from_fs_path(task.path) or task.path,
        "kernel": task.kernel,
        "searchId": journal_id,
        "journalId": journal_id,
        "mode": str(settings.get("mode", "auto")),
        "original": task.source,
        "best": patched,
        "bestId": best.id if best is not None else None,
        **_claim(confirmation, best.evaluation if best is not None else None),
        "result": confirmation.text() if confirmation is not None else "no speedup confirmed",
        "measuredOn": task.device,
        "measured": task.measured,
        "stopped": summary["status"] if summary is not None else "",
        "costUsd": max((n.cost_usd for n in nodes), default=0.0),
        "diff": diff,
        "tree": tree_entries(tree),
        "improved": improved,
        "edit": None,
    }

