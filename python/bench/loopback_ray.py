"""Ray for the benchmarks of this directory: only on this machine, in a private network
namespace whose only interface is loopback, and on a new local cluster whose every node is
checked to be on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import sys
from typing import Any


def ensure_private_network(script: str) -> None:
    """Re-executes `script` (with this process's arguments) under `unshare --net --pid
    --fork --mount-proc` as root, unless this process is in a loopback-only namespace."""
    if sorted(name for _, name in socket.if_nameindex()) == ["lo"]:
        return
    if os.geteuid() != 0:
        raise SystemExit("run as root (it starts Ray in a private loopback-only namespace)")
    command = " ".join([sys.executable, *map(repr, [os.path.abspath(script), *sys.argv[1:]])])
    os.execvp(
        "unshare",
        [
            "unshare",
            "--net",
            "--pid",
            "--fork",
            "--mount-proc",
            "sh",
            "-c",
            f"ip link set lo up && {command}",
        ],
    )


def start_local_ray(num_cpus: int) -> Any:
    """Starts a new one-node Ray cluster on 127.0.0.1 (never one another process left in
    /tmp/ray) and returns the `ray` module; exits when a node is not on loopback."""
    refuse_outside_loopback_namespace()
    import ray

    ray.init(
        address="local",
        num_cpus=num_cpus,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        logging_level="ERROR",
        log_to_driver=False,
    )
    addresses = check_on_loopback(ray)
    # The log of every run shows where its cluster ran.
    print(f"Ray nodes: {len(ray.nodes())}, addresses: {', '.join(addresses)}", file=sys.stderr)
    return ray


def refuse_outside_loopback_namespace() -> None:
    """Exits unless this process is in a network namespace whose only interface is loopback
    (`unshare --net` plus `ip link set lo up`), so that Ray cannot bind an external address."""
    interfaces = sorted(name for _, name in socket.if_nameindex())
    if interfaces != ["lo"]:
        raise SystemExit(
            f"refusing to start Ray outside a loopback-only network namespace (interfaces "
            f"{interfaces}): run this as root in a private network namespace with only loopback "
            "(unshare --net sh -c 'ip link set lo up && exec ...')"
        )


def check_on_loopback(ray: Any) -> list[str]:
    """Exits when a Ray node (alive or dead) is not on 127.0.0.1; returns the nodes' addresses
    (each once)."""
    addresses = sorted({n["NodeManagerAddress"] for n in ray.nodes()})
    if addresses != ["127.0.0.1"]:
        raise SystemExit(f"a Ray node is not on loopback: {addresses}")
    return addresses


def start_local_cluster(nodes: int, cpus_per_node: int) -> tuple[Any, Any]:
    """Starts a new cluster on this machine, all on 127.0.0.1: a head without CPUs and
    `nodes` worker nodes (ray.cluster_utils.Cluster, so nodes can be removed and added);
    connects to it and returns (the cluster, the `ray` module). Exits outside a
    loopback-only namespace or when a node is not on loopback."""
    refuse_outside_loopback_namespace()
    import ray
    from ray.cluster_utils import Cluster

    node = {"node_ip_address": "127.0.0.1", "include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "num_cpus": 0})
    for _ in range(nodes):
        cluster.add_node(node_ip_address="127.0.0.1", num_cpus=cpus_per_node)
    ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
    cluster.wait_for_nodes()
    check_on_loopback(ray)
    return cluster, ray


def store_created_bytes(ray: Any) -> int:
    """Bytes created in the object stores of the live nodes of the running Ray since it
    started (each raylet's ``cumulative_created_bytes``): what went through shared memory.
    Values under Ray's inline limit (100 kB) live in their owner's memory and are not
    counted. It asks each node manager over gRPC, so it refuses a node not on 127.0.0.1.
    The peers of python/bench/ocr_peers.py import it too (a link to this file)."""
    from ray._private.internal_api import node_stats

    total = 0
    for node in ray.nodes():
        if node["Alive"]:
            if node["NodeManagerAddress"] != "127.0.0.1":
                raise SystemExit(f"a Ray node is not on 127.0.0.1: {node['NodeManagerAddress']}")
            reply = node_stats(node["NodeManagerAddress"], node["NodeManagerPort"])
            total += int(reply.store_stats.cumulative_created_bytes)
    return total
