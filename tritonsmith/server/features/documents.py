"""Document sync: `textDocument/didOpen`, `didChange`, `didClose`, `willSave`, `didSave`.

Edits are applied to the incrementally parsed document at once (they must be applied in
order); the check itself is scheduled, so a burst of edits is checked once.
"""

from __future__ import annotations

from lsprotocol import types

from ..publish import clear
from ..server import TritonsmithServer

__all__ = ["register"]


def register(server: TritonsmithServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TritonsmithServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        ls.session.open(doc.uri, doc.version, doc.text)
        ls.schedule_check(doc.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TritonsmithServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.session.change(uri, params.text_document.version, list(params.content_changes))
        ls.schedule_check(uri)
        ls.jobs.on_change(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TritonsmithServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.close(params.text_document.uri)
        ls.jobs.on_close(params.text_document.uri)
        clear(ls.session, ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_WILL_SAVE)
    def will_save(ls: TritonsmithServer, params: types.WillSaveTextDocumentParams) -> None:
        # Why the save happens: an autosave (files.autoSave) compiles but does not verify.
        ls.jobs.will_save(params.text_document.uri, params.reason)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TritonsmithServer, params: types.DidSaveTextDocumentParams) -> None:
        # Static checks already ran on the last edit; a save compiles for the targets.
        ls.jobs.on_save(params.text_document.uri)
