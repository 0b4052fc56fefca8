"""The server's first answer and first diagnostics, before pygls and lsprotocol are imported.

Importing lsprotocol and pygls (and building the server's features on them) is most of a cold
start, and neither is needed to answer `initialize` or to check the first file: the rules, the
index and the type inference are plain Python. So `serve_stdio` (transport.py) first runs
`answer_early`: it reads the client's first messages itself and

- answers `initialize` with the result the full server gave last time for the same client
  capabilities and initialization options and the same server code (`InitializeCache`, in the
  user's cache: keyed by those, so a change of any is a miss, which the full server answers and
  the cache records);
- on the first `textDocument/didOpen` (or, for a client that pulls diagnostics, its first
  `textDocument/diagnostic` of an opened file), checks the file with the workspace's rules and
  settings exactly as the full server will (same `Workspace`, same matcher, same positions) and
  publishes them (or answers the pull with them). A large file's syntax-level findings (the
  checks that need no type inference: `Matcher.check_syntax`, a subset of the full check's, each
  the same) are published first, then all of them.

Then the full server is built and every message read so far is handed to it in order, its own
answers to the requests answered early dropped. What the early check built (`EarlyCheck`: the
workspace with its matcher and caches, the parsed document, its index, its findings) is handed
over too: the full server keeps that workspace when its own settings and rules are the same and
adopts the document when its `didOpen` is the one checked, so the file is not parsed and checked
a second time (on a 55,000-line file that was seconds before the first edit was answered); it
publishes the same diagnostics again. Anything the early phase does not handle (any other request, a cache
miss, a silence of `WAIT_S`) ends it at once, so the early phase can make the first answers
sooner, never different (`tests/server/test_early.py` compares both).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .framing import Framer, error_response

__all__ = ["Early", "EarlyCheck", "InitializeCache", "answer_early", "diagnostics_json", "early_diagnostics"]

log = logging.getLogger(__name__)

WAIT_S = 0.5
"""How long the early phase waits for the next message before handing over to the full server."""
EARLY_MESSAGES = 64
"""Messages the early phase reads before it hands over whatever they are: it keeps each one for the
full server, so a client that only sends what it passes over (`$/setTrace`, a pulling client's
`didOpen`s) must not make it read, and keep, without end."""

_SEVERITY = {"error": 1, "warning": 2, "information": 3, "hint": 4}


def _code_identity() -> str:
    """What the full server's `initialize` answer depends on besides the client: the server's own
    code and the pygls and lsprotocol installed (their files' sizes and times, not their text:
    cheap, and any reinstall changes them)."""
    from importlib.util import find_spec

    from .. import __version__

    parts = [__version__, sys.version]
    here = Path(__file__).resolve().parent
    for path in sorted(here.rglob("*.py")):
        stat = path.stat()
        parts.append(f"{path.relative_to(here)}:{stat.st_size}:{stat.st_mtime_ns}")
    for package in ("pygls", "lsprotocol"):
        spec = find_spec(package)
        if spec is not None and spec.origin:
            stat = Path(spec.origin).stat()
            parts.append(f"{package}:{spec.origin}:{stat.st_size}:{stat.st_mtime_ns}")
    return "\n".join(parts)


class InitializeCache:
    """The full server's `initialize` results, by client capabilities, initialization options and
    server code; one small JSON file, written atomically. Trusted as the attrs cache is
    (lsp_types.py): whoever can write the user's cache can change what the server says."""

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            import platformdirs

            path = Path(platformdirs.user_cache_dir("tritonsmith", appauthor=False)) / "initialize-results.json"
        self.path = path

    @staticmethod
    def key(params: dict[str, Any]) -> str:
        wanted = [_code_identity(), params.get("capabilities"), params.get("initializationOptions")]
        return hashlib.blake2b(json.dumps(wanted, sort_keys=True).encode(), digest_size=16).hexdigest()

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, params: dict[str, Any]) -> dict[str, Any] | None:
        try:
            found = self._read().get(self.key(params))
        except (OSError, TypeError, ValueError):  # a file gone missing, params JSON cannot hold
            return None
        return found if isinstance(found, dict) else None

    def put(self, params: dict[str, Any], result: dict[str, Any]) -> None:
        import tempfile

        try:
            key = self.key(params)
        except (OSError, TypeError, ValueError):
            return
        data = self._read()
        data[key] = result
        while len(data) > 16:  # a few clients and versions; the oldest entry goes first
            del data[next(iter(data))]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, self.path)
        except OSError:
            log.debug("initialize cache not written to %s", self.path, exc_info=True)


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _root(params: dict[str, Any]) -> Path | None:
    """The workspace root as the full server finds it (`TritonsmithServer.set_root`)."""
    from pygls.uris import to_fs_path  # light: no lsprotocol

    from ..settings import find_workspace_root

    uri = params.get("rootUri")
    folders = params.get("workspaceFolders")
    if uri is None and isinstance(folders, list) and folders and isinstance(folders[0], dict):
        uri = folders[0].get("uri")
    path = to_fs_path(uri) if isinstance(uri, str) and uri else None
    return find_workspace_root(Path(path)) if path else None


