"""control_flow checks."""

from __future__ import annotations
