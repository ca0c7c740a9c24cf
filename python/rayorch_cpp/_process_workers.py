"""How the local executor starts the worker server of its process-isolated Modules.

The server is a fresh interpreter running ``rayorch_cpp._worker_server`` (never a fork of
this process, which has threads and maybe an initialised GPU runtime): it receives the
pipeline pickled as a Ray actor receives it, compiles it again, checks that the plan reads
the same as this process's, and forks one worker per replica (docs/ISOLATION.md).
"""

from __future__ import annotations

import pickle
import sys
from typing import Any

from ._compile import CompiledProgram
from ._values import ExecutionError


def _cloudpickle() -> Any:
    try:
        import cloudpickle  # type: ignore[import-untyped]
    except ImportError as error:  # pragma: no cover - a dependency of the package
        raise ExecutionError(
            "isolation=\"process\" needs the 'cloudpickle' package (a dependency of "
            "rayorch-cpp): pip install cloudpickle"
        ) from error
    return cloudpickle


def worker_server(program: CompiledProgram) -> tuple[list[str] | None, bytes]:
    """The command and the payload that start the worker server of ``program``, or
    ``(None, b"")`` when no Module runs in worker processes."""
    pools = program.isolated_pools()
    if not pools:
        return None, b""
    if program.source is None:
        raise ExecutionError(
            f'the Modules {", ".join(pools)} run in worker processes (isolation="process"), '
            "which compile the pipeline again: give the Executor a Pipeline or a forward "
            "callable, or a program from compile(pipeline)"
        )
    try:
        blob = _cloudpickle().dumps(program.source)
    except Exception as error:
        raise ExecutionError(
            f"the pipeline cannot be sent to the worker processes of {', '.join(pools)}: "
            f"pickling it failed with {type(error).__name__}: {error}; keep locks, files and "
            "clients out of the pipeline object and its forward() closure (build them in a "
            "UDF's constructor)"
        ) from error
    payload = pickle.dumps(
        {
            "sys_path": list(sys.path),
            "pipeline": blob,
            "optimize": program.optimize,
            "auto_colocate": program.auto_colocate,
            "isolation": program.isolation,
            "explain": program.explain_text(),
        }
    )
    return [sys.executable, "-m", "rayorch_cpp._worker_server"], payload
