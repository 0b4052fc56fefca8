"""Re-check open documents when a rule pack or `pyproject.toml` changes on disk (watchdog).

Watched, without recursion: the workspace root (for `pyproject.toml` and a new `.tritonsmith/`),
`.tritonsmith/`, the user's rule folder and the folders of extra packs from the settings.
Events arrive on watchdog's thread and are handed to the event loop, debounced, so saving a
pack re-checks open documents well within a second.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from ...rules.pack import user_rules_dir
from ..server import TritonsmithServer

__all__ = ["PackWatcher", "start_watching"]

log = logging.getLogger(__name__)

DEBOUNCE_S = 0.1


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: PackWatcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        paths = [str(event.src_path), str(getattr(event, "dest_path", "") or "")]
        if any(p.endswith(".toml") for p in paths) or (
                event.event_type != "modified" and any(p.endswith(".tritonsmith") for p in paths)):
            # `.tritonsmith` itself only when it comes or goes (its pack is then watched): the
            # state database written there at every save "modifies" the folder, and must not
            # reload the rules and re-check every open document.
            log.debug("%s: %s", event.event_type, event.src_path)
            self.watcher.changed()


class PackWatcher:
    def __init__(self, server: TritonsmithServer, loop: asyncio.AbstractEventLoop) -> None:
        self.server = server
        self.loop = loop
        self.observer = Observer()
        self.observer.daemon = True
        self.watches: dict[Path, object] = {}
        self._pending: asyncio.TimerHandle | None = None
        self.observer.start()

    def folders(self, server: TritonsmithServer) -> set[Path]:
        folders: set[Path] = set()
        if server.session.root is not None:
            folders |= {server.session.root, server.session.root / ".tritonsmith"}
        folders.add(user_rules_dir())
        for entry in server.session.workspace.settings.rule_packs:
            path = Path(entry)
            if server.session.root is not None and not path.is_absolute():
                path = server.session.root / path
            folders.add(path if path.is_dir() else path.parent)
        return {f for f in folders if f.is_dir()}

    def update(self, server: TritonsmithServer) -> None:
        """Watch exactly the folders the current settings name."""
        wanted = self.folders(server)
        log.debug("watching %s", ", ".join(sorted(map(str, wanted))))
        for folder in list(self.watches):
            if folder not in wanted:
                self.observer.unschedule(self.watches.pop(folder))  # type: ignore[arg-type]
        for folder in wanted - set(self.watches):
            try:
                self.watches[folder] = self.observer.schedule(_Handler(self), str(folder), recursive=False)
            except OSError as error:
                log.warning("cannot watch %s: %s", folder, error)

    def changed(self) -> None:
        self.loop.call_soon_threadsafe(self._debounce)

    def _debounce(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
        self._pending = self.loop.call_later(DEBOUNCE_S, self._reload)

    def _reload(self) -> None:
        self._pending = None
        log.info("a rule pack or pyproject.toml changed; reloading rules")
        self.server.reload()

    def stop(self) -> None:
        self.observer.stop()


def start_watching(server: TritonsmithServer) -> None:
    if server.watcher is not None:
        return
    try:
        watcher = PackWatcher(server, asyncio.get_running_loop())
    except Exception:  # no inotify slots, say: linting still works without reloads
        log.exception("cannot watch rule packs; edit-and-reload is off")
        return
    server.watcher = watcher
    watcher.update(server)
