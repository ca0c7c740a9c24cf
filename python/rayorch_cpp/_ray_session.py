"""Connecting the driver to a Ray cluster and shipping the pipeline to the Ray actors."""

from __future__ import annotations

import socket
from typing import Any

from ._compile import CompiledProgram
from ._values import ExecutionError


def import_ray() -> Any:
    """The ray module (imported on first use: Ray is needed by the Ray backend only)."""
    try:
        import ray
    except ImportError as error:  # pragma: no cover - ray is a pinned test dependency
        raise ExecutionError(
            "the Ray backend needs the 'ray' package: install the package with its "
            "'ray' extra (pip install 'rayorch-cpp[ray]', which pins ray==2.60.0)"
        ) from error
    return ray


def connect(address: str | None, init_kwargs: dict[str, Any]) -> None:
    """Connects this process to a Ray cluster unless it already is.

    An ``address`` of the form ``host:port`` is probed first, so a missing cluster is a
    clear error instead of a long retry loop inside ``ray.init``.
    """
    ray = import_ray()
    if ray.is_initialized():
        return
    if address and address not in ("auto", "local") and not address.startswith("ray://"):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host or "127.0.0.1", int(port)), timeout=2.0):
                pass
        except (OSError, ValueError) as error:
            raise ExecutionError(
                f"no Ray cluster answers at {address!r} ({error}); start one with "
                "`ray start --head` and pass its GCS address (host:port), or pass "
                "address=None to start a local Ray instance"
            ) from error
    try:
        ray.init(address=address, **init_kwargs)
    except ConnectionError as error:
        raise ExecutionError(
            f"could not connect to a Ray cluster at {address!r}: {error}; start one with "
            "`ray start --head` or pass address=None to start a local Ray instance"
        ) from error


def snapshot(pipeline: Any) -> bytes:
    """The pipeline as the actors will compile it, taken before the driver traces it (a
    forward() that draws from state it carries then draws the same on every actor)."""
    ray = import_ray()
    source = pipeline.source if isinstance(pipeline, CompiledProgram) else pipeline
    if source is None:
        raise ExecutionError("the Ray backend needs a Pipeline or forward callable to ship")
    try:
        blob: bytes = ray.cloudpickle.dumps(source)
    except Exception as error:
        raise ExecutionError(
            f"the pipeline cannot be shipped to the Ray workers: pickling it failed with "
            f"{type(error).__name__}: {error}; keep locks, files and clients out of the "
            "pipeline object and its forward() closure (build them in a UDF's constructor)"
        ) from error
    return blob
