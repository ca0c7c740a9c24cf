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
    """One actor of one pool: builds the pool's UDF instance from the compiled program.

    Two steps, so that the driver can tell a worker process that is up from one whose UDF is
    built (docs/RAY.md, eager start): the constructor only keeps its arguments, so the actor
    exists once Ray has started its process and imported this module (CPU-bound, about a
    second of Ray's own import, what the driver paces); `ready`, called right after, compiles
    the pipeline and runs the UDF's constructor (a model load, seconds to minutes, often not
    CPU-bound, which the driver does not pace). `ready` raising is the constructor's failure."""

    def __init__(
        self,
        source: bytes,
        compile_options: dict[str, bool],
        explain: str,
        pool: int,
        replica: int,
    ) -> None:
        self._build_args: tuple[bytes, dict[str, bool], str, int, int] | None = (
            source,
            compile_options,
            explain,
            pool,
            replica,
        )
        self._built: _core.RayWorker | None = None

    def booted(self) -> str:
        """Returns, once the actor's process is up (the constructor ran), the id of its
        node."""
        return str(import_ray().get_runtime_context().get_node_id())

    def ready(self) -> tuple[str, int, str]:
        """Builds the pool's UDF instance (once) and returns the actor's node id, process id
        and actor id (hex)."""
        ray = import_ray()
        if self._build_args is not None:
            source, compile_options, explain, pool, replica = self._build_args
            program = compile(
                ray.cloudpickle.loads(source),
                optimize=compile_options["optimize"],
                auto_colocate=compile_options["auto_colocate"],
            )
            if program.explain_text() != explain:
                raise ExecutionError(
                    "the pipeline compiled on a Ray actor differs from the driver's; the "
                    "pipeline's Modules or UDF code differ between the driver and the workers "
                    "(ship the same code, e.g. with runtime_env)"
                )
            self._built = _core.RayWorker(program.native, pool, replica)
            self._build_args = None
        context = ray.get_runtime_context()
        return (context.get_node_id(), os.getpid(), context.get_actor_id() or "")

    def run(self, task: bytes, *blocks: list[Any]) -> tuple[Any, ...]:
        """One call: (CallReport, *one list per output block); Ray splits the tuple."""
        return self._worker().run(task, *blocks)

    def export_block(self, block: int) -> list[Any]:
        """The values of a block this actor keeps (an output only Calls of its pool read,
        DESIGN 5.12): the driver puts them into the object store for a reader elsewhere."""
        return self._worker().exported(block)

    def cached_blocks(self) -> int:
        """How many blocks this actor holds from earlier RPCs (they cross to it once)."""
        return self._worker().cached_blocks()

    def _worker(self) -> _core.RayWorker:
        if self._built is None:  # the driver calls only actors whose `ready` returned
            raise ExecutionError("a Ray actor of the backend was called before it was ready")
        return self._built
