"""launch checks."""

from __future__ import annotations