SYNTAX_FIRST_BYTES = 16 * 1024
"""From this size on, the first file's syntax-level findings are published before its full check
(below it the whole check takes a few milliseconds, and one publish is better than two)."""


@dataclass
class EarlyCheck:
    """What the early check of the first opened file built, for the full server to adopt
    (`Session.adopt_early`) instead of building it again."""

    workspace: Any  # Workspace: its settings, rules and matcher, with the kernels' results cached
    uri: str
    version: int | None
    text: str  # as the didOpen gave it
    document: Any  # Document
    index: Any  # ModuleIndex, built with a LaunchCache as the server's are
    findings: list[Any]
    record: Any  # CheckRecord: what the next edit's check starts from


def early_diagnostics(params: dict[str, Any], opened: dict[str, Any], encoding: str, *,
                      syntax_first: bool = True, early: Early | None = None) -> Iterator[dict[str, Any]]:
    """`textDocument/publishDiagnostics` params for the document `opened` (a didOpen's
    `textDocument`) as the full server computes them at start (publish.py, convert.py): the
    workspace's rules and settings from `params` (initialize's), no compile findings yet. For a
    large file (and `syntax_first`), first those of the checks that need no types (`Matcher.check_syntax`: a subset,
    each the same), then all of them when they differ; the last is the full server's. Nothing
    when the workspace has a rule pack error (the full server reports it first). With `early`,
    what it built is left in `early.checked` for the full server."""
    from ..analysis import Document, index_module
    from ..analysis.index import LaunchCache
    from ..rules.matcher import CheckRecord
    from ..settings import Settings, read_pyproject, settings_from
    from ..workspace import Workspace
    from .rule_pages import RulePages

    root = _root(params)
    settings = Settings.merged(read_pyproject(root) if root else {}, settings_from(params.get("initializationOptions")))
    workspace = Workspace(root, settings, editing=True)  # as the server's (`TritonsmithServer.reload`)
    if workspace.pack_errors:
        return
    document = Document(opened["text"], encoding=encoding)
    index = index_module(document.root, launch_cache=LaunchCache())
    pages = RulePages(workspace.rules, root)
    uri = opened["uri"]

    def where(span: Any) -> dict[str, Any]:
        (sl, sc), (el, ec) = document.point_to_lsp(*span.start), document.point_to_lsp(*span.end)
        return {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}}

    def published(findings: list[Any]) -> dict[str, Any]:
        diagnostics = []
        for finding in findings:
            diagnostic: dict[str, Any] = {
                "range": where(finding.span),
                "severity": _SEVERITY["hint"] if finding.secondary else _SEVERITY[str(finding.severity.value)],
                "code": finding.code,
            }
            if (href := pages.href(finding.code)) is not None:
                diagnostic["codeDescription"] = {"href": href}
            diagnostic["source"] = "tritonsmith"
            diagnostic["message"] = finding.message
            if finding.related:
                diagnostic["relatedInformation"] = [
                    {"location": {"uri": uri, "range": where(r.span)}, "message": r.message} for r in finding.related]
            diagnostic["data"] = {"name": finding.name, "fixable": finding.fix is not None}
            diagnostics.append(diagnostic)
        out: dict[str, Any] = {"uri": uri}
        if opened.get("version") is not None:
            out["version"] = opened["version"]
        out["diagnostics"] = diagnostics
        return out

    first = None
    if syntax_first and len(document.source) >= SYNTAX_FIRST_BYTES:
        first = published(workspace.matcher.check_syntax(document.source, index))
        yield first
    record = CheckRecord()
    findings = workspace.matcher.check_module(document.source, index, record)
    if early is not None:
        early.checked = EarlyCheck(workspace, opened["uri"], opened.get("version"), opened["text"], document, index,
                                   findings, record)
    full = published(findings)
    if full != first:
        yield full


