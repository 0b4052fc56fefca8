"""What the pytest-lsp tests of the server share (imported by the test modules beside it)."""

from __future__ import annotations

import typing

from lsprotocol import types
from pytest_lsp import LanguageClient

# A kernel launched with a block that is not a power of 2: TS101 from the rule at once, and from
# the compiler after a save (one Problems entry naming both).
LAUNCHED_1000 = """import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)


def double(x):
    double_kernel[(1,)](x, BLOCK=1000)
"""


def fix_codeaction_decoding(client: LanguageClient) -> None:
    """pytest-lsp decodes any item with a "command" key as a Command (lsp-notes.md); a code
    action carries a `command` object, so decide by the key's type instead."""
    converter = client.protocol._converter

    def hook(obj, _):
        kind = types.Command if isinstance(obj.get("command"), str) else types.CodeAction
        return converter.structure(obj, kind)

    converter.register_structure_hook(typing.Union[types.Command, types.CodeAction], hook)  # noqa: UP007
