"""One module per LSP feature; each registers its handlers from `register(server)`."""

from __future__ import annotations

from ..server import TritonsmithServer
from . import code_actions, code_lens, configuration, documents, hover, inlay_hints, optimize

__all__ = ["register_all"]


def register_all(server: TritonsmithServer) -> None:
    for feature in (configuration, documents, code_actions, code_lens, hover, inlay_hints, optimize):
        feature.register(server)
