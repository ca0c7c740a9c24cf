"""Eager start on the local backend (docs/DESIGN.md 6.1.4): the executor returns while its
actors' constructors run, work starts on the first ready actor, an actor whose constructor
raises stays out of its pool, and a pool whose every constructor raises is an error naming
the Module. Order is asserted from logs and events, never from durations."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

import rayorch_cpp as ro


class Log:
    """What the actors of one test did, in order (shared by the actors of a Module)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[str] = []
        self.built = 0
        self.slow = threading.Event()  # the slow constructors wait for it

    def add(self, event: str) -> None:
        with self.lock:
            self.events.append(event)

    def next_build(self) -> int:
        with self.lock:
            self.built += 1
            return self.built


class SlowToLoad:
    """The first actor to start is quick; the others wait until the first call, which had
    to wait for them all (and the gate's watchdog) if the executor waited for every
    constructor."""

    def __init__(self, log: Log) -> None:
        self.log = log
        if log.next_build() > 1:
            if not log.slow.wait(5):
                log.add("watchdog")
            log.add("slow ready")

    def run(self, xs: list[int]) -> list[int]:
        if not self.log.slow.is_set():
            self.log.add("first call")
            self.log.slow.set()
        return [x * 2 for x in xs]


def test_the_first_call_runs_before_the_slowest_constructor_finishes(tmp_path: Path) -> None:
    log = Log()
    slow = ro.Module(SlowToLoad, replicas=3, batch_size=1).pre_init(log)
    with ro.Executor(lambda x: slow(x)) as ex:  # returns while two constructors wait
        trace = tmp_path / "trace.json"
        got = ex.run(list(range(6)), progress=False, trace=str(trace))
        assert got.outputs == [x * 2 for x in range(6)]
        # Each run lists every start known by its end; the slow ones follow the first call.
        while len(got.pools[0].started) < 3:
            got = ex.run([1], progress=False)
    assert "watchdog" not in log.events
    assert log.events.index("first call") < log.events.index("slow ready")
    pool = got.pools[0]
    assert (pool.pool, pool.actors, pool.ready_actors) == ("SlowToLoad", 3, 3)
    times = [s.started_s for s in pool.started]
    assert times == sorted(times)
    names = [e["name"] for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "i"]
    assert "actor ready" in names


class Fragile:
    """Constructor number `fail_at` (counted across the pool, from 1) raises; 0: all do."""

    def __init__(self, log: Log, fail_at: int) -> None:
        n = log.next_build()
        if fail_at in (0, n):
            raise ValueError("weights file missing")

    def run(self, xs: list[int]) -> list[int]:
        return [x + 1 for x in xs]


def test_one_of_two_constructors_raising_leaves_the_pool_to_the_other() -> None:
    fragile = ro.Module(Fragile, replicas=2, batch_size=2).pre_init(Log(), 2)
    with ro.Executor(lambda x: fragile(x)) as ex:
        got = ex.run(list(range(9)), progress=False)
        assert got.outputs == [x + 1 for x in range(9)]
        # The failed start may come to the driver's notice after the first run.
        for _ in range(200):
            if len(got.pools[0].started) == 2:
                break
            got = ex.run([0], progress=False)
        assert not ex.closed
    pool = got.pools[0]
    assert pool.ready_actors == 1
    failed = [s for s in pool.started if not s.ready]
    assert len(failed) == 1
    assert "Module<Fragile>" in failed[0].error
    assert "ValueError: weights file missing" in failed[0].error


def test_a_pool_whose_every_constructor_raises_is_an_error_naming_the_module() -> None:
    fragile = ro.Module(Fragile, replicas=3).pre_init(Log(), 0)
    ident = ro.Module(_Ident, replicas=2)
    ex = ro.Executor(lambda x: fragile(ident(x)))
    with pytest.raises(
        ro.ExecutionError,
        match=r"no actor of Module<Fragile> could start \(3 of 3 failed\).*"
        r"ValueError: weights file missing",
    ):
        ex.run([1, 2, 3], progress=False)
    assert ex.closed


def test_await_actors_reports_a_module_that_cannot_start_before_any_run() -> None:
    fragile = ro.Module(Fragile, replicas=2).pre_init(Log(), 0)
    ex = ro.Executor(lambda x: fragile(x))
    with pytest.raises(ro.ExecutionError, match=r"no actor of Module<Fragile> could start"):
        ex.await_actors()
    assert ex.closed


def test_await_actors_returns_once_every_module_has_a_ready_actor() -> None:
    log = Log()
    slow = ro.Module(SlowToLoad, replicas=2).pre_init(log)
    log.slow.set()  # every constructor is quick
    with ro.Executor(lambda x: slow(x)) as ex:
        ex.await_actors()
        got = ex.run([1, 2], progress=False)
    assert got.outputs == [2, 4]
    assert got.pools[0].ready_actors >= 1


class _Ident:
    def run(self, xs: list[Any]) -> list[Any]:
        return list(xs)
