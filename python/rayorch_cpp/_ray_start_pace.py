"""The order and pace of the Ray backend's actor starts (rayorch_cpp._ray_actors makes them;
docs/RAY.md, eager start): which actor of which pool is asked for next, and how many worker
processes may be booting at once. Pure functions of the plan and the machine."""

from __future__ import annotations

from typing import Any

# A fixed pool's first actor starts with the backend, the others once every Module's first
# actor is ready or this long after, whichever is first: starting every worker process at
# once shares the machine's CPUs among all of them, so the first row waited for nearly the
# last actor (docs/RAY.md, eager start); a constructor that loads a model for long holds the
# others back no longer than this.
SECOND_WAVE_AFTER_S = 1.0

# A boot holds its place among the second wave's boots (boots_at_once) until its actor is up
# or this long: one that Ray cannot place yet (the cluster is full, or no node has what it
# asks) must not hold back the other pools' actors for the whole startup timeout.
BOOT_HOLD_S = 2.0


def boots_at_once(node_cpus: list[int]) -> int:
    """How many actors of the second wave may be booting at once (their worker process
    starting, until the Worker constructor ran): half the CPUs of each node, at least one
    per node that has CPUs, at least one in all. A boot is about a second of one CPU (Python,
    Ray's import and connection, this package's import); booted all together on a few cores,
    every actor is up only when the last is, and the run, which goes through the first
    actors meanwhile, gets no CPU. Booted a few at a time, each is up in its own boot's time
    and takes work at once, and half the CPUs stay with the run. Only the boot is paced: the
    UDF's constructor (`ready`, a model load) runs as soon as its actor is up, however many
    are loading."""
    return max(1, sum(max(1, cpus // 2) for cpus in node_cpus if cpus > 0))


def node_cpus(ray: Any, cpus_here: int) -> list[int]:
    """The CPUs of every live node: its logical CPUs, and on the driver's own node no more
    than the `cpus_here` this process may run on (a local cluster may declare more logical
    CPUs than the machine has)."""
    here = ray.get_runtime_context().get_node_id()
    out = []
    for node in ray.nodes():
        if node.get("Alive"):
            cpus = int(node.get("Resources", {}).get("CPU", 0))
            out.append(min(cpus, cpus_here) if node.get("NodeID") == here else cpus)
    return out


def second_wave_order(slots: list[int], started: list[bool]) -> list[tuple[int, int]]:
    """The second wave's (pool, actor) starts, each to the fixed pool with the smallest share
    of its actors asked for so far (ties: pipeline order): the pools fill at the pace their
    replica counts ask, so the widest pool, the one the plan expects the most work of, gets
    its actors first, and every pool's second actor comes before a wide pool's last."""
    asked = [1 if start and n > 0 else 0 for n, start in zip(slots, started, strict=True)]
    out: list[tuple[int, int]] = []
    while True:
        waiting = [p for p, start in enumerate(started) if start and asked[p] < slots[p]]
        if not waiting:
            return out
        pool = min(waiting, key=lambda p: (asked[p] / slots[p], p))
        out.append((pool, asked[pool]))
        asked[pool] += 1
