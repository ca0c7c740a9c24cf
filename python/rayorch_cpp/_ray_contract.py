"""The contract between the Ray backend's C++ pools and its Python side.

The C++ pools (python/src/ray_pools.h) drive a Python backend object through the methods of
:class:`RayBackendProtocol`, and nothing else; ``_ray_backend.RayBackend`` implements it on
Ray, and the tests implement it without Ray. The value types that cross are C++ types bound
into ``_core`` (python/src/ray_contract.h) and used here as they are: :class:`CallStatus`,
:class:`CallReport` and :class:`FinishedCall`.

Names, one per idea on both sides:

pool
    The actors of one Module, by index in plan order (``_core.Program.pools()``).
actor
    One Ray actor of a pool, by index within the pool (``0 .. actors_per_pool()[pool] - 1``).
    A replaced actor keeps its index.
max_tasks_in_flight_per_actor
    The Module option: how many calls the driver keeps outstanding at each actor of the
    pool, one running and the others queued behind it in Ray. 1 unless the Module says
    otherwise.
task slot
    One of an actor's ``max_tasks_in_flight_per_actor`` places for an outstanding call. The
    C++ driver's worker ``(pool, slot)`` is a task slot (``slot % actors`` is its actor);
    Python only ever sees actors.
tasks in flight
    The calls outstanding at one actor: at most ``max_tasks_in_flight_per_actor``.
call (task)
    One RPC: one invocation run on one actor. Its task bytes (python/src/ray_wire.h) and
    the ObjectRefs of the input blocks the actor does not hold yet go in; a CallReport and
    one object per output block come out.
token
    The number the driver gives a call at submission; its FinishedCall carries it back.
block
    One column of values in Ray's object store, a list; the driver holds its ObjectRef.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeAlias, runtime_checkable

from . import _core

CallStatus = _core.CallStatus
CallReport = _core.CallReport
FinishedCall = _core.FinishedCall

#: A Ray ObjectRef (any object for a backend without Ray).
ObjectRef: TypeAlias = Any


@runtime_checkable
class RayBackendProtocol(Protocol):
    """What the C++ pools call on the Python backend, from the driver's thread with the GIL.

    The backend may return before its actors' constructors finished (eager start): it
    reports each actor's start once through :meth:`take_started`, and the driver sends calls
    only to actors reported ready. The pools own nothing but this object.
    """

    def actors_per_pool(self) -> list[int]:
        """Per pool (plan order): how many actor slots it has. Fixed for the backend's life.
        A fixed pool starts an actor in each when the backend is made; a self-sizing pool
        (``replicas="auto"``) starts none: the driver starts and retires its actors
        (:meth:`start`, :meth:`retire`), one call at a time each."""
        ...

    def start(self, pool: int, actor: int) -> None:
        """Starts an actor in the empty slot ``actor`` of the self-sizing pool ``pool``, in
        the background: its start comes through :meth:`take_started`."""
        ...

    def retire(self, pool: int, actor: int) -> None:
        """Stops the ready actor ``actor`` of the self-sizing pool ``pool``, which has no
        call (the driver retires no other); its slot is empty again."""
        ...

    def take_started(self) -> list[tuple[int, int, str]]:
        """The actors whose constructors finished since the last call, each once, as
        ``(pool, actor, error)``: ``error`` is empty for an actor that is ready, else why it
        cannot start (it stays out of its pool). :meth:`wait` returns early when one did."""
        ...

    @property
    def startup_timeout_s(self) -> float:
        """How long a pool may wait for its first actor (seconds): past it, the driver gives
        up the starts of the pool's actors (:meth:`abandon_starts`) and fails them."""
        ...

    def abandon_starts(self, pool: int, actors: list[int]) -> str:
        """Stops the starts of ``actors`` of ``pool``, which the driver gave up; their starts
        are never reported by :meth:`take_started`. Returns why they could not start."""
        ...

    def take_node_losses(self) -> list[tuple[str, str, float, str]]:
        """The nodes found lost since the last call, each once, in the order they were:
        ``(node id, "ip:port", wall-clock seconds when the loss was detected, the error that
        revealed it)``. A backend whose workers cannot lose a node returns ``[]``."""
        ...

    def max_tasks_in_flight_per_actor(self) -> list[int]:
        """Per pool (plan order): the calls the driver may keep outstanding at each actor."""
        ...

    def put(self, values: list[Any]) -> ObjectRef:
        """Puts one block (a source slice) into the object store."""
        ...

    def get(self, refs: list[ObjectRef]) -> list[list[Any]]:
        """The values of the blocks behind ``refs``, in order, in one round trip."""
        ...

    def export_block(self, pool: int, actor: int, block: int) -> ObjectRef:
        """Has ``actor`` of ``pool`` put ``block``, an output it kept (DESIGN 5.12), into the
        object store, behind the calls sent to it before; returns its ObjectRef, which fails
        as a lost object when the actor is gone."""
        ...

    def submit(
        self,
        pool: int,
        actor: int,
        token: int,
        output_blocks: int,
        task: bytes,
        blocks: tuple[ObjectRef, ...],
    ) -> list[ObjectRef]:
        """Sends one call to ``actor`` of ``pool``: ``task`` and the ``blocks`` it carries.
        Returns the ObjectRefs of its ``output_blocks`` output blocks, in order; its
        CallReport comes back through :meth:`wait` under ``token``."""
        ...

    def wait(self, timeout_s: float) -> list[FinishedCall]:
        """The calls whose reports are in, waiting up to ``timeout_s`` for the first (or for
        an actor's start, see :meth:`take_started`). A call
        Ray failed gets a CallReport with one of Ray's statuses (``actor_lost``,
        ``block_lost``, ``ray_error``) and the error as ``"Type: message"``. A call may be
        reported before Ray ended it (its input went with a node found lost) with
        ``actor_held``: its actor takes no other call until :meth:`take_resumed` names it.
        Returns early, maybe with no call, when a held call ended."""
        ...

    def take_resumed(self) -> list[tuple[int, int]]:
        """The actors that calls reported with ``actor_held`` held and that no such call
        holds any more (Ray ended them all), since the last call, each once, as ``(pool,
        actor)``. The backend is the one record of held calls: an actor it kills (replace,
        restart) forgets its held calls, and no resume of them follows."""
        ...

    def replace(self, pool: int, actor: int) -> None:
        """Kills ``actor`` of ``pool`` (a hung one) and puts a fresh one, fully built, in its
        place. Raises when no fresh actor can be started."""
        ...

    def restart_lost(self, pool: int, actor: int) -> None:
        """Kills ``actor`` of ``pool``, which Ray reported lost, and starts a fresh one in its
        slot in the background, on another node if one can host it: its start (ready, or why
        it cannot start) comes through :meth:`take_started`, and :meth:`wait` returns early
        when it did."""
        ...

    def restart_held(self, pool: int, actor: int) -> None:
        """Kills ``actor`` of ``pool``, which calls reported with ``actor_held`` still hold,
        and starts a fresh one in its slot in the background, as :meth:`restart_lost` does
        but wherever Ray places it. No second report of the held calls comes after it."""
        ...

    def restart_idle_lost(self) -> list[tuple[int, int]]:
        """Restarts, as :meth:`restart_lost`, every ready actor without a call that ran on a
        node found lost since the last call, and returns them as ``(pool, actor)``."""
        ...

    def stop(self) -> None:
        """Kills every actor; idempotent."""
        ...


__all__ = [
    "CallReport",
    "CallStatus",
    "FinishedCall",
    "ObjectRef",
    "RayBackendProtocol",
]
