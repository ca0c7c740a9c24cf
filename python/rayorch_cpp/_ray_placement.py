"""Where the Ray backend places an actor that replaces one lost with its node: the pool's
actor options with that node excluded, where the user's own placement allows it."""

from __future__ import annotations

from typing import Any

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
