"""data_structures checks."""

from __future__ import annotations
