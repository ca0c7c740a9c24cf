"""The Ray side of the Ray backend (python/src/ray_pools.h drives it from C++).

Each Module becomes a pool of persistent Ray actors (``_ray_worker.Worker``) built with the Module's
``num_cpus``, ``num_gpus``, ``resources``, ``runtime_env`` and other Ray actor options (the
Modules that set no ``num_cpus`` share a cluster smaller than they would ask for:
_ray_placement.share_default_cpus). An
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

import os
import sys
import time
from collections.abc import Mapping
from typing import Any

from ._compile import CompiledProgram
from ._ray_actors import RayActors
from ._ray_contract import CallReport, CallStatus, FinishedCall, ObjectRef, RayBackendProtocol
from ._ray_errors import call_error_report, error_text
from ._ray_node_losses import NodeLossWatch
from ._ray_placement import (
    actor_options,
    cluster_budget,
    max_tasks_in_flight_of,
    self_sizing_slots,
    share_default_cpus,
)
from ._ray_session import connect, import_ray
from ._ray_start_pace import boots_at_once, node_cpus
from ._ray_startup import asked_resources, startup_timeout_s
from ._ray_worker import Worker


class RayBackend(RayActors, RayBackendProtocol):
    """The actor pools of one compiled program on a Ray cluster."""

    def __init__(
        self,
        program: CompiledProgram,
        source: bytes,
        address: str | None = None,
        ray_init_kwargs: dict[str, Any] | None = None,
        actor_startup_timeout_s: float | None = None,
        budget: Mapping[str, float] | None = None,
    ) -> None:
        self._startup_timeout_s = startup_timeout_s(actor_startup_timeout_s)
        connect(address, dict(ray_init_kwargs or {}))
        ray = import_ray()
        self._ray = ray
        # The self-sizing pools' budget: the Executor's, else the cluster's resources.
        self.budget: dict[str, float] = (
            dict(budget) if budget is not None else cluster_budget(ray.cluster_resources())
        )
        self._wait = ray.wait
        self._get = ray.get
        self._cls = ray.remote(max_restarts=0, max_task_retries=0)(Worker)
        self._explain = program.explain_text()
        # How each actor compiles the program again: as the driver did.
        self._compile_options = {
            "optimize": program.optimize,
            "auto_colocate": program.auto_colocate,
        }
        self._source_ref = ray.put(source)
        self._pools: list[dict[str, Any]] = list(program.native.pools())
        self._options: list[dict[str, Any]] = []
        self._max_tasks_in_flight: list[int] = []
        for pool, module_options in zip(self._pools, program.pool_options(), strict=True):
            self._options.append(actor_options(pool, module_options))
            self._max_tasks_in_flight.append(max_tasks_in_flight_of(module_options))
        shared = share_default_cpus(
            self._pools,
            program.pool_options(),
            self._options,
            float(ray.cluster_resources().get("CPU", 0.0)),
        )
        if shared is not None:
            print(shared, file=sys.stderr, flush=True)
        # Per outstanding call's report ObjectRef: (token, pool, actor, the blocks it sent).
        # Per call out: (token, pool, actor, the blocks it carried, its actor's id then).
        self._pending: dict[ObjectRef, tuple[int, int, int, tuple[ObjectRef, ...], bytes]] = {}
        # Calls sent after a node was found lost, not yet checked against it; and how many
        # nodes were found lost when every call in flight was last checked.
        self._unchecked: list[ObjectRef] = []
        self._losses_checked = 0
        # Calls failed early whose actors Ray still holds: report ObjectRef -> (pool, actor).
        # The one record of held calls (the driver's PoolState keeps the actors' phases): an
        # actor is resumed (take_resumed) when Ray ended every call held at it.
        self._held: dict[ObjectRef, tuple[int, int]] = {}
        self._resumed: list[tuple[int, int]] = []
        # Per held actor (pool, actor): the lost node its held calls' inputs were on.
        self._held_by: dict[tuple[int, int], str] = {}
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
        # Per pool the most tasks ever in flight at one actor.
        self.peak_tasks_in_flight: list[int] = [0 for _ in self._pools]
        slots = [
            self_sizing_slots(pool["name"], options, asked_resources(ray_options), self.budget)
            if pool["auto_replicas"]
            else int(pool["replicas"])
            for pool, options, ray_options in zip(
                self._pools, program.pool_options(), self._options, strict=True
            )
        ]
        for p, pool in enumerate(self._pools):
            if pool["auto_replicas"]:
                self._max_tasks_in_flight[p] = 1
        # A self-sizing pool's actors start when the driver asks (start).
        try:
            self._init_actors(
                slots,
                [not pool["auto_replicas"] for pool in self._pools],
                boots_at_once(node_cpus(ray, len(os.sched_getaffinity(0)))),
            )
        except BaseException:
            self.stop()
            raise

    # -- actors (the rest is RayActors') -------------------------------------------------

    def max_tasks_in_flight_per_actor(self) -> list[int]:
        return list(self._max_tasks_in_flight)

    def take_node_losses(self) -> list[tuple[str, str, float, str]]:
        """The nodes found lost since the last call (the contract's)."""
        return self._node_losses.take()

    def stop(self) -> None:
        """Kills every actor (idempotent)."""
        self._stop_actors()
        self._pending.clear()
        self._held.clear()
        self._resumed.clear()
        self._held_by.clear()

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
        self._pending[refs[0]] = (token, pool, actor, blocks, self.actor_ids[pool][actor])
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
        due_in = self.second_wave_due_in()  # back when the second wave of actors is due
        if due_in is not None:
            timeout_s = min(timeout_s, due_in)
        boots, hold_s = self.boots_to_wait_for()  # back for the next of the second wave
        if hold_s is not None:
            pending += boots
            timeout_s = min(timeout_s, hold_s)
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
            if (held := self._held.pop(ref, None)) is not None:  # Ray ended a held call
                self._tasks_in_flight[held[0]][held[1]] -= 1
                if held not in self._held.values():
                    self._resumed.append(held)
                    self._held_by.pop(held, None)
        ready = [ref for ref in ready if ref in self._pending]
        if not ready:
            return out
        try:
            reports = self._get(ready)
        except Exception:  # noqa: BLE001 - one of them failed: take them one by one
            reports = None
        for i, ref in enumerate(ready):
            token, pool, actor, _, sent_to = self._pending.pop(ref)
            self._tasks_in_flight[pool][actor] -= 1
            if reports is not None:
                out.append(FinishedCall(token, reports[i]))
                continue
            try:
                out.append(FinishedCall(token, self._get(ref)))
            except Exception as error:  # noqa: BLE001 - classified for the driver
                report = call_error_report(error, sent_to.hex())
                if report.status in (CallStatus.actor_lost, CallStatus.block_lost):
                    self._node_losses.loss(report.error)
                out.append(FinishedCall(token, report))
        return out

    def take_resumed(self) -> list[tuple[int, int]]:
        """The actors no held call holds any more since the last call (the contract's)."""
        out, self._resumed = self._resumed, []
        return out

    def restart_held(self, pool: int, actor: int) -> None:
        """Kills `actor` of `pool`, which calls reported early (actor_held) still hold, and
        starts a fresh one in its slot in the background, away from the lost node its calls'
        inputs were on (Ray may place an actor there until it marks the node dead, the same
        wait). Ray would hold the actor until then; the held calls are forgotten with it."""
        self._restart(pool, actor, self._held_by.get((pool, actor)))

    def _forget_held(self, pool: int, actor: int) -> None:
        """The calls held at `actor` of `pool`, killed, die with it: no resume follows."""
        for ref, where in list(self._held.items()):
            if where == (pool, actor):
                del self._held[ref]
                self._tasks_in_flight[pool][actor] -= 1
        self._held_by.pop((pool, actor), None)
        if (pool, actor) in self._resumed:
            self._resumed.remove((pool, actor))

    def _cut_off(self, refs: list[ObjectRef]) -> list[FinishedCall]:
        """The calls among `refs` (report ObjectRefs) that cannot finish because of a node
        found lost, failed now (actor_lost or block_lost, as Ray would fail them once the
        cluster marks the node dead) and cancelled in Ray. Ray keeps a block_lost call at its
        live actor until then: the report says the actor is held, and take_resumed names the
        actor once Ray ended every call held there."""
        out: list[FinishedCall] = []
        for ref in refs:
            entry = self._pending.get(ref)
            if entry is None:
                continue
            token, pool, actor, blocks, _ = entry
            node = self._node_losses.lost_node_of(self.actor_ids[pool][actor])
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
                self._held[ref] = (pool, actor)
                self._held_by[(pool, actor)] = node
            del self._pending[ref]
            if not report.actor_held:
                self._tasks_in_flight[pool][actor] -= 1
            try:
                self._ray.cancel(ref)
            except Exception:  # noqa: BLE001 - it may have ended meanwhile
                pass
            out.append(FinishedCall(token, report))
        return out
