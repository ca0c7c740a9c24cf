"""Talking to a Ray cluster's job server: connecting (with the cluster's token when it asks
for one), a job's status with why it is still pending, its logs, and stopping it.

A job stays PENDING while its supervisor cannot be placed, and RUNNING while its actors wait
for resources no node has; neither says so by itself. ``pending_reasons`` compares what the
job's waiting actors ask for with what the cluster's nodes have and names what is missing.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from dataclasses import dataclass
from typing import Any

from .._ray_session import send_token_to


class JobClientError(RuntimeError):
    """The job server could not be reached or refused the request; the message says why
    and what to do."""


def connect(address: str) -> Any:
    """A JobSubmissionClient of the job server at ``address`` (``http://HOST:PORT``, the
    dashboard's). A cluster from ``ray start --head`` in token mode asks for its token: for
    such a job server on this machine, when one is at hand (RAY_AUTH_TOKEN,
    RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token) and RAY_AUTH_MODE is not set, it is sent
    (_ray_session.send_token_to)."""
    if not address.startswith(("http://", "https://")):
        raise JobClientError(
            f"--address {address!r}: the job server's address is the dashboard's, "
            "http://HOST:PORT (8265 by default)"
        )
    parts = urllib.parse.urlsplit(address)
    try:
        port = parts.port or 8265  # the dashboard's default
    except ValueError:
        port = None  # Ray's client names the bad port
    send_token_to(parts.hostname or "", port)
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError as error:
        raise JobClientError(
            "submitting a job needs Ray's job client: pip install 'rayorch-cpp[jobs]' "
            "(ray[default]==2.60.0)"
        ) from error
    try:
        return JobSubmissionClient(address)
    except Exception as error:
        text = str(error)
        if type(error).__name__ == "AuthenticationError":
            raise JobClientError(
                f"the job server at {address} asks for its token and refused what this client "
                "sent (a cluster on another machine gets no token unasked): run `ray "
                "get-auth-token` on the head node and set RAY_AUTH_TOKEN to it (or copy it to "
                "~/.ray/auth_token), with RAY_AUTH_MODE=token"
            ) from error
        if "version" in text.lower():
            raise JobClientError(
                f"the job server at {address} is another Ray version: {text}"
            ) from error
        first_line = text.splitlines()[0] if text else ""
        raise JobClientError(
            f"no job server answers at {address} ({type(error).__name__}: {first_line}); "
            "start the cluster with `ray start --head` (the dashboard serves jobs) and pass "
            "its dashboard address"
        ) from error


def _state(address: str, resource: str) -> list[dict[str, Any]]:
    """Ray's state API (through the dashboard at ``address``): every node or actor."""
    from ray.util import state

    listing = state.list_nodes if resource == "nodes" else state.list_actors
    items = listing(address=address, detail=True, limit=10000, raise_on_missing_output=False)
    return [item if isinstance(item, dict) else dataclasses.asdict(item) for item in items]


def _missing(asks: dict[str, float], nodes: list[dict[str, Any]]) -> dict[str, float]:
    """What no single alive node has enough of for ``asks`` (the most any node has)."""
    alive = [n.get("resources_total", {}) for n in nodes if n.get("state") == "ALIVE"]
    missing = {}
    for name, amount in asks.items():
        if amount > 0 and not any(r.get(name, 0.0) >= amount for r in alive):
            missing[name] = max((r.get(name, 0.0) for r in alive), default=0.0)
    return missing


@dataclass(frozen=True)
class PendingActor:
    """An actor of the job that waits for resources no node has."""

    what: str  # "the job's entrypoint" or the actor's class
    asks: dict[str, float]
    missing: dict[str, float]  # resource -> the most any node has

    def describe(self) -> str:
        lacks = ", ".join(
            f"{name} {self.asks[name]:g} (the most a node has: {have:g})"
            for name, have in self.missing.items()
        )
        return f"{self.what} waits for resources no node has: {lacks}"


def pending_reasons(
    address: str, submission_id: str, driver_job_id: str | None
) -> list[PendingActor]:
    """The job's actors (its supervisor, which runs the entrypoint, and the actors its
    driver made) waiting for a resource that no alive node has enough of."""
    try:
        nodes = _state(address, "nodes")
        actors = _state(address, "actors")
    except Exception:  # the state API is a diagnosis, never a reason to fail
        return []
    out = []
    supervisor = f"_ray_internal_job_actor_{submission_id}"
    for actor in actors:
        if actor.get("state") != "PENDING_CREATION":
            continue
        if actor.get("name") == supervisor:
            what = "the job's entrypoint"
        elif driver_job_id and actor.get("job_id") == driver_job_id:
            what = f"actor {actor.get('class_name')}"
        else:
            continue
        asks = {k: float(v) for k, v in (actor.get("required_resources") or {}).items()}
        missing = _missing(asks, nodes)
        if missing:
            out.append(PendingActor(what, asks, missing))
    return out
