"""Keys this user's tritonsmith keeps to itself, outside every workspace.

A key makes a digest that someone else's files cannot reproduce: the profile's sampling seed
(`evaluator/verify.py`: a candidate cannot work out which of its programs are sampled) and the
check cache's run key (`check_cache.py`: a cache folder committed to a repository is never read
as this machine's). Each key is 32 random bytes in the user's cache folder, made on first use.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

__all__ = ["user_key"]


def user_key(name: str) -> bytes:
    """The key called `name` (`<user cache>/tritonsmith/<name>.key`), made on first use. A home
    that cannot be written gets a key for this process only (then nothing keyed by it is reused)."""
    import platformdirs

    path = Path(platformdirs.user_cache_dir("tritonsmith", appauthor=False)) / f"{name}.key"
    try:
        return path.read_bytes()
    except OSError:
        key = secrets.token_bytes(32)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(key)
        except FileExistsError:
            return path.read_bytes()  # another process made it first
        except OSError:
            pass  # a read-only home: this run's key, the same within the run
        return key