def diagnostics_json(params: dict[str, Any], opened: dict[str, Any], encoding: str,
                     early: Early | None = None) -> dict[str, Any] | None:
    """The full server's first diagnostics for `opened` (`early_diagnostics`' last), in one
    answer (a pull's), without the syntax-level ones first."""
    return next(early_diagnostics(params, opened, encoding, syntax_first=False, early=early), None)


@dataclass
class Early:
    """What the early phase read and did, for the hand-over."""

    bodies: list[bytes] = field(default_factory=list)  # every message read, in order, to replay
    initialize: dict[str, Any] | None = None  # the initialize request, when the first message was one
    answered: set[Any] = field(default_factory=set)  # ids of the requests answered early
    checked: EarlyCheck | None = None  # what the early check built, for the full server


def answer_early(next_chunk: Callable[[float | None], bytes | None], framer: Framer, write: Callable[[bytes], None],
                 cache: InitializeCache, *, wait_s: float = WAIT_S) -> Early:
    """Read and answer what can be answered before the full server exists (the module's
    docstring). `next_chunk(timeout)` returns the next bytes read, b"" at the end of the stream,
    None after `timeout` seconds without any. Whatever goes wrong here ends the early phase,
    never the server: every message read is in the result, for the full server."""
    early = Early()
    try:
        _answer(early, next_chunk, framer, write, cache, wait_s)
    except Exception:
        log.exception("the early phase failed; the full server takes over")
    return early


def _answer(early: Early, next_chunk: Callable[[float | None], bytes | None], framer: Framer,
            write: Callable[[bytes], None], cache: InitializeCache, wait_s: float) -> None:
    pending: list[dict[str, Any] | None] = []  # parsed bodies not yet looked at (None: not JSON)

    def more(timeout: float | None) -> bool:
        data = next_chunk(timeout)
        if not data:
            return False
        for item in framer.feed(data):
            if isinstance(item, tuple):  # a framing error: answered as the full loop would
                write(error_response(*item))
                continue
            early.bodies.append(item)
            try:
                message = json.loads(item)
            except ValueError:
                message = None
            pending.append(message if isinstance(message, dict) else None)
        return True

    while not pending:  # the first message, however long it takes
        if not more(None):
            return
    first = pending.pop(0)
    if first is None or first.get("method") != "initialize" or "id" not in first:
        return
    raw = first.get("params")
    params: dict[str, Any] = raw if isinstance(raw, dict) else {}
    early.initialize = first
    result = cache.get(params)
    if result is None:
        return
    write(_frame({"id": first["id"], "result": result}))
    early.answered.add(first["id"])
    capabilities = params.get("capabilities") or {}
    pulls = isinstance(capabilities, dict) and (capabilities.get("textDocument") or {}).get("diagnostic") is not None
    encoding = str((result.get("capabilities") or {}).get("positionEncoding") or "utf-16")
    opened: dict[str, dict[str, Any]] = {}  # a pulling client's documents, by URI, until it asks
    while True:
        while not pending:  # a message can come in several chunks (a large file's didOpen)
            if not more(wait_s):
                return
        message = pending.pop(0)
        if message is None or len(early.bodies) > EARLY_MESSAGES:
            return
        method = message.get("method")
        try:
            if method == "textDocument/didOpen":
                document = message["params"]["textDocument"]
                if pulls:
                    opened[document["uri"]] = document
                    continue
                for published in early_diagnostics(params, document, encoding, early=early):
                    write(_frame({"method": "textDocument/publishDiagnostics", "params": published}))
                return
            if method == "textDocument/diagnostic" and "id" in message:
                document = opened.get(message["params"]["textDocument"]["uri"])
                if document is not None and (pulled := diagnostics_json(params, document, encoding, early)) is not None:
                    # Any result id will do: the full server's next answer to this client's
                    # next pull is then a full report (its ids are its own).
                    report = {"kind": "full", "resultId": f"early-{document['version']}",
                              "items": pulled["diagnostics"]}
                    write(_frame({"id": message["id"], "result": report}))
                    early.answered.add(message["id"])
                return
        except Exception:  # the full server answers it again, and says what went wrong
            log.exception("the early check failed")
            return
        if method not in ("initialized", "workspace/didChangeConfiguration", "$/setTrace"):
            return
