"""Ray case: preemption under load. Nodes that hold large pages are removed without grace,
one at every fifth of the documents (a few seconds apart), and a fresh node joins in each
one's place while a document workload runs; every document comes out as on the local executor
(lost pages are rebuilt from lineage, lost actors replaced, DESIGN 5.13).

Run only through test_ray.py (ray_cluster.py starts the cluster)."""

from __future__ import annotations

from typing import Any

import ray_udfs as u
from ray_cluster import local, on_ray

# The documents: 1-3 pages of 256 KiB each (about 440 pages, 110 MiB in all).
DOCS = list(range(1, 221))
SPOT = {
    "node_ip_address": "127.0.0.1",
    "num_cpus": 2,
    "resources": {"spot": 1},  # one page maker per spot node
    "object_store_memory": 80 * 1024 * 1024,
}
RUN = {"input_batch_size": 20, "max_active_input_batches": 2}


def test_documents_come_out_whole_while_nodes_are_preempted(cluster: Any) -> None:
    expected = local(u.large_documents(), DOCS, **RUN)
    spot = [cluster.add_node(**SPOT) for _ in range(2)]
    cluster.wait_for_nodes()
    removed: list[str] = []
    # A node goes at 20, 40, 60 and 80 % of the documents, and a fresh one joins in its place
    # (the driver waits meanwhile, as for any slow progress callback).
    preempt_at = [len(DOCS) * k // 5 for k in range(1, 5)]

    def preempt(done: int, total: int | None) -> None:
        # On the thread that called run() (Ray starts nodes from the main thread only).
        if not preempt_at or done < preempt_at[0]:
            return
        preempt_at.pop(0)
        victim = spot.pop(0)  # the oldest spot node
        cluster.remove_node(victim, allow_graceful=False)
        removed.append(victim.node_id)
        spot.append(cluster.add_node(**SPOT))

    try:
        # The page makers live on the spot nodes, one on each: every preemption takes one,
        # with the pages it made that were not read yet.
        with on_ray(u.large_documents(spot={"spot": 1})) as ex:
            result = ex.run(DOCS, progress=preempt, **RUN)
    finally:
        for node in spot:
            cluster.remove_node(node)
    assert result.outputs == expected
    assert len(removed) >= 3, removed
    assert result.values_rebuilt > 0 and result.grains_reexecuted > 0
    assert result.actors_replaced > 0
    # The report names the nodes that went, and only those.
    lost = {n.node for n in result.node_losses}
    assert lost and lost <= set(removed), (lost, removed)
