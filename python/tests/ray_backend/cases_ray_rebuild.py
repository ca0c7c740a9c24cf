"""Ray cases: values lost with their node are rebuilt from lineage (DESIGN 5.13). Big blocks
made on a node that is removed once every block exists: one level, two levels, reduce
members, one call reading two lost blocks, a root output lost before delivery, and the budget
past which the readers fail.

Run only through test_ray.py (ray_cluster.py starts the cluster)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import ray_udfs as u
from ray_cluster import assert_on_loopback, assert_reports_the_loss_of, on_ray

import rayorch_cpp as ro


def _lose_big_blocks(
    cluster: Any, tmp_path: Path, infra_retries: int, shape: str = "single"
) -> tuple[list[Any], Any]:
    """Runs x -> Big (200 kB values, on a node of their own) -> WaitThenMeasure (on another
    node) and removes Big's node once every block exists and the first reader has read its
    own. Ray cannot rebuild those blocks (an actor task without retries). `shape` "chain":
    x -> Big -> Grow -> WaitThenMeasure, both producers on the node (two lost levels);
    "group": x -> BigPages, expanded, reduced -> WaitThenMeasure (lost reduce members);
    "pair": x -> Big and x -> BigToo, both on the node -> WaitThenMeasureBoth (one call reads
    two lost blocks, which Ray's errors name one at a time); "colocated": as "chain", with Big
    and Grow in one co-located pool, so Big's values never leave its actors (DESIGN 5.12)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    victim = cluster.add_node(node_ip_address="127.0.0.1", num_cpus=2)
    cluster.wait_for_nodes()
    assert_on_loopback()  # the node just added too: only loopback, every node on 127.0.0.1
    survivor, doomed, markers = (
        cluster.worker_nodes_started[0].node_id,
        victim.node_id,
        str(tmp_path),
    )
    rows = list(range(6))
    on_victim = NodeAffinitySchedulingStrategy(doomed, soft=True)

    def forward(x: ro.Port) -> Any:
        # One call at a time (the default): Ray fetches a queued call's argument before the
        # call runs, which would let more rows read their block before the node goes.
        measure = ro.Module(
            u.WaitThenMeasure,
            num_cpus=0.5,
            scheduling_strategy=NodeAffinitySchedulingStrategy(survivor, soft=False),
            max_tasks_in_flight_per_actor=1,
            infra_retries=infra_retries,
        ).pre_init(markers)
        if shape == "pair":
            both = ro.Module(
                u.WaitThenMeasureBoth,
                num_cpus=0.5,
                scheduling_strategy=NodeAffinitySchedulingStrategy(survivor, soft=False),
                infra_retries=infra_retries,
            ).pre_init(markers)
            big_too = ro.Module(u.BigToo, num_cpus=0.5, scheduling_strategy=on_victim)
            big = ro.Module(u.Big, num_cpus=0.5, scheduling_strategy=on_victim)
            return both(big.pre_init(markers)(x), big_too.pre_init(markers)(x))
        if shape == "group":
            pages = ro.Module(u.BigPages, num_cpus=0.5, scheduling_strategy=on_victim)
            return measure(ro.F.reduce(ro.F.expand(pages.pre_init(markers)(x))))
        together = {"colocate": "made"} if shape == "colocated" else {}
        big = ro.Module(u.Big, num_cpus=0.5, scheduling_strategy=on_victim, **together)
        big.pre_init(markers)
        if shape in ("chain", "colocated"):
            grow = ro.Module(u.Grow, num_cpus=0.5, scheduling_strategy=on_victim, **together)
            return measure(grow.pre_init(markers)(big(x)))
        return measure(big(x))

    produced = {
        "single": ["big-*"],
        "chain": ["grow-*"],
        "colocated": ["grow-*"],
        "group": ["pages-*"],
    }.get(shape, ["big-*", "bigtoo-*"])

    def remove_when_produced() -> None:
        # Every block exists and the first reader has read its own: then the node goes.
        while (
            any(len(list(tmp_path.glob(p))) < len(rows) for p in produced)
            or not (tmp_path / "first-done").exists()
        ):
            time.sleep(0.05)
        cluster.remove_node(victim, allow_graceful=False)
        (tmp_path / "go").touch()

    worker = threading.Thread(target=remove_when_produced)
    with on_ray(forward) as ex:
        assert set(ex.actor_nodes()[0]) == {victim.node_id}
        worker.start()
        result = ex.run(rows, progress=False)
        worker.join()
    assert_reports_the_loss_of(result, victim)
    return result.outputs, result


def test_blocks_lost_with_their_node_are_rebuilt_from_lineage(cluster: Any, tmp_path: Path) -> None:
    """The rows whose blocks went with the node are re-materialised (DESIGN 5.13): Big runs
    again on a live node, the readers wait for it, and every output is PRESENT and what the
    run without a loss gives."""
    out, result = _lose_big_blocks(cluster, tmp_path, infra_retries=1)
    assert out == [200_000 + len(str(i)) + 1 for i in range(6)], out
    assert result.values_rebuilt >= 1 and result.grains_reexecuted >= 1
    assert result.rebuild_s > 0


def test_two_lost_levels_are_rebuilt_recursively(cluster: Any, tmp_path: Path) -> None:
    """Grow's blocks and the Big blocks they were made from went with the node: Grow runs
    again, which needs Big's values, so Big runs again first."""
    out, result = _lose_big_blocks(cluster, tmp_path, infra_retries=1, shape="chain")
    assert out == [200_000 + len(str(i)) + 2 for i in range(6)], out
    assert result.grains_reexecuted >= 2


def test_a_node_lost_under_co_located_actors_loses_nothing_healthy(
    cluster: Any, tmp_path: Path
) -> None:
    """Big and Grow share co-located actors on the node, Big's values kept in them and never
    in the object store: the node takes the actors, the values they kept and Grow's blocks.
    Grow runs again on a live node, finds Big's values gone with their actor, so Big runs
    again first; every output is what the run without a loss gives."""
    out, result = _lose_big_blocks(cluster, tmp_path, infra_retries=1, shape="colocated")
    assert out == [200_000 + len(str(i)) + 2 for i in range(6)], out
    assert result.values_rebuilt >= 2 and result.grains_reexecuted >= 2


def test_lost_reduce_members_are_rebuilt(cluster: Any, tmp_path: Path) -> None:
    """A group's member blocks went with the node: the pages are rebuilt and the groups
    composed again from them."""
    out, result = _lose_big_blocks(cluster, tmp_path, infra_retries=1, shape="group")
    assert out == [2 * (200_000 + len(f"{i}/0:")) for i in range(6)], out
    assert result.values_rebuilt >= 2


def test_a_call_reading_two_lost_blocks_is_charged_one_loss(cluster: Any, tmp_path: Path) -> None:
    """Each row's call reads a Big block and a BigToo block, both gone with the node; Ray's
    error names one of them, so the call learns of the other only when it runs again. That is
    one loss: with a budget of one wait, every output is PRESENT (DESIGN 5.13, "Budget")."""
    out, result = _lose_big_blocks(cluster, tmp_path, infra_retries=1, shape="pair")
    assert out == [2 * (200_000 + len(f"{i}:")) for i in range(6)], out
    assert result.values_rebuilt >= 2 and result.grains_reexecuted >= 2


def test_a_root_output_lost_before_delivery_is_rebuilt_and_delivered(
    cluster: Any, tmp_path: Path
) -> None:
    """Big's values are outputs nothing reads; they live on a node that goes before the
    roots finish (the other output waits for it): the driver's fetch finds them lost, Big runs
    again on a live node, and every root is delivered once with its values."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    victim = cluster.add_node(node_ip_address="127.0.0.1", num_cpus=2)
    cluster.wait_for_nodes()
    survivor = cluster.worker_nodes_started[0].node_id
    rows, markers = list(range(6)), str(tmp_path)
    big = ro.Module(
        u.Big,
        num_cpus=0.5,
        scheduling_strategy=NodeAffinitySchedulingStrategy(victim.node_id, soft=True),
    ).pre_init(markers)
    hold = ro.Module(
        u.WaitForGo,
        num_cpus=0.5,
        scheduling_strategy=NodeAffinitySchedulingStrategy(survivor, soft=False),
    ).pre_init(markers)

    def remove_when_produced() -> None:
        while len(list(tmp_path.glob("big-*"))) < len(rows):
            time.sleep(0.05)
        cluster.remove_node(victim, allow_graceful=False)
        (tmp_path / "go").touch()

    delivered: list[tuple[int, Any]] = []
    worker = threading.Thread(target=remove_when_produced)
    with on_ray(lambda x: (big(x), hold(x))) as ex:
        assert set(ex.actor_nodes()[0]) == {victim.node_id}
        worker.start()
        result = ex.run(rows, progress=False, on_row=lambda row, out: delivered.append((row, out)))
        worker.join()
    # Each root once, with the values of the run without a loss.
    assert sorted(delivered) == [(x, (f"{x}:" + "x" * 200_000, x)) for x in rows]
    assert result.values_rebuilt >= 1 and result.grains_reexecuted >= 1
    assert_reports_the_loss_of(result, victim)


def test_past_the_budget_a_lost_block_fails_its_readers(cluster: Any, tmp_path: Path) -> None:
    """With no replay left (infra_retries=0), a reader of a lost block is FAILED with a cause
    naming the loss, and the run goes on."""
    out, _ = _lose_big_blocks(cluster, tmp_path, infra_retries=0)
    lost = [o for o in out if isinstance(o, ro.OutputIssue)]
    assert out[0] == 200_002  # read before the node went away
    # The readers that found the loss fail; rows still waiting in the queue read the values
    # rebuilt meanwhile.
    assert lost, out
    for issue in lost:
        assert issue.outcome is ro.ItemOutcome.FAILED
        assert issue.cause.startswith("rayorch::BlockLost: ")
        assert "Object" in issue.cause  # Ray's ObjectLostError family, by name
    assert all(o == 200_000 + len(str(i)) + 1 for i, o in enumerate(out) if isinstance(o, int))
