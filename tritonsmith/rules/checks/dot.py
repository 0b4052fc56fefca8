"""dot checks."""

from __future__ import annotations
