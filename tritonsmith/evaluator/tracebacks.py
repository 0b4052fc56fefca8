"""Reading a worker's traceback so that messages point at the user's file.

Workers import copies of the user's files from a scratch folder (`<work>/<trial>/<role>/<name>`,
verify.py) with every line where it was (blanked parts keep their lines), and report an exception
as `traceback.format_exc()` text. This module finds, in that text, the frame of the user's own code
where the root cause was raised, and names it by the user's path rather than the copy's.

No torch or triton here: the server reads tracebacks too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

__all__ = ["chained_blocks", "frames", "syntax_error", "user_frame", "user_paths"]

_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)', re.MULTILINE)
_CHAINED = re.compile(r"\n(?:The above exception was the direct cause of the following exception:|"
                      r"During handling of the above exception, another exception occurred:)\n")


def chained_blocks(text: str) -> list[str]:
    """The tracebacks of an exception chain, root cause first (the order Python prints them)."""
    return _CHAINED.split(text)


def frames(block: str) -> list[tuple[str, int, str]]:
    """(file, line, function) of each frame of one traceback, outermost first."""
    return [(m.group("file"), int(m.group("line")), m.group("func")) for m in _FRAME.finditer(block)]


def _role_path(path: str, work: str, roles: Mapping[str, str]) -> str | None:
    """The user's file for a worker's copy `<work>/<trial>/<role>/<name>`, else None."""
    prefix = work.rstrip(os.sep) + os.sep
    if not path.startswith(prefix):
        return None
    parts = path[len(prefix):].split(os.sep)
    if len(parts) >= 3 and parts[1] in roles:
        return roles[parts[1]]
    return None


def user_paths(text: str, work: str | None, roles: Mapping[str, str]) -> str:
    """`text` with every path of a worker's copy under `work` replaced by the user's file."""
    if not work:
        return text
    pattern = re.compile(re.escape(work.rstrip(os.sep) + os.sep) + r"[^" + re.escape(os.sep) +
                         r"\s]+" + re.escape(os.sep) + r"(?P<role>\w+)" + re.escape(os.sep) + r"[^\s\"',:)]+")

    def replace(match: re.Match[str]) -> str:
        return roles.get(match.group("role"), match.group(0))

    return pattern.sub(replace, text)


def user_frame(text: str, work: str | None, roles: Mapping[str, str]) -> str | None:
    """"kernels.py:12, in add_kernel": the innermost frame in a worker's copy of the user's
    files, in the root cause of the chain (for an error raised inside a kernel under the
    interpreter, the kernel's line); None when no frame is in the user's files."""
    if not work:
        return None
    for block in chained_blocks(text):
        own = [(path, line, func) for path, line, func in frames(block)
               if _role_path(path, work, roles) is not None]
        if own:
            path, line, func = own[-1]
            return f"{_role_path(path, work, roles)}:{line}, in {func}"
    return None


def syntax_error(source: str, path: str) -> tuple[str, int, int] | None:
    """(message, 1-based line, 1-based column) of the first syntax error in `source`, found by
    compiling it (nothing runs), or None."""
    try:
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as error:
        return str(error.msg), int(error.lineno or 1), int(error.offset or 1)
    except (ValueError, OverflowError, RecursionError):  # null bytes, absurd literals: not ours to judge
        return None
    return None
