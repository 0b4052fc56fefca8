"""Tree-sitter parsing and the kernel index. Knows nothing of rules or LSP."""

from __future__ import annotations

from .document import Document
from .index import Kernel, LaunchSite, ModuleIndex, Param, index_module

__all__ = ["Document", "Kernel", "LaunchSite", "ModuleIndex", "Param", "index_module"]
