""""Optimize this kernel": the code actions on a `@triton.jit` kernel, and the commands
`tritonsmith.server.optimize`, `tritonsmith.server.cancelSearch`,
`tritonsmith.server.applySearchResult`, and the journal's searches for views
(`tritonsmith.server.listSearches`, `searchTree`, `searchNode`) (docs/lsp-extensions.md; the
searches themselves are in `server/searches.py`).

pygls allows one `textDocument/codeAction` handler, so `code_actions.py` calls
`optimize_actions` from its handler. The actions are offered on the kernel under the cursor
when the file has a spec to verify it against (`tritonsmith.search.setup.pick_spec`, as the
command line decides); without one, a disabled "Optimize this kernel" says why, where the client
shows disabled actions.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.uris import to_fs_path

from ...settings import find_workspace_root
from ..searches import MODES, list_searches, search_node, search_tree
from ..server import TritonsmithServer
from ..session import OpenDocument

__all__ = [
    "APPLY_RESULT_COMMAND",
    "CANCEL_SEARCH_COMMAND",
    "LIST_SEARCHES_COMMAND",
    "OPTIMIZE_COMMAND",
    "OPTIMIZE_KIND",
    "SEARCH_NODE_COMMAND",
    "SEARCH_TREE_COMMAND",
    "TITLES",
    "optimize_actions",
    "register",
]

log = logging.getLogger(__name__)

OPTIMIZE_KIND = "refactor.rewrite.optimize.tritonsmith"
OPTIMIZE_COMMAND = "tritonsmith.server.optimize"
CANCEL_SEARCH_COMMAND = "tritonsmith.server.cancelSearch"
APPLY_RESULT_COMMAND = "tritonsmith.server.applySearchResult"
SEARCH_NODE_COMMAND = "tritonsmith.server.searchNode"
LIST_SEARCHES_COMMAND = "tritonsmith.server.listSearches"
SEARCH_TREE_COMMAND = "tritonsmith.server.searchTree"
TITLES = {
    "auto": "Optimize this kernel",
    "refine": "Optimize this kernel by refinement",
    "regenerate": "Optimize this kernel by regeneration",
}

# (uri, kernel) -> (digest of the text, why it cannot be optimised or None): code actions are
# asked for on every cursor move, and finding the spec parses the file.
_READY: dict[tuple[str, str], tuple[str, str | None]] = {}
_READY_SIZE = 64


def _not_ready(state: OpenDocument, kernel: str) -> str | None:
    """Why `kernel` cannot be optimised (no spec, ...), or None when it can."""
    from ...errors import TritonsmithError
    from ...search.setup import pick_spec

    text = state.document.text
    digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    cached = _READY.get((state.uri, kernel))
    if cached is not None and cached[0] == digest:
        return cached[1]
    path = Path(to_fs_path(state.uri) or state.uri)
    reason: str | None = None
    try:
        pick_spec(path, text, kernel)
    except TritonsmithError as error:
        reason = error.user_message
    except Exception as error:  # never let a code action request fail on a broken file
        log.exception("finding the spec of %s in %s failed", kernel, state.uri)
        reason = f"cannot find what to verify it against ({type(error).__name__})"
    if len(_READY) >= _READY_SIZE:
        _READY.pop(next(iter(_READY)))
    _READY[(state.uri, kernel)] = (digest, reason)
    return reason


def optimize_actions(
    ls: TritonsmithServer, state: OpenDocument, params: types.CodeActionParams, wanted: bool
) -> list[types.CodeAction]:
    """The "Optimize this kernel" actions on the kernel under `params.range.start`."""
    if not wanted or state.index is None:
        return []
    point = state.document.lsp_to_point(params.range.start.line, params.range.start.character)
    kernel = next((k for k in state.index.kernels if k.outer.start_point <= point <= k.outer.end_point), None)
    if kernel is None:
        return []
    running = ls.searches.find(state.uri, kernel.name)
    if running is not None:
        return [types.CodeAction(
            title=f"Cancel the search on {kernel.name}", kind=OPTIMIZE_KIND,
            command=types.Command(title="Cancel the search", command=CANCEL_SEARCH_COMMAND, arguments=[running.id]),
        )]
    if not ls.jobs.available():
        reason: str | None = "searching needs triton in the server's environment (pip install 'tritonsmith[eval]')"
    else:
        reason = _not_ready(state, kernel.name)
    if reason is not None:
        if not get_capability(ls.client_capabilities, "text_document.code_action.disabled_support", False):
            return []
        return [types.CodeAction(
            title=TITLES["auto"], kind=OPTIMIZE_KIND,
            disabled=types.CodeActionDisabled(reason=f"add a verification harness first: {reason}"
                                              if "nothing to verify" in reason else reason),
        )]
    return [
        types.CodeAction(
            title=TITLES[mode], kind=OPTIMIZE_KIND,
            command=types.Command(title=TITLES[mode], command=OPTIMIZE_COMMAND,
                                  arguments=[state.uri, kernel.name, mode]),
        )
        for mode in MODES
    ]


def _options(value: object) -> dict[str, object]:
    """The optional options argument (pygls may hand a JSON object over as a named tuple)."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    as_dict = getattr(value, "_asdict", None)
    return dict(as_dict()) if callable(as_dict) else {}


