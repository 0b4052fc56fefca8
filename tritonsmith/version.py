"""The Triton version rules are checked against, found without importing triton."""

from __future__ import annotations

__all__ = ["DEFAULT_VERSION", "installed_triton_version", "parse_version", "resolve_version"]

# Used when triton is not installed (a lint-only machine) and nothing is configured:
# the newest release the builtin rules were verified against.
DEFAULT_VERSION = (3, 9)


def installed_triton_version() -> tuple[int, int] | None:
    """The installed triton's MAJOR.MINOR, read from package metadata (no import)."""
    from importlib import metadata  # 20 ms: not for every command line's start

    for dist in ("triton", "pytorch-triton", "triton-nightly"):
        try:
            return parse_version(metadata.version(dist))
        except (metadata.PackageNotFoundError, ValueError):
            continue
    return None


def resolve_version(configured: str | None) -> tuple[int, int]:
    """A configured version wins, then the installed one, then DEFAULT_VERSION."""
    if configured:
        return parse_version(configured)
    return installed_triton_version() or DEFAULT_VERSION


def parse_version(value: str) -> tuple[int, int]:
    """`"3.9"` or `"3.9.0"` -> (3, 9). Raises ValueError on anything else."""
    parts = value.strip().split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise ValueError(f"not a Triton version: {value!r} (expected MAJOR.MINOR, e.g. 3.6)")
    return int(parts[0]), int(parts[1])
