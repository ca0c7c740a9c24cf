"""The Ray backend's node-loss watch (rayorch_cpp._ray_node_losses), on a stand-in for Ray's
node table: which nodes a loss reveals, and that each is reported once."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rayorch_cpp._ray_node_losses import NodeLossWatch


class Nodes:
    """Ray's node table as ray.nodes() returns it, for nodes on loopback."""

    def __init__(self) -> None:
        self.table: list[dict[str, Any]] = []

    def add(self, node: str, port: int, alive: bool = True) -> None:
        self.table.append(
            {
                "NodeID": node,
                "Alive": alive,
                "NodeManagerAddress": "127.0.0.1",
                "NodeManagerPort": port,
            }
        )

    def nodes(self) -> list[dict[str, Any]]:
        return self.table


@pytest.fixture
def listening() -> Iterator[int]:
    """A port on loopback that accepts connections (a node manager that answers)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def closed_port() -> int:
    """A port on loopback that nothing listens on (a node manager that is gone)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_loss_names_the_nodes_that_are_dead_or_do_not_answer(listening: int) -> None:
    ray = Nodes()
    gone_port = closed_port()
    ray.add("up", listening)
    ray.add("unanswering", gone_port)  # the cluster has not noticed yet
    ray.add("dead", listening, alive=False)
    ray.add("not-ours", gone_port)  # no actor of this run was on it
    watch = NodeLossWatch(ray)
    for node in ("up", "unanswering", "dead"):
        watch.actor_on(node)
    assert watch.take() == []  # no loss reported: nothing looked at
    before = time.time()
    watch.loss("ActorDiedError: the actor died")
    found = watch.take()
    assert [(n, a, e) for n, a, _, e in found] == [
        ("dead", f"127.0.0.1:{listening}", "ActorDiedError: the actor died"),
        ("unanswering", f"127.0.0.1:{gone_port}", "ActorDiedError: the actor died"),
    ]
    assert all(before <= at <= time.time() for _, _, at, _ in found)
    # Each once: a later loss does not name them again.
    watch.loss("ObjectLostError: gone")
    assert watch.take() == []


def test_an_actor_lost_on_a_node_that_answers_names_no_node(listening: int) -> None:
    ray = Nodes()
    ray.add("up", listening)
    watch = NodeLossWatch(ray)
    watch.actor_on("up")
    watch.loss("ActorDiedError: its worker process died")
    assert watch.take() == []


def test_a_node_the_cluster_forgot_is_lost() -> None:
    watch = NodeLossWatch(Nodes())
    watch.actor_on("gone")
    watch.loss("ObjectLostError: gone")
    assert watch.take() == [
        ("gone", "", pytest.approx(time.time(), abs=5), "ObjectLostError: gone")
    ]
