"""The Ray actor options of each pool of the Ray backend, and where it places an actor that
replaces one lost with its node: the pool's options with that node excluded, where the
user's own placement allows it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from . import _core
from ._values import ExecutionError

# Ray actor options a Module may carry besides the ones the engine reads.
_ACTOR_OPTIONS = frozenset(_core.ray_actor_options())

# max_tasks_in_flight_per_actor where the Module does not set it. One:
# a call queued behind another hides Ray's round trip (about 0.5 ms here; no-op RPCs/s about
# 1,700 -> 2,000-2,100 with 2, python/bench/ray_backend.py) but commits its batch a whole
# call early, which costs batch fill where calls are long: the realistic compare regime
# (3 s OCR calls) took 235 OCR batches at 92.3 % fill and 137.4 s with 2, against 227 at
# 95.5 % and 134.7 s with 1 (bench compare --regime realistic --peers rayorch-ray, with and
# without --ray-tasks-in-flight 2).
_DEFAULT_MAX_TASKS_IN_FLIGHT = 1

# Every Ray node carries its id under this label (label selectors can exclude a node).
NODE_LABEL = "ray.io/node-id"


def options_avoiding(
    options: dict[str, Any], node: str, nodes: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """`options` (a pool's Ray actor options) with `node` excluded, or None where that would
    override what the user asked for (a placement group, a hard node affinity, their own node
    label) or no other live node in `nodes` (``ray.nodes()``) could host the actor."""
    out = dict(options)
    strategy = out.get("scheduling_strategy")
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    soft_affinity = isinstance(strategy, NodeAffinitySchedulingStrategy) and strategy.soft
    if strategy not in (None, "DEFAULT", "SPREAD") and not soft_affinity:
        return None
    labels = dict(out.get("label_selector") or {})
    if NODE_LABEL in labels:
        return None
    need = {
        "CPU": float(out.get("num_cpus") or 0),
        "GPU": float(out.get("num_gpus") or 0),
    }
    need.update({k: float(v) for k, v in (out.get("resources") or {}).items()})
    others = [
        n
        for n in nodes
        if n["Alive"]
        and n["NodeID"] != node
        and all(n["Resources"].get(k, 0.0) >= v for k, v in need.items() if v > 0)
    ]
    if not others:
        return None
    out.pop("scheduling_strategy", None)
    labels[NODE_LABEL] = f"!{node}"
    out["label_selector"] = labels
    return out


def actor_options(pool: dict[str, Any], module_options: dict[str, Any]) -> dict[str, Any]:
    """The Ray actor options of one pool (``pools()`` of the compiled program) whose Module
    has `module_options`: its resources, then every Ray actor option the Module sets."""
    options: dict[str, Any] = {"num_cpus": pool["cpus"], "num_gpus": pool["gpus"]}
    if pool["resources"]:
        options["resources"] = dict(pool["resources"])
    for key, value in module_options.items():
        if key in _ACTOR_OPTIONS and value is not None:
            options[key] = value
    return options


def max_tasks_in_flight_of(options: dict[str, Any]) -> int:
    """max_tasks_in_flight_per_actor of a pool with these Module options (checked when the
    pipeline was compiled): the option, else _DEFAULT_MAX_TASKS_IN_FLIGHT. The option cannot
    ask for more than one with a timeout (its calls' clocks start when they are sent, so a
    queued call would spend its wait against its timeout) or a max_concurrency (a threaded
    actor would run its queued calls at once on one UDF instance)."""
    tasks = options.get("max_tasks_in_flight_per_actor")
    return _DEFAULT_MAX_TASKS_IN_FLIGHT if tasks is None else int(tasks)


def cluster_budget(resources: Mapping[str, float]) -> dict[str, float]:
    """The self-sizing pools' default budget on Ray: the cluster's resources
    (``ray.cluster_resources()``) without its memory, object store and per-node entries."""
    skipped = ("memory", "object_store_memory")
    return {
        k: float(v)
        for k, v in resources.items()
        if k not in skipped and not k.startswith(("node:", "accelerator_type:"))
    }


def self_sizing_slots(
    name: str, options: dict[str, Any], asked: Mapping[str, float], budget: Mapping[str, float]
) -> int:
    """The actor slots of the self-sizing pool `name` on Ray (its Module `options`, each actor
    asking `asked`): its max_replicas, else as many actors as `budget` could hold were they
    all of this pool, at least its min_replicas and 1. The driver's policy keeps the actors
    it starts within the budget; a min_replicas that cannot fit is its error, naming `name`.
    A self-sizing pool's actors take one call at a time (the driver starts and retires
    actors, and counts one task slot per actor)."""
    tasks = options.get("max_tasks_in_flight_per_actor")
    if tasks is not None and int(tasks) > 1:
        raise ExecutionError(
            f"Module<{name}> has replicas='auto' and max_tasks_in_flight_per_actor={tasks}: a "
            "self-sizing pool's actors take one call at a time on Ray; drop one of the two"
        )
    most = int(options.get("max_replicas") or 0)
    if most > 0:
        return most
    fits = [int(budget.get(k, 0.0) // v) for k, v in asked.items() if v > 0]
    n = min(fits) if fits else int(budget.get("CPU", 0.0))
    return max(n, int(options.get("min_replicas") or 0), 1)


def share_default_cpus(
    pools: list[dict[str, Any]],
    module_options: list[dict[str, Any]],
    options: list[dict[str, Any]],
    cluster_cpus: float,
) -> str | None:
    """Fits the Modules that set no ``num_cpus`` into a cluster smaller than they ask for:
    when the fixed pools' actors ask for more CPUs than ``cluster_cpus`` (the cluster's, in
    all), each actor of those Modules gets an equal share of what the Modules that do set
    ``num_cpus`` leave (``options``, the pools' Ray actor options, changed in place; rounded
    down to a thousandth). Explicit ``num_cpus`` and self-sizing pools (which size
    themselves to the cluster) are never changed, and nothing is when the explicit ones leave
    no room. Returns the line that says so, or None when nothing changed."""
    fixed = [p for p, pool in enumerate(pools) if not pool["auto_replicas"]]
    defaults = [p for p in fixed if module_options[p].get("num_cpus") is None]
    explicit = [p for p in fixed if p not in defaults]

    def asked(ps: list[int]) -> float:
        return sum(int(pools[p]["replicas"]) * float(options[p]["num_cpus"]) for p in ps)

    asked_default, asked_explicit = asked(defaults), asked(explicit)
    if asked_default <= 0 or asked_default + asked_explicit <= cluster_cpus + 1e-9:
        return None
    actors = sum(int(pools[p]["replicas"]) for p in defaults)
    share = math.floor((cluster_cpus - asked_explicit) / actors * 1000) / 1000
    if share <= 0:
        return None
    for p in defaults:
        options[p]["num_cpus"] = share
    names = ", ".join(str(pools[p]["name"]) for p in defaults)
    return (
        f"rayorch: the Ray cluster has {cluster_cpus:g} CPUs; the Modules that set no num_cpus "
        f"({names}: {actors} actors) would ask for {asked_default:g}"
        + (f" beside the {asked_explicit:g} set explicitly" if explicit else "")
        + f", so each of their actors gets num_cpus={share:g}. Set num_cpus (or replicas) on a "
        "Module to choose"
    )
