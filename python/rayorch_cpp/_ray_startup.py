"""Starting a pool's Ray actors: how long they may take and the error naming what they ask
for when the cluster cannot place them in time (docs/RAY.md)."""

from __future__ import annotations

import os
from typing import Any

from ._values import ExecutionError

# How long every actor of a new pool (or a replacement) has to be placed and finish its
# constructor, unless Executor(actor_startup_timeout_s=...) or RAYORCH_RAY_STARTUP_TIMEOUT_S
# says otherwise: long enough for a model download in a constructor, short enough that an
# actor the cluster cannot place is reported while the user still waits for it.
DEFAULT_ACTOR_STARTUP_TIMEOUT_S = 120.0


def startup_timeout_s(option: float | None) -> float:
    """The actor startup timeout: the option, else RAYORCH_RAY_STARTUP_TIMEOUT_S, else
    DEFAULT_ACTOR_STARTUP_TIMEOUT_S."""
    value: Any = option
    if value is None:
        value = os.environ.get("RAYORCH_RAY_STARTUP_TIMEOUT_S") or DEFAULT_ACTOR_STARTUP_TIMEOUT_S
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"actor_startup_timeout_s must be a number > 0, got {value!r}")
    return float(value)


def asked_resources(options: dict[str, Any]) -> dict[str, float]:
    """The resources one actor with these Ray actor options asks for."""
    asked = {"CPU": float(options.get("num_cpus") or 0), "GPU": float(options.get("num_gpus") or 0)}
    asked.update({k: float(v) for k, v in (options.get("resources") or {}).items()})
    return {k: v for k, v in asked.items() if v > 0}


def _shown(resources: dict[str, float]) -> str:
    """Resources without Ray's per-node and object-store entries."""
    kept = sorted((k, v) for k, v in resources.items() if not k.startswith(("node:", "object")))
    return "{" + ", ".join(f"{k}: {v:g}" for k, v in kept) + "}"


def actor_startup_error(
    waiting: dict[str, tuple[int, dict[str, float]]],
    timeout_s: float,
    cluster: dict[str, float],
    available: dict[str, float],
) -> ExecutionError:
    """The error for actors not started within `timeout_s`: per Module name, how many of
    its actors wait and what each asks for, and what the cluster has in all and free."""
    modules = "; ".join(
        f"Module<{name}>: {count} actor(s) waiting, each asking {_shown(asked)}"
        for name, (count, asked) in sorted(waiting.items())
    )
    return ExecutionError(
        f"Ray actors did not start within {timeout_s:g} s (actor_startup_timeout_s): "
        f"{modules}. The cluster has {_shown(cluster)} in all, {_shown(available)} free. Each "
        "actor asks for what its Module sets (num_cpus=1 where it sets none, less where the "
        "cluster has fewer CPUs than those Modules would take): lower num_cpus "
        "(0.5, or 0 for a UDF that waits on I/O) or replicas, add nodes, or raise "
        "actor_startup_timeout_s where constructors are slow"
    )
