"""The Python half of the crash record (docs/ISOLATION.md).

When a Module on threads crashes the process with a fatal signal (a segfault or an abort in
native code), the engine writes which Call and which Grains it was running to stderr, then
hands the signal to the handler installed before it. That handler is Python's own
``faulthandler``, turned on here, so the Python stack of every thread follows the record.
"""

from __future__ import annotations

import faulthandler
import io


def keep_python_stacks_for_crashes() -> None:
    """Turns ``faulthandler`` on (all threads, to stderr) unless it is on already. Where
    stderr has no file descriptor (an embedding that replaced it), the record goes without
    the Python stacks."""
    if faulthandler.is_enabled():
        return
    try:
        faulthandler.enable(all_threads=True)
    except (AttributeError, ValueError, RuntimeError, io.UnsupportedOperation):
        pass
