"""Tritonsmith: live Triton rule diagnostics, verification and kernel search."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
