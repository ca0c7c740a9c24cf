"""Files replaced at once: a reader sees the old file or the whole new one, never a part (a
temporary in the same folder, flushed to disk, then renamed over the target)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_bytes_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """Replaces ``path`` with ``data`` (readable by others, as a normal file is)."""
    target = Path(path)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide the outputs from other users
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_text_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Replaces ``path`` with ``text`` (UTF-8)."""
    write_bytes_atomically(path, text.encode("utf-8"))
