"""The lifecycle of the Ray backend's actors (rayorch_cpp._ray_backend): starting them in
the background and reporting each start once, failing a pool that Ray cannot place in time,
replacing a hung actor, restarting a lost one in the background, and starting and retiring
the actors of a self-sizing pool (``replicas="auto"``) when the driver's sizing policy asks.

Actor slots: every pool has a fixed number of them (``actors_per_pool``). A fixed pool fills
them all when the backend is made; a self-sizing pool's slots stay empty (None) until the
driver starts them (``start``) and empty again once it retires them (``retire``).

Startup deadline (docs/RAY.md): a pool that has no ready actor gets the startup timeout to
get one, counted from the backend's creation (fixed pools) or from the first start asked
while it had none (self-sizing pools); past it, its pending actors are reported failed.
Once a pool has a ready actor, its other actors join whenever Ray places them.

Called from the driver's thread only, with the GIL.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from ._ray_contract import ObjectRef
from ._ray_errors import constructor_error, constructor_exit_error, error_text
from ._ray_node_losses import NodeLossWatch
from ._ray_placement import options_avoiding
from ._ray_start_pace import BOOT_HOLD_S, SECOND_WAVE_AFTER_S, second_wave_order
from ._ray_startup import actor_startup_error, asked_resources
from ._values import ExecutionError

# How long a replacement for a lost actor may take to start away from the lost actor's node
# before it is placed anywhere.
_ELSEWHERE_TIMEOUT_S = 30.0


class _Unplaced(Exception):
    """An actor died before its `ready` call returned (its node went away)."""


class RayActors:
    """The actor slots of every pool and their starts; RayBackend builds on it."""

    _ray: Any
    _cls: Any
    _source_ref: ObjectRef
    _compile_options: dict[str, bool]
    _explain: str
    _pools: list[dict[str, Any]]
    _options: list[dict[str, Any]]
    _startup_timeout_s: float
    _node_losses: NodeLossWatch

    def _init_actors(
        self, slots: list[int], started: list[bool], boots_at_once_: int | None = None
    ) -> None:
        """Makes `slots[p]` actor slots per pool, starting those of the pools with
        `started[p]` (the fixed ones): the first of each now, the others as the second wave
        (at most `boots_at_once_` booting at once; by default all of it)."""
        now = time.monotonic()
        # Every slot empty first: a start that raises leaves a state stop() can clear.
        self._actors: list[list[Any]] = [[None] * n for n in slots]
        self._methods: list[list[dict[int, Any]]] = [[{} for _ in range(n)] for n in slots]
        self.nodes: list[list[str]] = [[""] * n for n in slots]
        # Ray's binary id of each ready actor (how the node-loss watch knows it).
        self.actor_ids: list[list[bytes]] = [[b""] * n for n in slots]
        self._tasks_in_flight: list[list[int]] = [[0] * n for n in slots]
        # (pool, actor) per `ready` ObjectRef of an actor still starting, and the starts not
        # taken yet. How long a pool may wait for its first actor is the driver's rule
        # (startup_timeout_s, abandon_starts).
        self._starting: dict[ObjectRef, tuple[int, int]] = {}
        # Until when the `booted` ObjectRef of an actor whose process is not up yet holds its
        # place among the boots (BOOT_HOLD_S).
        self._booting: dict[ObjectRef, float] = {}
        # The `booted` ObjectRef of each `ready` one in _starting: the node its process
        # booted on, which tells a UDF constructor that ended the process from a lost node.
        self._boot_of: dict[ObjectRef, ObjectRef] = {}
        # Of those, restarts of lost actors placed away from their node, and until when.
        self._elsewhere: dict[ObjectRef, float] = {}
        # How many lost nodes restart_idle_lost has seen.
        self._lost_nodes_seen = 0
        self._started: list[tuple[int, int, str]] = []
        # actor_nodes() waits for the starts at most this long after the backend was made.
        self._startup_deadline = now + self._startup_timeout_s
        # The first actor of every fixed pool now, in pipeline order; the others in a second
        # wave (_start_second_wave), at most `boots_at_once` booting at a time, in the order
        # of second_wave_order: a row needs one actor of every Module it passes, not every
        # actor of the first Module.
        self._boots_at_once = boots_at_once_ if boots_at_once_ is not None else sum(slots)
        self._first_wave: set[tuple[int, int]] = set()
        for p, start in enumerate(started):
            if start and slots[p] > 0:
                self._first_wave.add((p, 0))
                self.start(p, 0)
        self._second_wave: list[tuple[int, int]] = second_wave_order(slots, started)
        self._second_wave_at = now + SECOND_WAVE_AFTER_S

    def _start_second_wave(self, now: bool = False) -> None:
        """Starts the second wave once every first actor is ready (or failed), or once its
        time has come, as many booting at a time as `_boots_at_once` allows; all of it
        `now`."""
        if not self._second_wave:
            return
        if now:
            room = len(self._second_wave)
        elif not self._first_wave or time.monotonic() >= self._second_wave_at:
            self._note_booted()
            room = self._boots_at_once - len(self._booting)
        else:
            return
        while room > 0 and self._second_wave:
            pool, actor = self._second_wave.pop(0)
            if self._actors[pool][actor] is None:
                self.start(pool, actor)
                room -= 1

    def _note_booted(self) -> None:
        """Forgets the boots that are over (the actor is up, or died) or held their place
        long enough."""
        if self._booting:
            up, _ = self._ray.wait(list(self._booting), num_returns=len(self._booting), timeout=0)
            for ref in up:
                del self._booting[ref]
            now = time.monotonic()
            for ref, until in list(self._booting.items()):
                if until <= now:
                    del self._booting[ref]

    def boots_to_wait_for(self) -> tuple[list[ObjectRef], float | None]:
        """While the second wave is under way: the boots whose end lets the next of it
        start, and the seconds until the first of them gives up its place; else nothing."""
        if not self._second_wave or not self._booting or self.second_wave_due_in() is not None:
            return [], None
        return list(self._booting), max(0.0, min(self._booting.values()) - time.monotonic())

    def second_wave_due_in(self) -> float | None:
        """Seconds until the second wave may start; None when it has started (what is left
        of it starts as starts finish) or is empty."""
        if not self._second_wave or not self._first_wave:
            return None
        left = self._second_wave_at - time.monotonic()
        return left if left > 0 else None

    def actors_per_pool(self) -> list[int]:
        return [len(a) for a in self._actors]

    def start(self, pool: int, actor: int) -> None:
        """Starts the empty slot `actor` of `pool` in the background; its start is reported
        through take_started."""
        if self._actors[pool][actor] is not None:
            raise ExecutionError(
                f"actor {actor} of Module<{self._pools[pool]['name']}> was started twice"
            )
        self._begin(pool, actor, self._new_actor(pool, actor))

    def _begin(self, pool: int, actor: int, fresh: Any) -> ObjectRef:
        """Puts `fresh`, a new actor, in slot `actor` of `pool` and asks for its boot and its
        build (in that order: an actor runs one caller's calls in order); returns the
        `ready` ObjectRef that reports its start."""
        self._actors[pool][actor] = fresh
        self._methods[pool][actor] = {}
        booted = fresh.booted.remote()
        self._booting[booted] = time.monotonic() + BOOT_HOLD_S
        ready = fresh.ready.remote()
        self._starting[ready] = (pool, actor)
        self._boot_of[ready] = booted
        return ready

    def retire(self, pool: int, actor: int) -> None:
        """Stops the ready, idle actor `actor` of `pool` (the driver retires no other); its
        slot is empty again."""
        retired = self._actors[pool][actor]
        if retired is None or self._tasks_in_flight[pool][actor] != 0:
            raise ExecutionError(
                f"actor {actor} of Module<{self._pools[pool]['name']}> cannot be retired: "
                "it is not a ready, idle actor"
            )
        self._actors[pool][actor] = None
        self._methods[pool][actor] = {}
        self.nodes[pool][actor] = ""
        self.actor_ids[pool][actor] = b""
        self._kill(retired)

    def _new_actor(self, pool: int, replica: int, avoid_node: str | None = None) -> Any:
        options = self._options[pool]
        if avoid_node is not None:
            options = options_avoiding(options, avoid_node, self._ray.nodes()) or options
        return self._cls.options(**options).remote(
            self._source_ref, self._compile_options, self._explain, pool, replica
        )

    def _startup_error(self, pools: list[int]) -> ExecutionError:
        """The error for actors of `pools` (one entry per actor) not started in time."""
        waiting: dict[str, tuple[int, dict[str, float]]] = {}
        for pool, count in Counter(pools).items():
            waiting[self._pools[pool]["name"]] = (count, asked_resources(self._options[pool]))
        return actor_startup_error(
            waiting,
            self._startup_timeout_s,
            self._ray.cluster_resources(),
            self._ray.available_resources(),
        )

    def _await_ready(self, actors: list[Any], pools: list[int]) -> list[tuple[str, int, str]]:
        """Each actor's (node, pid, actor id) once its constructor finished; ExecutionError
        after the startup timeout."""
        refs = [a.ready.remote() for a in actors]
        deadline = time.monotonic() + self._startup_timeout_s
        pending = list(refs)
        while pending:
            left = deadline - time.monotonic()
            _, pending = self._ray.wait(pending, num_returns=len(pending), timeout=max(left, 0))
            if pending and left <= 0:
                raise self._startup_error([pools[refs.index(ref)] for ref in pending])
        out = []
        for ref, pool in zip(refs, pools, strict=True):
            try:
                out.append(self._ray.get(ref))
            except self._ray.exceptions.RayActorError as error:
                if not error.actor_init_failed:
                    raise _Unplaced(f"{type(error).__name__}: {error}") from None
                raise ExecutionError(constructor_error(self._pools[pool]["name"], error)) from None
            except self._ray.exceptions.RayTaskError as error:  # the UDF's constructor raised
                raise ExecutionError(constructor_error(self._pools[pool]["name"], error)) from None
        return out

    @property
    def startup_timeout_s(self) -> float:
        """How long a pool may wait for its first actor; the driver then gives up the
        starts of its actors (abandon_starts)."""
        return self._startup_timeout_s

    def take_started(self) -> list[tuple[int, int, str]]:
        """The actors that started since the last call (the contract's)."""
        self._start_second_wave()
        if self._starting:
            ready, _ = self._ray.wait(
                list(self._starting), num_returns=len(self._starting), timeout=0
            )
            self._note_started(ready)
        if self._elsewhere:
            self._place_anywhere()
        self._start_second_wave()
        out, self._started = self._started, []
        return out

    def abandon_starts(self, pool: int, actors: list[int]) -> str:
        """Kills the starting `actors` of `pool`, whose pool waited past the startup timeout
        for a first actor (the driver's rule); their starts are never reported. Returns why
        they could not start: what they ask for against what the cluster has."""
        given_up = set(actors)
        self._second_wave = [(p, a) for p, a in self._second_wave if p != pool or a not in given_up]
        for ref, (p, actor) in list(self._starting.items()):
            if p == pool and actor in given_up:
                del self._starting[ref]
                self._boot_of.pop(ref, None)
                self._elsewhere.pop(ref, None)
                self._kill(self._actors[pool][actor])
        return str(self._startup_error([pool] * len(actors)))

    def await_started(self) -> None:
        """Waits until every actor has started, or the startup timeout since the backend
        was made passed; the starts stay for take_started (the driver's)."""
        self._start_second_wave(now=True)
        while self._starting and (left := self._startup_deadline - time.monotonic()) > 0:
            refs = list(self._starting)
            ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=left)
            self._note_started(ready)

    def _note_started(self, refs: list[ObjectRef]) -> None:
        """Records the starts behind `ready` ObjectRefs that are in."""
        for ref in refs:
            pool, actor = self._starting.pop(ref)
            self._elsewhere.pop(ref, None)
            self._first_wave.discard((pool, actor))
            booted = self._boot_of.pop(ref, None)
            try:
                node, _pid, ray_id = self._ray.get(ref)
            except self._ray.exceptions.RayActorError as error:
                if error.actor_init_failed:
                    self._started.append(
                        (pool, actor, constructor_error(self._pools[pool]["name"], error))
                    )
                    continue
                if self._node_losses.answers(self._node_booted(booted)):
                    # The process died in `ready`, on a node that is up: the UDF's
                    # constructor ended it. Starting it again would end the same way.
                    self._kill(self._actors[pool][actor])
                    name = self._pools[pool]["name"]
                    self._started.append((pool, actor, constructor_exit_error(name, error)))
                    continue
                # Its node went away before `ready` returned: a fresh actor takes the place.
                self._node_losses.loss(error_text(error))
                self._kill(self._actors[pool][actor])
                self._begin(pool, actor, self._new_actor(pool, actor))
                continue
            except self._ray.exceptions.RayTaskError as error:  # the UDF's constructor raised
                self._kill(self._actors[pool][actor])
                self._started.append(
                    (pool, actor, constructor_error(self._pools[pool]["name"], error))
                )
                continue
            except Exception as error:  # noqa: BLE001 - reported as the actor's start failure
                self._started.append((pool, actor, f"{type(error).__name__}: {error}"))
                continue
            self._joined(pool, actor, node, ray_id)
            self._started.append((pool, actor, ""))

    def _node_booted(self, booted: ObjectRef | None) -> str:
        """The node an actor's process booted on (its `booted` call's answer), or "" when
        that call did not answer."""
        if booted is None or not self._ray.wait([booted], timeout=0)[0]:
            return ""
        try:
            return str(self._ray.get(booted) or "")
        except Exception:  # noqa: BLE001 - the process died before it booted
            return ""

    def _forget_held(self, pool: int, actor: int) -> None:
        """Forgets the calls held at `actor` of `pool`, which is killed (RayBackend keeps
        them)."""

    def _kill(self, actor: Any) -> None:
        try:
            self._ray.kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001 - the actor may be gone with its node already
            pass

    def export_block(self, pool: int, actor: int, block: int) -> ObjectRef:
        """Has `actor` of `pool` put `block`, an output it kept, into the object store."""
        return self._actors[pool][actor].export_block.remote(block)

    def cached_blocks(self) -> list[list[int]]:
        """Per pool and actor: how many blocks it holds from earlier calls (0 for an empty
        slot of a self-sizing pool)."""
        out = []
        for pool in self._actors:
            held = self._ray.get([a.cached_blocks.remote() for a in pool if a is not None])
            out.append([0 if a is None else held.pop(0) for a in pool])
        return out

    def replace(self, pool: int, actor: int) -> None:
        """Kills `actor` of `pool` (a hung one) and puts a fresh one, fully built, in its
        place, where Ray places it."""
        self._kill(self._actors[pool][actor])
        self._forget_held(pool, actor)
        deadline = time.monotonic() + self._startup_timeout_s
        while True:
            fresh = self._new_actor(pool, actor)
            try:
                (node, _pid, ray_id) = self._await_ready([fresh], [pool])[0]
                break
            except _Unplaced as error:
                # Placed on a node that died before Ray marked it dead: try again until
                # the scheduler knows (a constructor that raises is not retried).
                self._kill(fresh)
                if time.monotonic() > deadline:
                    raise ExecutionError(
                        f"no replacement actor of Module<{self._pools[pool]['name']}> could be "
                        f"started within {self._startup_timeout_s:g} s: {error}"
                    ) from None
                time.sleep(0.5)
            except BaseException:
                self._kill(fresh)
                raise
        self._actors[pool][actor] = fresh
        self._methods[pool][actor] = {}
        self._joined(pool, actor, node, ray_id)

    def restart_lost(self, pool: int, actor: int) -> None:
        """Kills `actor` of `pool`, which Ray reported lost, and starts a fresh one in its
        slot in the background: its start comes through take_started, as any start does,
        and the driver goes on meanwhile (a replacement's start is seconds of a model load;
        a node takes several actors with it).

        The fresh actor is placed on another live node when one can host it: until the head
        marks a killed node dead (12-17 s), Ray may otherwise place it there, and it is lost
        in turn. Not started elsewhere within _ELSEWHERE_TIMEOUT_S (say the other nodes are
        full), it is placed anywhere (take_started)."""
        self._restart(pool, actor, self.nodes[pool][actor] or None)

    def _restart(self, pool: int, actor: int, avoid: str | None) -> None:
        """Kills `actor` of `pool` and starts a fresh one in its slot in the background, away
        from node `avoid` (when not None) for _ELSEWHERE_TIMEOUT_S."""
        self._kill(self._actors[pool][actor])
        self._forget_held(pool, actor)
        self.nodes[pool][actor] = ""
        self.actor_ids[pool][actor] = b""
        ready = self._begin(pool, actor, self._new_actor(pool, actor, avoid))
        if avoid is not None:
            self._elsewhere[ready] = time.monotonic() + _ELSEWHERE_TIMEOUT_S

    def restart_idle_lost(self) -> list[tuple[int, int]]:
        """Restarts (as restart_lost) every ready actor without a call that ran on a node found
        lost since the last call, and returns them as (pool, actor): a call sent there would
        only be lost, and count against its Grains' replays. An actor with calls is restarted
        when they come back lost."""
        found = self._node_losses.nodes_found_lost
        if found == self._lost_nodes_seen:
            return []
        self._lost_nodes_seen = found
        out = [
            (p, a)
            for p, ids in enumerate(self.actor_ids)
            for a, actor_id in enumerate(ids)
            if actor_id
            and self._tasks_in_flight[p][a] == 0
            and self._node_losses.lost_node_of(actor_id) is not None
        ]
        for pool, actor in out:
            self.restart_lost(pool, actor)
        return out

    def _place_anywhere(self) -> None:
        """Restarts placed away from a lost node that have not started within
        _ELSEWHERE_TIMEOUT_S start again where Ray places them."""
        now = time.monotonic()
        for ready, deadline in list(self._elsewhere.items()):
            if now < deadline:
                continue
            del self._elsewhere[ready]
            pool, actor = self._starting.pop(ready)
            self._boot_of.pop(ready, None)
            self._kill(self._actors[pool][actor])
            self._begin(pool, actor, self._new_actor(pool, actor))

    def _joined(self, pool: int, actor: int, node: str, ray_id: str) -> None:
        """Records where a ready actor runs and who it is to Ray."""
        self.nodes[pool][actor] = node
        self.actor_ids[pool][actor] = bytes.fromhex(ray_id)
        self._node_losses.actor_on(node, self.actor_ids[pool][actor])

    def _stop_actors(self) -> None:
        """Kills every actor (idempotent)."""
        for pool in self._actors:
            for actor in pool:
                if actor is not None:
                    self._kill(actor)
            pool.clear()
        self._starting.clear()
        self._booting.clear()
        self._boot_of.clear()
        self._elsewhere.clear()
        self._second_wave.clear()
        for counts in self._tasks_in_flight:
            counts.clear()