def _path(uri: str) -> Path:
    return Path(to_fs_path(uri) or uri)


def _roots(ls: TritonsmithServer, uri: str | None = None) -> list[Path]:
    """The workspace roots whose journals to read: `uri`'s alone when given, else the
    server's, each open document's, and each workspace folder's."""
    if uri:
        return [find_workspace_root(_path(uri).resolve())]
    roots: list[Path] = [ls.session.root] if ls.session.root is not None else []
    for folder in (getattr(ls.workspace, "folders", None) or {}).values():
        roots.append(find_workspace_root(_path(folder.uri).resolve()))
    for open_uri in list(ls.session.documents):
        roots.append(find_workspace_root(_path(open_uri).resolve()))
    return list(dict.fromkeys(roots))


def register(server: TritonsmithServer) -> None:
    @server.command(OPTIMIZE_COMMAND)
    def optimize(ls: TritonsmithServer, uri: str, kernel: str, *rest: Any) -> str | None:
        """(uri, kernel, mode?, options?): start a search and return its id at once (progress
        and the result come later). `options`: {"proposer": ...} overrides the setting for this
        search. (Optional arguments are `*rest`: pygls refuses fewer arguments than parameters.)"""
        mode = str(rest[0]) if rest and rest[0] is not None else "auto"
        proposer = _options(rest[1] if len(rest) > 1 else None).get("proposer")
        return ls.searches.start(uri, kernel, mode, None if proposer is None else str(proposer))

    @server.command(SEARCH_NODE_COMMAND)
    async def search_node_(ls: TritonsmithServer, journal_id: str, node_id: int) -> dict[str, object] | None:
        """One node of a journaled search: {source, kind, outcome, speedup, message, ...}."""
        return await asyncio.to_thread(search_node, _roots(ls), str(journal_id), int(node_id))

    @server.command(LIST_SEARCHES_COMMAND)
    async def list_searches_(ls: TritonsmithServer, *rest: Any) -> list[dict[str, object]]:
        """(uri?): the journal's searches, newest first (those of `uri` only, when given)."""
        uri = str(rest[0]) if rest and rest[0] else None
        path = _path(uri) if uri else None
        return await asyncio.to_thread(list_searches, _roots(ls, uri), path)

    @server.command(SEARCH_TREE_COMMAND)
    async def search_tree_(ls: TritonsmithServer, journal_id: str) -> dict[str, object] | None:
        """A journaled search as a `tritonsmith/searchResult` payload (no edit)."""
        return await asyncio.to_thread(search_tree, _roots(ls), str(journal_id))

    @server.command(CANCEL_SEARCH_COMMAND)
    def cancel_search(ls: TritonsmithServer, search_id: str) -> bool:
        return ls.searches.cancel(search_id)

    @server.command(APPLY_RESULT_COMMAND)
    async def apply_search_result(ls: TritonsmithServer, search_id: str) -> bool:
        """The user accepted a result in the client's own review: apply it (asking first when
        the buffer changed since the search started)."""
        return await ls.searches.apply(search_id, confirm=False)

    @server.feature(types.EXIT)
    def exit_(ls: TritonsmithServer, params: None) -> None:
        ls.searches.cancel_all()  # search threads must end before the interpreter can
