"""What the pytest-lsp tests of the server share (imported by the test modules beside it)."""

from __future__ import annotations

import typing

from lsprotocol import types
from pytest_lsp import LanguageClient


def fix_codeaction_decoding(client: LanguageClient) -> None:
    """pytest-lsp decodes any item with a "command" key as a Command (lsp-notes.md); a code
    action carries a `command` object, so decide by the key's type instead."""
    converter = client.protocol._converter

    def hook(obj, _):
        kind = types.Command if isinstance(obj.get("command"), str) else types.CodeAction
        return converter.structure(obj, kind)

    converter.register_structure_hook(typing.Union[types.Command, types.CodeAction], hook)  # noqa: UP007
