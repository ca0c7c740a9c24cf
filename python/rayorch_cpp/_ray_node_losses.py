"""Which Ray nodes a run lost, for its report (RunResult.node_losses, the JSON report).

Ray reports a lost actor or a lost object, not the node behind it. When a call comes back
with one of those errors (or an actor dies before its constructor ran), the watch looks at
the nodes the backend's actors ran on: a node is lost when the cluster marks it dead, or
when its node manager no longer accepts connections (the cluster's own verdict comes only
after its health checks fail, 12-17 s by default, often after the run ended). A lost actor
whose node still answers (its worker process died) names no node.

Everything here runs on the driver's thread, called by RayBackend.
"""

from __future__ import annotations

import socket
import time
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
        self._lost: set[str] = set()
        self._found: list[tuple[str, str, float, str]] = []
        # The first loss not explained yet: (wall-clock seconds, error, monotonic deadline).
        self._loss: tuple[float, str, float] | None = None
        self._next_look = 0.0

    def actor_on(self, node: str) -> None:
        """An actor became ready on `node`."""
        if node:
            self._nodes.add(node)

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
