"""An in-process stand-in for Ray behind the Ray backend's contract (_ray_contract): the
same actor code (`_core.RayWorker`), object references that are plain Python objects, and
scripted infrastructure faults. The tests of the Ray pools drive the C++ pools through it,
without Ray, deterministically."""

from __future__ import annotations

import random
import time
from typing import Any

import rayorch_cpp as ro
from rayorch_cpp import _core
from rayorch_cpp._ray_contract import CallReport, CallStatus, FinishedCall, RayBackendProtocol


class Ref:
    """An object reference of the stand-in object store."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.gone = False  # lost with its node after every reader read it: get() fails


class FakeRay(RayBackendProtocol):
    """The backend contract over in-process RayWorkers. `faults` maps the n-th submitted
    call (1-based) to what happens to it: "lost" (the actor dies), "block_lost" (an input
    block is gone), "ray_error" (Ray fails the call otherwise), "late" (its report is held
    back until its actor is replaced), "outputs_gone" (its output blocks are lost once the
    calls that read them have read them: fetching them fails), "held" (reported block_lost
    before Ray ended it: its actor takes no call until take_resumed names it, once Ray ended
    every call held there, a few waits later or at once when nothing else is ready), "stuck"
    (as "held", but Ray ends the call only when its actor is killed: restart_held). With
    `starts`, actors start in a random order, a few at each take_started (eager start); the
    actors in `broken` fail to start; those in `unplaced` never start (a cluster without what
    they ask for) until the driver gives them up after `startup_timeout_s` (abandon_starts).
    A lost actor or block is reported as the loss of the actor's node, "node-<pool>-<actor>".
    A self-sizing pool's slots stay empty until the driver starts them (start); retire
    asserts the actor is ready and has no call out."""

    def __init__(
        self,
        program: ro.CompiledProgram,
        faults: dict[int, str] | None = None,
        tasks_in_flight: list[int] | None = None,
        shuffle: random.Random | None = None,
        starts: random.Random | None = None,
        broken: frozenset[tuple[int, int]] = frozenset(),
        unplaced: frozenset[tuple[int, int]] = frozenset(),
        startup_timeout_s: float = 3600.0,
    ) -> None:
        self.program = program
        self.shuffle = shuffle  # reports come back in a random order
        self.faults = dict(faults or {})
        self.pools = program.native.pools()
        self.auto = [bool(pool["auto_replicas"]) for pool in self.pools]
        self.workers: list[list[Any]] = [
            [
                None if self.auto[p] else _core.RayWorker(program.native, p)
                for _ in range(pool["replicas"])
            ]
            for p, pool in enumerate(self.pools)
        ]
        self.starts_asked: list[tuple[int, int]] = []  # start() calls, in order
        self.retired: list[tuple[int, int]] = []  # retire() calls, in order
        self.tasks_in_flight = tasks_in_flight or [1] * len(self.pools)
        # Reports not collected yet, with the actor that made them.
        self.ready: list[FinishedCall] = []
        self.ready_on: list[tuple[int, int]] = []
        self.peak_outstanding = 0  # most reports outstanding at one actor
        self.died_queued = 0  # outstanding calls that died with their actor's loss
        self.held: dict[tuple[int, int], FinishedCall] = {}
        self.submitted = 0
        self.exports: list[tuple[int, int, int]] = []  # export_block calls: (pool, actor, block)
        self.kept_returns = 0  # output blocks of ok calls kept by their actor (None returned)
        self.replaced: list[tuple[int, int]] = []
        self.replaced_lost: list[bool] = []  # per replacement: after a loss (not a hang)
        self.fetched = 0
        self.lost_fetches = 0  # get() calls that found a block gone
        self.stopped = False
        self.starts = starts
        self.broken = broken
        self.unplaced = unplaced
        self._startup_timeout_s = startup_timeout_s
        self.abandoned: list[tuple[int, list[int]]] = []  # abandon_starts() calls, in order
        self.not_started = [
            (p, a) for p, w in enumerate(self.workers) for a in range(len(w)) if not self.auto[p]
        ]
        self.started: list[tuple[int, int]] = []  # ready actors, in the order they started
        self.lost_nodes: list[tuple[str, str, float, str]] = []  # every node loss reported
        # Calls reported early, from the wait that returned the report: token -> (their
        # actor, waits left until Ray ends them).
        self.held_calls: dict[int, tuple[tuple[int, int], int]] = {}
        self.held_on: dict[int, tuple[int, int]] = {}  # every held call's actor, by token
        self.calls_to: list[tuple[int, int]] = []  # the actor of every call, in order
        self.resumed: list[tuple[int, int, int]] = []  # (pool, actor, calls sent before)
        self.to_resume: list[tuple[int, int]] = []  # for take_resumed
        self.node_losses: list[tuple[str, str, float, str]] = []  # not taken yet
        # Lost actors restarting in the background: (pool, actor) -> calls sent before; and
        # per restart, the calls sent while it started.
        self.restarting: dict[tuple[int, int], int] = {}
        self.stuck: set[int] = set()  # tokens of held calls only a restart ends
        self.held_restarts: list[tuple[int, int]] = []  # restart_held() calls, in order
        self.sent_while_restarting: list[int] = []

    @property
    def startup_timeout_s(self) -> float:
        return self._startup_timeout_s

    def abandon_starts(self, pool: int, actors: list[int]) -> str:
        assert all((pool, a) in self.not_started for a in actors), "gave up a started actor"
        self.abandoned.append((pool, list(actors)))
        self.not_started = [s for s in self.not_started if s[0] != pool or s[1] not in actors]
        return f"{len(actors)} actor(s) of pool {pool} were not placed"

    def take_started(self) -> list[tuple[int, int, str]]:
        now = [s for s in self.not_started if s not in self.unplaced]
        if self.starts is not None:
            now = [s for s in now if self.starts.random() < 0.3]
            self.starts.shuffle(now)
        self.not_started = [s for s in self.not_started if s not in now]
        self.started += [s for s in now if s not in self.broken]
        for s in now:
            if (before := self.restarting.pop(s, None)) is not None:
                self.sent_while_restarting.append(len(self.calls_to) - before)
        return [(p, a, "ValueError: no model" if (p, a) in self.broken else "") for p, a in now]

    def start(self, pool: int, actor: int) -> None:
        assert self.auto[pool], "the driver started an actor of a fixed pool"
        assert self.workers[pool][actor] is None, "the driver started a busy slot"
        self.starts_asked.append((pool, actor))
        self.workers[pool][actor] = _core.RayWorker(self.program.native, pool)
        self.not_started.append((pool, actor))

    def retire(self, pool: int, actor: int) -> None:
        where = (pool, actor)
        assert self.auto[pool], "the driver retired an actor of a fixed pool"
        assert where in self.started, "the driver retired an actor that is not ready"
        assert where not in self.ready_on, "the driver retired an actor with a call out"
        assert where not in [w for w, _ in self.held_calls.values()], "it retired a held actor"
        self.retired.append(where)
        self.started.remove(where)
        self.workers[pool][actor] = None

    def take_node_losses(self) -> list[tuple[str, str, float, str]]:
        out, self.node_losses = self.node_losses, []
        return out

    def _node_lost(self, pool: int, actor: int, error: str) -> None:
        loss = (f"node-{pool}-{actor}", f"127.0.0.1:{7000 + pool}", time.time(), error)
        self.lost_nodes.append(loss)
        self.node_losses.append(loss)

    def actors_per_pool(self) -> list[int]:
        return [len(w) for w in self.workers]

    def max_tasks_in_flight_per_actor(self) -> list[int]:
        return list(self.tasks_in_flight)

    def _ready(self, actor: tuple[int, int], report: FinishedCall) -> None:
        self.ready.append(report)
        self.ready_on.append(actor)
        self.peak_outstanding = max(self.peak_outstanding, self.ready_on.count(actor))

    def put(self, values: list[Any]) -> Ref:
        return Ref(values)

    def get(self, refs: list[Any]) -> list[list[Any]]:
        gone = [r for r in refs if r.gone]
        if gone:
            import ray

            self.lost_fetches += 1
            raise ray.exceptions.ObjectLostError(f"{id(gone[0]):x}", None, "a fake call site")
        self.fetched += len(refs)
        return [r.value for r in refs]

    def submit(
        self,
        pool: int,
        actor: int,
        token: int,
        output_blocks: int,
        task: bytes,
        blocks: tuple[Any, ...],
    ) -> list[Any]:
        self.submitted += 1
        assert (pool, actor) in self.started, "a call went to an actor that is not ready"
        assert (pool, actor) not in [w for w, _ in self.held_calls.values()], (
            "a call went to an actor still held"
        )
        self.calls_to.append((pool, actor))
        fault = self.faults.get(self.submitted, "")
        report, *outputs = self.workers[pool][actor].run(task, *[r.value for r in blocks])
        assert isinstance(report, CallReport)
        assert len(outputs) == output_blocks
        if report.status == CallStatus.ok:
            self.kept_returns += sum(1 for v in outputs if v is None)
        where = (pool, actor)
        if fault == "lost":
            # The actor dies: the calls still outstanding there die with it.
            died = CallReport(CallStatus.actor_lost, error="ActorDiedError: the actor died")
            self.died_queued += self.ready_on.count(where)
            self.ready = [
                FinishedCall(f.token, died) if on == where else f
                for f, on in zip(self.ready, self.ready_on, strict=True)
            ]
            self._ready(where, FinishedCall(token, died))
            self._node_lost(pool, actor, died.error)
        elif fault == "ray_error":
            failed = CallReport(CallStatus.ray_error, error="RaySystemError: no worker")
            self._ready(where, FinishedCall(token, failed))
        elif fault == "block_lost":
            gone = CallReport(CallStatus.block_lost, error="ObjectLostError: gone")
            self._ready(where, FinishedCall(token, gone))
            self._node_lost(pool, actor, gone.error)
        elif fault in ("held", "stuck"):
            early = CallReport(
                CallStatus.block_lost, error="NodeLost: an input was on it", actor_held=True
            )
            self._ready(where, FinishedCall(token, early))
            self.held_on[token] = where
            if fault == "stuck":
                self.stuck.add(token)
        elif fault == "late":
            self.held[where] = FinishedCall(token, report)
        else:
            self._ready(where, FinishedCall(token, report))
        refs = [Ref(v) for v in outputs]
        if fault == "outputs_gone":
            for ref in refs:
                ref.gone = True
            self._node_lost(pool, actor, "ObjectLostError: gone")
        return refs

    def export_block(self, pool: int, actor: int, block: int) -> Ref:
        assert (pool, actor) in self.started, "a block was exported from an actor not ready"
        self.exports.append((pool, actor, block))
        return Ref(self.workers[pool][actor].exported(block))

    def wait(self, timeout_s: float) -> list[FinishedCall]:
        if self.shuffle is not None and self.ready:
            # Some of the reports, in any order; the others come with a later wait.
            order = list(range(len(self.ready)))
            self.shuffle.shuffle(order)
            take = sorted(order[: self.shuffle.randint(1, len(order))])
            self.shuffle.shuffle(take)
            out = [self.ready[i] for i in take]
            keep = [i for i in range(len(self.ready)) if i not in take]
            self.ready = [self.ready[i] for i in keep]
            self.ready_on = [self.ready_on[i] for i in keep]
        else:
            out, self.ready, self.ready_on = self.ready, [], []
        for token, (where, left) in list(self.held_calls.items()):
            if token in self.stuck:
                continue
            if left > 1 and out:
                self.held_calls[token] = (where, left - 1)
                continue
            del self.held_calls[token]  # Ray ends the call
            if where not in [w for w, _ in self.held_calls.values()]:  # no other holds it
                self.to_resume.append(where)
                self.resumed.append((*where, len(self.calls_to)))
        for f in out:
            if f.report.actor_held:  # the driver knows now: no call may reach it
                self.held_calls[f.token] = (self.held_on[f.token], 3)
        if not out and any(s in self.unplaced for s in self.not_started):
            time.sleep(min(timeout_s, 0.01))  # as Ray waits for a start that does not come
        return out

    def replace(self, pool: int, actor: int) -> None:
        self._renew(pool, actor, lost=False)

    def restart_lost(self, pool: int, actor: int) -> None:
        # In the background: its start comes through take_started (at random with `starts`).
        self._renew(pool, actor, lost=True)
        self.restarting[(pool, actor)] = len(self.calls_to)
        if (pool, actor) in self.started:
            self.started.remove((pool, actor))
        self.not_started.append((pool, actor))

    def take_resumed(self) -> list[tuple[int, int]]:
        out, self.to_resume = self.to_resume, []
        return out

    def restart_held(self, pool: int, actor: int) -> None:
        held = [t for t, (where, _) in self.held_calls.items() if where == (pool, actor)]
        assert held, "the driver restarted an actor no call holds"
        for token in held:  # they die with the actor; no resume of it follows
            del self.held_calls[token]
            self.stuck.discard(token)
        self.to_resume = [w for w in self.to_resume if w != (pool, actor)]
        self.held_restarts.append((pool, actor))
        self.restart_lost(pool, actor)
        self.replaced_lost[-1] = False  # not lost: its node stays

    def restart_idle_lost(self) -> list[tuple[int, int]]:
        return []  # the stand-in's actors have no nodes

    def _renew(self, pool: int, actor: int, lost: bool) -> None:
        self.replaced.append((pool, actor))
        self.replaced_lost.append(lost)
        self.workers[pool][actor] = _core.RayWorker(self.program.native, pool)
        held = self.held.pop((pool, actor), None)
        if held is not None:
            self._ready((pool, actor), held)  # the abandoned attempt's report arrives after all

    def stop(self) -> None:
        self.stopped = True
