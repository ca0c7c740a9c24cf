"""One run per output directory at a time (as workloads/common/output_lock.h for the C++
commands). Jobs of a split corpus (``--shard``) pointed at one folder would otherwise clear
each other's temporaries and write one journal from two processes, losing outputs without a
word."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path
from types import TracebackType
from typing import Self


class OutputInUse(Exception):
    """Another process holds the output directory (or it cannot be locked); the message
    names the directory and says what to do."""


class OutputLock:
    """An exclusive lock on an existing directory while the object is open: flock(2) on the
    directory itself, so no lock file is left behind and the kernel releases it when the
    process dies, SIGKILL included (a ``--resume`` right after a crash finds it free). The
    descriptor is not inherited by processes this one starts."""

    def __init__(self, directory: str | os.PathLike[str], command: str) -> None:
        path = Path(directory)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as error:
            raise OutputInUse(f"cannot open output directory {path}: {error.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise OutputInUse(
                    f"output directory {path} is in use by another {command} run; wait for it "
                    "to end, or give this run (or each job of a split) its own output directory"
                ) from None
            raise OutputInUse(f"cannot lock output directory {path}: {error.strerror}") from None
        self._fd: int | None = fd

    def close(self) -> None:
        """Releases the lock (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
