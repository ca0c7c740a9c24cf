"""Which Ray nodes a run lost, for its report (RunResult.node_losses, the JSON report).

Ray reports a lost actor or a lost object, not the node behind it. When a call comes back
with one of those errors (or an actor dies before its constructor ran), the watch looks at
the nodes the backend's actors ran on: a node is lost when the cluster marks it dead, or
when its node manager no longer accepts connections (the cluster's own verdict comes only
after its health checks fail, 12-17 s by default, often after the run ended). A lost actor
whose node still answers (its worker process died) names no node.

Once a node is found lost, the watch also says which values went with it: a block's
ObjectRef names the actor call that made it, and the watch knows each actor's node. The
backend then fails at once the calls in flight that read such a block (or ran on an actor
there), rather than leaving them in Ray until the cluster marks the node dead and fails them
itself (12-30 s later, the whole of a loss's cost in the node-loss benchmark).

Everything here runs on the driver's thread, called by RayBackend.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterable
from typing import Any

# How long after a loss the watch keeps looking for the node behind it, and how often.
_LOOK_FOR_S = 30.0
_LOOK_EVERY_S = 0.5
# How long a node manager may take to accept a connection before its node counts as lost.
_CONNECT_TIMEOUT_S = 0.5


class NodeLossWatch:
    """The nodes an executor's actors ran on, and those of them found lost."""

    def __init__(self, ray: Any) -> None:
        self._ray = ray
        self._nodes: set[str] = set()  # every node an actor became ready on
        self._actor_nodes: dict[bytes, str] = {}  # actor id (binary) -> its node
        self._lost: set[str] = set()
        self._found: list[tuple[str, str, float, str]] = []
        # The first loss not explained yet: (wall-clock seconds, error, monotonic deadline).
        self._loss: tuple[float, str, float] | None = None
        self._next_look = 0.0

    def actor_on(self, node: str, actor: bytes = b"") -> None:
        """An actor (Ray's binary actor id, when known) became ready on `node`."""
        if node:
            self._nodes.add(node)
            if actor:
                self._actor_nodes[actor] = node

    def answers(self, node: str) -> bool:
        """Whether `node` (an id; "" for none) is alive in the cluster and its node manager
        accepts a connection."""
        if not node:
            return False
        info = next((n for n in self._ray.nodes() if n["NodeID"] == node), None)
        return info is not None and bool(info["Alive"]) and _answers(info)

    @property
    def nodes_found_lost(self) -> int:
        """How many nodes were found lost so far (it only grows)."""
        return len(self._lost)

    def lost_node_of(self, actor: bytes) -> str | None:
        """The node found lost that actor `actor` ran on, or None."""
        node = self._actor_nodes.get(actor)
        return node if node in self._lost else None

    def first_lost(self, blocks: Iterable[Any]) -> tuple[Any, str] | None:
        """The first of `blocks` (ObjectRefs) lost with a node, and the node it was made on."""
        for block in blocks:
            node = self._made_on_lost_node(block)
            if node is not None:
                return block, node
        return None

    def _made_on_lost_node(self, block: Any) -> str | None:
        """The lost node that `block` (an ObjectRef an actor call returned) was made on, when
        no node that is not lost holds a copy of it; else None."""
        made_on = self.lost_node_of(block.task_id().actor_id().binary())
        if made_on is None:
            return None
        try:
            where = self._ray.experimental.get_object_locations([block], timeout_ms=1000)
            copies = where[block]["node_ids"] if block in where else None
        except Exception:  # noqa: BLE001 - Ray cannot say: the node it was made on is gone
            copies = None
        return made_on if self._copies_lost(made_on, copies) else None

    def _copies_lost(self, made_on: str, copies_on: Iterable[str] | None) -> bool:
        """Whether Ray's copies of a block made on lost node `made_on` are all gone.
        `copies_on` is None when Ray could not say; empty for a small value that Ray keeps in
        the driver's memory, never lost with a node."""
        if copies_on is None:
            return True
        nodes = list(copies_on)
        return bool(nodes) and all(n in self._lost or n == made_on for n in nodes)

    def loss(self, error: str) -> None:
        """A call lost its actor or an input block, or an actor died before it started:
        looks for the node that went now, and for a while after."""
        if self._loss is None:
            self._loss = (time.time(), error, time.monotonic() + _LOOK_FOR_S)
        self._look()

    def take(self) -> list[tuple[str, str, float, str]]:
        """The nodes found lost since the last call: (node id, "ip:port", wall-clock seconds
        of the loss that revealed it, its error)."""
        if self._loss is not None and time.monotonic() >= self._next_look:
            self._look()
        out, self._found = self._found, []
        return out

    def _look(self) -> None:
        loss = self._loss
        if loss is None:
            return
        self._next_look = time.monotonic() + _LOOK_EVERY_S
        known = {n["NodeID"]: n for n in self._ray.nodes()}
        found = False
        for node in sorted(self._nodes - self._lost):
            info = known.get(node)
            if info is not None and info["Alive"] and _answers(info):
                continue
            self._lost.add(node)
            address = (
                f"{info['NodeManagerAddress']}:{info['NodeManagerPort']}"
                if info is not None
                else ""
            )
            self._found.append((node, address, loss[0], loss[1]))
            found = True
        if found or time.monotonic() >= loss[2]:
            self._loss = None


def _answers(node: dict[str, Any]) -> bool:
    """The node's manager accepts a connection."""
    try:
        with socket.create_connection(
            (node["NodeManagerAddress"], int(node["NodeManagerPort"])), timeout=_CONNECT_TIMEOUT_S
        ):
            return True
    except OSError:
        return False
