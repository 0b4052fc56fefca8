"""What several subcommands share: the settings of a command (`[tool.tritonsmith]` under its
flags), the workspace they open, the rule-selection options, and reading a file named on the
command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..settings import Settings, find_workspace_root, read_pyproject

# The workspace (and with it the rules) is imported where it is used: commands that need none of
# it (`--help`, `verify`, `serve`'s start) do not wait 0.1 s for the rules to import.
if TYPE_CHECKING:
    from ..workspace import Workspace


def add_rule_options(sub: argparse.ArgumentParser) -> None:
    """The options that choose the rules in force (`check`, `rules list`, `rules show`)."""
    sub.add_argument("--triton-version", metavar="X.Y", help="check against this Triton version")
    sub.add_argument("--select", action="append", metavar="CODES", help="only these rules (codes, prefixes or names; comma-separated)")
    sub.add_argument("--ignore", action="append", metavar="CODES", help="never these rules")
    sub.add_argument("--rule-pack", action="append", metavar="PATH", help="an extra rule-pack file or folder")


def split_csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def command_settings(args: argparse.Namespace, root: Path, warnings: list[str]) -> Settings:
    """The workspace's `[tool.tritonsmith]` settings under the command's flags."""
    flags: dict[str, object] = {}
    if getattr(args, "triton_version", None):
        flags["triton_version"] = args.triton_version
    if getattr(args, "select", None):
        flags["select"] = [c for v in args.select for c in split_csv(v)]
    if getattr(args, "ignore", None):
        flags["ignore"] = [c for v in args.ignore for c in split_csv(v)]
    if getattr(args, "rule_pack", None):
        flags["rule_packs"] = args.rule_pack
    if getattr(args, "timeout", None) is not None:
        flags["verify_timeout"] = args.timeout
    if getattr(args, "memory_mb", None) is not None:
        flags["memory_limit_mb"] = args.memory_mb
    return Settings.merged(read_pyproject(root, warnings=warnings), flags, warnings=warnings)


def open_workspace(args: argparse.Namespace, first_path: str | None = None) -> Workspace:
    from ..workspace import Workspace

    root = find_workspace_root(Path(first_path or "."))
    warnings: list[str] = []
    settings = command_settings(args, root, warnings)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if settings.triton_version is None and getattr(args, "triton_version", None):
        raise UsageError(f"--triton-version {args.triton_version!r} is not MAJOR.MINOR (e.g. 3.6)")
    workspace = Workspace(root, settings)
    for error in workspace.pack_errors:
        print(f"error: {error.user_message} (this pack is skipped)", file=sys.stderr)
    return workspace


def file_settings(args: argparse.Namespace, path: Path) -> tuple[Settings, Path]:
    """The settings of the file's workspace (`[tool.tritonsmith]` under the flags) and its root."""
    root = find_workspace_root(path.resolve())
    warnings: list[str] = []
    settings = command_settings(args, root, warnings)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return settings, root


def read_text(path: Path) -> str:
    """A file named on the command line, or a usage error saying why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"{path}: cannot read: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
