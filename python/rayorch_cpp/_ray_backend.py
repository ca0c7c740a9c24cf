"""The Ray side of the Ray backend (python/src/ray_pools.h drives it from C++).

Each Module becomes a pool of persistent Ray actors (``_ray_worker.Worker``) built with the Module's
``num_cpus``, ``num_gpus``, ``resources``, ``runtime_env`` and other Ray actor options. An
actor compiles the same pipeline again and runs one pool's UDF through the engine's worker
boundary (``_core.RayWorker``). One call is one actor method call: its task bytes and the
ObjectRefs of the blocks the actor does not hold yet go in; the CallReport and one object
per output block come out (``num_returns``), and only the CallReport is fetched by the
driver. RayBackend implements the contract of _ray_contract (names included).

Eager start (docs/RAY.md): the constructor returns at once; each actor's start is reported
through ``take_started`` when its ``ready`` call returns. The startup timeout bounds only the
first actor of each pool; the others may stay pending and join when Ray places them.

Everything here is called by the driver's thread, with the GIL, from C++: keep it small.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from ._compile import CompiledProgram
from ._ray_contract import CallReport, CallStatus, FinishedCall, ObjectRef, RayBackendProtocol
from ._ray_errors import call_error_report, constructor_error, error_text
from ._ray_node_losses import NodeLossWatch
from ._ray_placement import actor_options, max_tasks_in_flight_of, options_avoiding
from ._ray_session import connect, import_ray
from ._ray_startup import actor_startup_error, asked_resources, startup_timeout_s
from ._ray_worker import Worker
from ._values import ExecutionError

# How long a replacement for a lost actor may take to start away from the lost actor's node
# before it is placed anywhere.
_ELSEWHERE_TIMEOUT_S = 30.0


class _Unplaced(Exception):
    """An actor died before its constructor ran (its node went away)."""


class _NotReady(Exception):
    """An actor did not finish its constructor within the time given."""


class RayBackend(RayBackendProtocol):
    """The actor pools of one compiled program on a Ray cluster."""

    def __init__(
        self,
        program: CompiledProgram,
        source: bytes,
        address: str | None = None,
        ray_init_kwargs: dict[str, Any] | None = None,
        actor_startup_timeout_s: float | None = None,
    ) -> None:
        self._startup_timeout_s = startup_timeout_s(actor_startup_timeout_s)
        connect(address, dict(ray_init_kwargs or {}))
        ray = import_ray()
        self._ray = ray
        self._wait = ray.wait
        self._get = ray.get
        self._cls = ray.remote(max_restarts=0, max_task_retries=0)(Worker)
        self._explain = program.explain_text()
        self._optimize = program.optimize
        self._source_ref = ray.put(source)
        self._pools: list[dict[str, Any]] = list(program.native.pools())
        self._options: list[dict[str, Any]] = []
        self._max_tasks_in_flight: list[int] = []
        for pool, module_options in zip(self._pools, program.pool_options(), strict=True):
            self._options.append(actor_options(pool, module_options))
            self._max_tasks_in_flight.append(max_tasks_in_flight_of(module_options))
        self._actors: list[list[Any]] = [[] for _ in self._pools]
        self._methods: list[list[dict[int, Any]]] = [[] for _ in self._pools]
        # Per outstanding call's report ObjectRef: (token, pool, actor, the blocks it sent).
        self._pending: dict[ObjectRef, tuple[int, int, int, tuple[ObjectRef, ...]]] = {}
        # Calls sent after a node was found lost, not yet checked against it; and how many
        # nodes were found lost when every call in flight was last checked.
        self._unchecked: list[ObjectRef] = []
        self._losses_checked = 0
        # Calls failed early whose actors Ray still holds: report ObjectRef -> (token, pool,
        # actor); each is reported again under its token when Ray ends it.
        self._held: dict[ObjectRef, tuple[int, int, int]] = {}
        self.nodes: list[list[str]] = [[] for _ in self._pools]
        self._node_losses = NodeLossWatch(ray)
        # Where the driver's time goes (seconds and calls), for the benchmark.
        self.stats: dict[str, float] = {
            "submit_s": 0.0,
            "submits": 0,
            "wait_s": 0.0,
            "waits": 0,
            "blocks_sent": 0,  # input blocks that travelled with a call (not held already)
        }
        self._clock = time.perf_counter
        # Tasks in flight per actor, and per pool the most ever in flight at one actor.
        self._tasks_in_flight: list[list[int]] = [[] for _ in self._pools]
        self.peak_tasks_in_flight: list[int] = [0 for _ in self._pools]
        # Eager start: (pool, actor) per `ready` ObjectRef of an actor still starting.
        self._starting: dict[ObjectRef, tuple[int, int]] = {}
        self._started: list[tuple[int, int, str]] = []
        self._ready_actors: list[int] = [0 for _ in self._pools]
        self._startup_deadline = time.monotonic() + self._startup_timeout_s
        try:
            for p, pool in enumerate(self._pools):
                for replica in range(int(pool["replicas"])):
                    actor = self._new_actor(p, replica)
                    self._actors[p].append(actor)
                    self._tasks_in_flight[p].append(0)
                    self._methods[p].append({})
                    self.nodes[p].append("")
                    self._starting[actor.ready.remote()] = (p, replica)
        except BaseException:
            self.stop()
            raise

    # -- actors --------------------------------------------------------------------------

    def _new_actor(self, pool: int, replica: int, avoid_node: str | None = None) -> Any:
        options = self._options[pool]
        if avoid_node is not None:
            options = options_avoiding(options, avoid_node, self._ray.nodes()) or options
        return self._cls.options(**options).remote(
            self._source_ref, self._optimize, self._explain, pool, replica
        )

    def _await_ready(
        self, actors: list[Any], pools: list[int], timeout: float | None = None
    ) -> list[tuple[str, int]]:
        """Each actor's (node, pid) once its constructor finished. Raises _NotReady when
        `timeout` is given and passes first, ExecutionError after the startup timeout."""
        refs = [a.ready.remote() for a in actors]
        deadline = time.monotonic() + (self._startup_timeout_s if timeout is None else timeout)
        pending = list(refs)
        while pending:
            left = deadline - time.monotonic()
            _, pending = self._wait(pending, num_returns=len(pending), timeout=max(left, 0))
            if pending and left <= 0 and timeout is not None:
                raise _NotReady()
            if pending and left <= 0:
                waiting: dict[str, tuple[int, dict[str, float]]] = {}
                for ref in pending:
                    pool = pools[refs.index(ref)]
                    count, _ = waiting.get(self._pools[pool]["name"], (0, {}))
                    waiting[self._pools[pool]["name"]] = (
                        count + 1,
                        asked_resources(self._options[pool]),
                    )
                raise actor_startup_error(
                    waiting,
                    self._startup_timeout_s,
                    self._ray.cluster_resources(),
                    self._ray.available_resources(),
                )
        out = []
        for ref, pool in zip(refs, pools, strict=True):
            try:
                out.append(self._get(ref))
            except self._ray.exceptions.RayActorError as error:
                if not error.actor_init_failed:
                    raise _Unplaced(f"{type(error).__name__}: {error}") from None
                raise ExecutionError(constructor_error(self._pools[pool]["name"], error)) from None
        return out

    def take_started(self) -> list[tuple[int, int, str]]:
        """The actors that started since the last call (the contract's); past the startup
        timeout, a pool without a ready actor gets its pending actors back failed, killed."""
        if self._starting:
            ready, _ = self._wait(list(self._starting), num_returns=len(self._starting), timeout=0)
            self._note_started(ready)
        if self._starting and time.monotonic() >= self._startup_deadline:
            self._fail_unplaced_pools()
        out, self._started = self._started, []
        return out

    def await_started(self) -> None:
        """Waits until every actor has started, or the startup timeout passed; the starts
        stay for take_started (the driver's)."""
        while self._starting and (left := self._startup_deadline - time.monotonic()) > 0:
            refs = list(self._starting)
            ready, _ = self._wait(refs, num_returns=len(refs), timeout=left)
            self._note_started(ready)

    def _note_started(self, refs: list[ObjectRef]) -> None:
        """Records the starts behind `ready` ObjectRefs that are in."""
        for ref in refs:
            pool, actor = self._starting.pop(ref)
            try:
                node, _pid = self._get(ref)
            except self._ray.exceptions.RayActorError as error:
                if error.actor_init_failed:
                    self._started.append(
                        (pool, actor, constructor_error(self._pools[pool]["name"], error))
                    )
                    continue
                # Its node went away before the constructor ran: a fresh actor takes the place.
                self._node_losses.loss(error_text(error))
                self._kill(self._actors[pool][actor])
                fresh = self._new_actor(pool, actor)
                self._actors[pool][actor] = fresh
                self._starting[fresh.ready.remote()] = (pool, actor)
                continue
            except Exception as error:  # noqa: BLE001 - reported as the actor's start failure
                self._started.append((pool, actor, f"{type(error).__name__}: {error}"))
                continue
            self.nodes[pool][actor] = node
            self._node_losses.actor_on(node, _actor_id(self._actors[pool][actor]))
            self._ready_actors[pool] += 1
            self._started.append((pool, actor, ""))

    def _fail_unplaced_pools(self) -> None:
        """Past the startup timeout: every pool that has no ready actor fails its pending
        ones (they are killed), with the error naming what they ask for."""
        waiting = Counter(pool for pool, _ in self._starting.values())
        for ref, (pool, actor) in list(self._starting.items()):
            if self._ready_actors[pool] > 0:
                continue  # it joins whenever Ray places it
            error = actor_startup_error(
                {self._pools[pool]["name"]: (waiting[pool], asked_resources(self._options[pool]))},
                self._startup_timeout_s,
                self._ray.cluster_resources(),
                self._ray.available_resources(),
            )
            del self._starting[ref]
            self._kill(self._actors[pool][actor])
            self._started.append((pool, actor, str(error)))

    def _kill(self, actor: Any) -> None:
        try:
            self._ray.kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001 - the actor may be gone with its node already
            pass

    def cached_blocks(self) -> list[list[int]]:
        """Per pool and actor: how many blocks it holds from earlier calls."""
        return [self._get([a.cached_blocks.remote() for a in pool]) for pool in self._actors]

    def actors_per_pool(self) -> list[int]:
        return [len(a) for a in self._actors]

    def max_tasks_in_flight_per_actor(self) -> list[int]:
        return list(self._max_tasks_in_flight)

    def replace(self, pool: int, actor: int, lost: bool = False) -> None:
        """Kills `actor` of `pool` and puts a fresh one, fully built, in its place.

        After a loss (`lost`), the fresh actor is placed on another live node when one can
        host it: until the head marks a killed node dead (12-17 s), Ray may otherwise place
        the replacement there, and it is lost in turn. When it cannot start elsewhere within
        _ELSEWHERE_TIMEOUT_S (say the other nodes are full), it is placed as usual.
        """
        avoid = self.nodes[pool][actor] if lost else None
        self._kill(self._actors[pool][actor])
        deadline = time.monotonic() + self._startup_timeout_s
        while True:
            fresh = self._new_actor(pool, actor, avoid)
            try:
                timeout = _ELSEWHERE_TIMEOUT_S if avoid is not None else None
                (node, _pid) = self._await_ready([fresh], [pool], timeout)[0]
                break
            except _NotReady:
                self._kill(fresh)  # not placed elsewhere in time: anywhere, then
                avoid = None
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
        self.nodes[pool][actor] = node
        self._node_losses.actor_on(node, _actor_id(fresh))

    def take_node_losses(self) -> list[tuple[str, str, float, str]]:
        """The nodes found lost since the last call (the contract's)."""
        return self._node_losses.take()

    def stop(self) -> None:
        """Kills every actor (idempotent)."""
        for pool in self._actors:
            for actor in pool:
                self._kill(actor)
            pool.clear()
        self._pending.clear()
        self._held.clear()
        self._starting.clear()
        for counts in self._tasks_in_flight:
            counts.clear()

    # -- values --------------------------------------------------------------------------

    def put(self, values: list[Any]) -> ObjectRef:
        return self._ray.put(values)

    def get(self, refs: list[ObjectRef]) -> list[list[Any]]:
        if self._node_losses.nodes_found_lost:
            for ref in refs:
                if self._node_losses.first_lost([ref]) is not None:
                    raise self._ray.exceptions.ObjectLostError(ref.hex(), None, "")
        try:
            values: list[list[Any]] = self._get(refs)
        except self._ray.exceptions.ObjectLostError as error:
            # The driver rebuilds it (DESIGN 5.13); the watch looks for the node that went.
            self._node_losses.loss(error_text(error))
            raise
        return values

    # -- calls ---------------------------------------------------------------------------

    def submit(
        self,
        pool: int,
        actor: int,
        token: int,
        output_blocks: int,
        task: bytes,
        blocks: tuple[ObjectRef, ...],
    ) -> list[ObjectRef]:
        start = self._clock()
        returns = 1 + output_blocks  # the CallReport first
        methods = self._methods[pool][actor]
        method = methods.get(returns)
        if method is None:
            method = self._actors[pool][actor].run.options(num_returns=returns)
            methods[returns] = method
        refs = method.remote(task, *blocks)
        self._pending[refs[0]] = (token, pool, actor, blocks)
        if self._node_losses.nodes_found_lost:
            self._unchecked.append(refs[0])
        in_flight = self._tasks_in_flight[pool]
        in_flight[actor] += 1
        if in_flight[actor] > self.peak_tasks_in_flight[pool]:
            self.peak_tasks_in_flight[pool] = in_flight[actor]
        stats = self.stats
        stats["submit_s"] += self._clock() - start
        stats["submits"] += 1
        stats["blocks_sent"] += len(blocks)
        return list(refs[1:])

    def wait(self, timeout_s: float) -> list[FinishedCall]:
        pending = list(self._pending)
        if not pending and not self._starting and not self._held:
            return []
        start = self._clock()
        self.stats["waits"] += 1
        try:
            out = self._collect(pending + list(self._starting) + list(self._held), timeout_s)
            if self._node_losses.nodes_found_lost > self._losses_checked:
                self._losses_checked = self._node_losses.nodes_found_lost
                self._unchecked = list(self._pending)
            if self._unchecked:
                out += self._cut_off(self._unchecked)
                self._unchecked = []
            return out
        finally:
            self.stats["wait_s"] += self._clock() - start

    def _collect(self, pending: list[ObjectRef], timeout: float) -> list[FinishedCall]:
        # Everything that is ready in one call; block for the first only when nothing is.
        # An actor's start counts (take_started reports it); a call's report is returned.
        ready, _ = self._wait(pending, num_returns=len(pending), timeout=0)
        if not ready and timeout > 0:
            ready, _ = self._wait(pending, num_returns=1, timeout=timeout)
        self._note_started([ref for ref in ready if ref in self._starting])
        out: list[FinishedCall] = []
        for ref in ready:
            if (held := self._held.pop(ref, None)) is not None:
                token, pool, actor = held
                self._tasks_in_flight[pool][actor] -= 1
                out.append(
                    FinishedCall(token, CallReport(CallStatus.ray_error, error="Ray ended it"))
                )
        ready = [ref for ref in ready if ref in self._pending]
        if not ready:
            return out
        try:
            reports = self._get(ready)
        except Exception:  # noqa: BLE001 - one of them failed: take them one by one
            reports = None
        for i, ref in enumerate(ready):
            token, pool, actor, _ = self._pending.pop(ref)
            self._tasks_in_flight[pool][actor] -= 1
            if reports is not None:
                out.append(FinishedCall(token, reports[i]))
                continue
            try:
                out.append(FinishedCall(token, self._get(ref)))
            except Exception as error:  # noqa: BLE001 - classified for the driver
                report = call_error_report(error)
                if report.status in (CallStatus.actor_lost, CallStatus.block_lost):
                    self._node_losses.loss(report.error)
                out.append(FinishedCall(token, report))
        return out

    def _cut_off(self, refs: list[ObjectRef]) -> list[FinishedCall]:
        """The calls among `refs` (report ObjectRefs) that cannot finish because of a node
        found lost, failed now (actor_lost or block_lost, as Ray would fail them once the
        cluster marks the node dead) and cancelled in Ray. Ray keeps a block_lost call at its
        live actor until then: the report says the actor is held, and the call is reported
        again when Ray ends it."""
        out: list[FinishedCall] = []
        for ref in refs:
            entry = self._pending.get(ref)
            if entry is None:
                continue
            token, pool, actor, blocks = entry
            node = self._node_losses.lost_node_of(_actor_id(self._actors[pool][actor]))
            if node is not None:
                report = CallReport(
                    CallStatus.actor_lost, error=f"NodeLost: the call's actor was on node {node}"
                )
            else:
                lost = self._node_losses.first_lost(blocks)
                if lost is None:
                    continue
                block, node = lost
                report = CallReport(
                    CallStatus.block_lost,
                    error=f"NodeLost: input {block.hex()} was only on node {node}",
                    lost_object=block.hex(),
                    actor_held=True,
                )
                self._held[ref] = (token, pool, actor)
            del self._pending[ref]
            if not report.actor_held:
                self._tasks_in_flight[pool][actor] -= 1
            try:
                self._ray.cancel(ref)
            except Exception:  # noqa: BLE001 - it may have ended meanwhile
                pass
            out.append(FinishedCall(token, report))
        return out


def _actor_id(actor: Any) -> bytes:
    """Ray's binary id of an actor handle."""
    return bytes(actor._actor_id.binary())
