"""One actor of the Ray backend (rayorch_cpp._ray_backend starts them): it compiles the same
pipeline again and runs one pool's UDF through the engine's worker boundary
(``_core.RayWorker``)."""

from __future__ import annotations

import os
from typing import Any

from . import _core
from ._compile import compile
from ._ray_session import import_ray
from ._values import ExecutionError


class Worker:
    """One actor of one pool: builds the pool's UDF instance from the compiled program."""

    def __init__(
        self, source: bytes, optimize: bool, explain: str, pool: int, replica: int
    ) -> None:
        ray = import_ray()
        program = compile(ray.cloudpickle.loads(source), optimize=optimize)
        if program.explain_text() != explain:
            raise ExecutionError(
                "the pipeline compiled on a Ray actor differs from the driver's; the "
                "pipeline's Modules or UDF code differ between the driver and the workers "
                "(ship the same code, e.g. with runtime_env)"
            )
        self._worker = _core.RayWorker(program.native, pool, replica)

    def ready(self) -> tuple[str, int, str]:
        """The actor's node id, process id and actor id (hex), once its constructor has
        finished."""
        context = import_ray().get_runtime_context()
        return (context.get_node_id(), os.getpid(), context.get_actor_id() or "")

    def run(self, task: bytes, *blocks: list[Any]) -> tuple[Any, ...]:
        """One call: (CallReport, *one list per output block); Ray splits the tuple."""
        return self._worker.run(task, *blocks)

    def export_block(self, block: int) -> list[Any]:
        """The values of a block this actor keeps (an output only Calls of its pool read,
        DESIGN 5.12): the driver puts them into the object store for a reader elsewhere."""
        return self._worker.exported(block)

    def cached_blocks(self) -> int:
        """How many blocks this actor holds from earlier RPCs (they cross to it once)."""
        return self._worker.cached_blocks()
