"""The Ray backend's node-loss watch (rayorch_cpp._ray_node_losses), on a stand-in for Ray's
node table: which nodes a loss reveals, and that each is reported once."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from types import SimpleNamespace
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


class Block:
    """An ObjectRef as the watch reads it: the id of the actor whose call made it."""

    def __init__(self, actor: bytes) -> None:
        self._actor = actor

    def task_id(self) -> Any:
        actor = SimpleNamespace(binary=lambda: self._actor)
        return SimpleNamespace(actor_id=lambda: actor)


class Located(Nodes):
    """Nodes, and where Ray says each block's copies are (ray.experimental)."""

    def __init__(self) -> None:
        super().__init__()
        self.copies: dict[Block, list[str]] = {}
        self.experimental = SimpleNamespace(get_object_locations=self._locations)

    def _locations(self, blocks: list[Block], timeout_ms: int) -> dict[Block, dict[str, Any]]:
        assert timeout_ms > 0  # never waits without bound on a cluster that lost a node
        return {b: {"node_ids": self.copies[b]} for b in blocks if b in self.copies}


def test_a_block_made_on_a_lost_node_is_lost_unless_a_live_node_holds_a_copy(
    listening: int,
) -> None:
    ray = Located()
    ray.add("up", listening)
    ray.add("gone", closed_port())
    watch = NodeLossWatch(ray)
    watch.actor_on("up", b"A-up")
    watch.actor_on("gone", b"A-gone")
    only_there, copied, small, unknown, made_up = (
        Block(b"A-gone"),
        Block(b"A-gone"),
        Block(b"A-gone"),
        Block(b"A-gone"),
        Block(b"A-up"),
    )
    ray.copies = {only_there: ["gone"], copied: ["gone", "up"], small: [], made_up: ["up"]}
    blocks = [made_up, copied, small, only_there, unknown]
    assert watch.first_lost(blocks) is None  # no node found lost yet
    watch.loss("ActorUnavailableError: the actor is unavailable")
    assert watch.nodes_found_lost == 1
    assert watch.lost_node_of(b"A-gone") == "gone" and watch.lost_node_of(b"A-up") is None
    # A copy on a live node is read from there; a small value lives in the driver's memory;
    # where Ray cannot say, the node the block was made on decides.
    assert watch.first_lost(blocks) == (only_there, "gone")
    assert watch.first_lost([made_up, copied, small, unknown]) == (unknown, "gone")
    assert watch.first_lost([Block(b"")]) is None  # put by the driver: on no actor's node
