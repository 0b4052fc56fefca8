"""Lifecycle and settings: `initialize`, `initialized`, `workspace/didChangeConfiguration`.

Editor settings come from `workspace/configuration` (section `tritonsmith`) when the client
supports it, and from `initializationOptions` otherwise; they are re-read on every
`didChangeConfiguration`. A change re-checks every open document.
"""

from __future__ import annotations

import logging

from lsprotocol import types
from pygls.capabilities import get_capability

from ...settings import settings_from
from ..server import TritonsmithServer
from .diagnostics import register_pull

__all__ = ["register"]

log = logging.getLogger(__name__)


async def _pull_settings(ls: TritonsmithServer) -> dict | None:
    if not get_capability(ls.client_capabilities, "workspace.configuration", False):
        return None
    scope = None
    if ls.session.root is not None:
        scope = ls.session.root.as_uri()
    try:
        result = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(scope_uri=scope, section="tritonsmith")])
        )
    except Exception:  # a client that fails the request keeps the settings we had
        log.exception("workspace/configuration failed")
        return None
    return settings_from(result[0]) if result else {}


def register(server: TritonsmithServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: TritonsmithServer, params: types.InitializeParams) -> None:
        root = params.root_uri
        if root is None and params.workspace_folders:
            root = params.workspace_folders[0].uri
        ls.set_root(root)
        caps = params.capabilities
        if get_capability(caps, "text_document.diagnostic", None) is not None:
            ls.session.pull_diagnostics = True
            register_pull(ls)
        ls.session.supports_refresh = bool(get_capability(caps, "workspace.diagnostics.refresh_support", False))
        ls.session.client_supports_code_lens_refresh = bool(get_capability(caps, "workspace.code_lens.refresh_support", False))
        ls.reload(editor_settings=settings_from(params.initialization_options))

    @server.feature(types.INITIALIZED)
    async def initialized(ls: TritonsmithServer, params: types.InitializedParams) -> None:
        if get_capability(ls.client_capabilities, "workspace.did_change_configuration.dynamic_registration", False):
            try:
                await ls.client_register_capability_async(
                    types.RegistrationParams(
                        registrations=[
                            types.Registration(
                                id="tritonsmith-configuration",
                                method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                                register_options={"section": "tritonsmith"},
                            )
                        ]
                    )
                )
            except Exception:  # the client still sends didChangeConfiguration if it was told to
                log.warning("the client refused to register didChangeConfiguration")
        # Watch before the settings round trip: a pack written meanwhile is then either seen
        # by the watcher or read by the reload below, never missed.
        from .watch import start_watching

        start_watching(ls)
        pulled = await _pull_settings(ls)
        if pulled is not None:
            ls.reload(editor_settings=pulled)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: TritonsmithServer, params: types.DidChangeConfigurationParams) -> None:
        pulled = await _pull_settings(ls)
        if pulled is None:
            pulled = settings_from(params.settings)
        ls.reload(editor_settings=pulled)
