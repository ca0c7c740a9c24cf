"""Which replica of its Module a UDF instance is (``rayorch_cpp.replica_context()``)."""

from __future__ import annotations

from dataclasses import dataclass

from . import _core


@dataclass(frozen=True, slots=True)
class ReplicaContext:
    """One replica of a Module: ``index`` in ``0 .. replicas - 1``, the Module's
    ``num_cpus`` and ``num_gpus`` per actor (what a UDF sizes its own thread pools and picks
    its device by: a model runtime with ``num_cpus=k`` runs ``k`` threads, so actors that
    share a machine do not oversubscribe it) and the GPU ``devices`` it is given.

    Replica ``i`` of a Module with ``num_gpus=g`` is given devices ``floor(i*g) ..`` (``ceil(g)``
    of them; one, shared, when ``g < 1``), taken modulo the entries of
    ``CUDA_VISIBLE_DEVICES`` when that is set (``devices`` are then those entries) and as
    device numbers otherwise. On threads (the local backend's default) every actor shares
    this process's environment, so ``CUDA_VISIBLE_DEVICES`` is not set per replica and a UDF
    selects its device itself, e.g. ``torch.device(f"cuda:{d}")`` for ``d = ctx.devices[0]``
    (without CUDA_VISIBLE_DEVICES) or by position. With ``isolation="process"`` each actor is
    a worker process whose ``CUDA_VISIBLE_DEVICES`` is set to its devices before its
    constructor runs. An actor rebuilt after a loss keeps its index; on threads, indices are
    handed out in the order the actors are built.
    """

    module: str
    index: int
    replicas: int
    num_cpus: float
    num_gpus: float
    devices: tuple[str, ...]


def replica_context() -> ReplicaContext | None:
    """The replica whose constructor or ``run`` calls this; None outside them. The
    synchronous core builds one instance per Module (index 0). On the Ray backend each
    actor is told its index by the driver (a replacement keeps the one it replaces) and Ray
    sets the actor's CUDA_VISIBLE_DEVICES itself, from which ``devices`` are taken."""
    context = _core.replica_context()
    if context is None:
        return None
    return ReplicaContext(
        str(context["module"]),
        int(context["index"]),
        int(context["replicas"]),
        float(context["num_cpus"]),
        float(context["num_gpus"]),
        tuple(str(d) for d in context["devices"]),
    )


__all__ = ["ReplicaContext", "replica_context"]
