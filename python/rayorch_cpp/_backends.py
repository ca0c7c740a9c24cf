"""Building an executor's engine core on its backend: the embedded local threads, the
deterministic synchronous core, or Ray actor pools driven through a RayBackendProtocol."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import _core
from ._compile import CompiledProgram
from ._process_workers import worker_server
from ._ray_backend import RayBackend
from ._ray_contract import RayBackendProtocol
from ._ray_session import snapshot


def local_core(
    program: CompiledProgram,
    budget: Mapping[str, float] | None = None,
    random_resize_seed: int = 0,
) -> Any:
    """The embedded local backend: one thread per actor, each owning one UDF instance, or a
    worker process for the Modules with ``isolation="process"``. ``budget`` (``"CPU"``,
    ``"GPU"`` and named resources) bounds the self-sizing pools; ``random_resize_seed``
    (testing only) sizes them at random."""
    command, payload = worker_server(program)
    cpus, gpus, named = split_budget(budget or {})
    return _core.Core.local(program.native, command, payload, cpus, gpus, named, random_resize_seed)


def split_budget(budget: Mapping[str, float]) -> tuple[float, float, dict[str, float]]:
    """A budget dict as Ray writes resources (``{"CPU": 8, "GPU": 2, "disk": 1}``) split
    into CPUs, GPUs and named resources; raises ValueError naming a bad entry."""
    named: dict[str, float] = {}
    for name, amount in budget.items():
        if not isinstance(name, str) or isinstance(amount, bool):
            raise ValueError(f"budget: {name!r}: {amount!r} is not resource name -> amount")
        if not isinstance(amount, (int, float)) or not amount >= 0:
            raise ValueError(f"budget[{name!r}] must be a number >= 0, got {amount!r}")
        named[name] = float(amount)
    return named.pop("CPU", 0.0), named.pop("GPU", 0.0), named


def sync_core(program: CompiledProgram, wire: bool) -> Any:
    """The deterministic core on the calling thread; ``wire`` round-trips every protocol
    message through bytes."""
    return _core.Core.sync(program.native, wire)


def core_on(
    program: CompiledProgram,
    backend: RayBackendProtocol,
    budget: Mapping[str, float] | None = None,
    random_resize_seed: int = 0,
) -> Any:
    """A core whose actor pools are driven through ``backend`` (Ray's, or a stand-in).
    ``budget`` (``"CPU"``, ``"GPU"`` and named resources) bounds the self-sizing pools;
    ``random_resize_seed`` (testing only) sizes them at random."""
    cpus, gpus, named = split_budget(budget or {})
    return _core.Core.ray(program.native, backend, cpus, gpus, named, random_resize_seed)


def ray_source(pipeline: Any) -> bytes:
    """The pipeline as the Ray actors compile it again, taken before the driver traces it
    (a forward() that draws from state it carries then draws the same on every actor)."""
    return snapshot(pipeline)


def ray_core(
    program: CompiledProgram,
    source: bytes,
    address: str | None,
    ray_init_kwargs: dict[str, Any],
    actor_startup_timeout_s: float | None = None,
    budget: Mapping[str, float] | None = None,
    random_resize_seed: int = 0,
) -> tuple[RayBackend, Any]:
    """The Ray actor pools of ``program`` on the cluster at ``address`` and the core that
    drives them; ``budget`` bounds the self-sizing pools (default: the cluster's resources);
    ``random_resize_seed`` (testing only) sizes them at random.
    The pools are stopped again when the core cannot be built."""
    if budget is not None:
        split_budget(budget)  # a bad entry is a ValueError before anything starts
    backend = RayBackend(program, source, address, ray_init_kwargs, actor_startup_timeout_s, budget)
    try:
        return backend, core_on(program, backend, backend.budget, random_resize_seed)
    except BaseException:
        backend.stop()
        raise
