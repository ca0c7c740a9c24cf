"""Python values held by the engine are released: after a run, after close, on any thread."""

from __future__ import annotations

import gc
import sys
import time
import weakref
from typing import Any

import rayorch_cpp as ro
from conftest import Children, Ident, make_executor
from rayorch_cpp import F


class Payload:
    """A value that can be watched with a weak reference."""

    def __init__(self, n: int) -> None:
        self.n = n


class Wrap:
    """Makes new objects (outputs the engine owns) from its inputs."""

    def run(self, xs: list[Payload]) -> list[list[Payload]]:
        return [[Payload(x.n), Payload(x.n + 1)] for x in xs]


def test_every_value_is_released_after_the_run(executor_kind: str) -> None:
    sources = [Payload(i) for i in range(50)]
    watched = [weakref.ref(p) for p in sources]
    made: list[weakref.ref[Any]] = []

    class Watch:
        def run(self, xs: list[Payload]) -> list[int]:
            made.extend(weakref.ref(x) for x in xs)
            return [x.n for x in xs]

    wrap, watch = ro.RayModule(Wrap), ro.RayModule(Watch).ray_options(batch_size=7)
    with make_executor(executor_kind, lambda x: F.reduce(watch(F.expand(wrap(x))))) as ex:
        out = ex.run(sources, input_batch_size=8, max_active_input_batches=2).outputs
        assert out[3] == [3, 4]
        assert len(made) == 100
        gc.collect()
        # Intermediate values (children made by the UDF) are gone once the run ended.
        assert all(r() is None for r in made)
    del sources, out
    gc.collect()
    assert all(r() is None for r in watched)


def test_reference_counts_are_balanced(executor_kind: str) -> None:
    value = Payload(1)
    before = sys.getrefcount(value)
    ident, split = ro.RayModule(Ident), ro.RayModule(Children)
    with make_executor(executor_kind, lambda x: (ident(x), F.reduce(F.expand(split(x))))) as ex:
        for _ in range(3):
            a, b = ex.run([[value, value]]).outputs
            del a, b
    gc.collect()
    assert sys.getrefcount(value) == before


class SlowOnce:
    calls = 0

    def run(self, xs: list[int]) -> list[int]:
        SlowOnce.calls += 1
        if SlowOnce.calls == 1:
            time.sleep(0.3)  # past the timeout: the actor counts as lost and is replaced
        return xs


def test_a_timed_out_call_is_replayed_on_a_fresh_actor() -> None:
    SlowOnce.calls = 0
    slow = ro.RayModule(SlowOnce).ray_options(timeout=0.1, infra_retries=1)
    with ro.Executor(lambda x: slow(x)) as ex:
        result = ex.run([1, 2], progress=False)
    assert result.outputs == [1, 2]
    assert result.actors_replaced == 1
    time.sleep(0.3)  # the abandoned call finishes (its late report is rejected)


class LosesItsActor:
    built = 0

    def __init__(self) -> None:
        LosesItsActor.built += 1
        self.first = LosesItsActor.built == 1

    def run(self, xs: list[int]) -> list[int]:
        if self.first:
            raise ro.ActorLost("worker died")
        return [x * 2 for x in xs]


def test_actor_lost_replaces_the_actor_and_replays(executor_kind: str) -> None:
    LosesItsActor.built = 0
    m = ro.RayModule(LosesItsActor).ray_options(batch_size=2)
    with make_executor(executor_kind, lambda x: m(x)) as ex:
        result = ex.run([1, 2, 3])
    assert result.outputs == [2, 4, 6]
    assert result.actors_replaced == 1 and LosesItsActor.built == 2


def test_actor_lost_beyond_infra_retries_aborts() -> None:
    class AlwaysLost:
        def run(self, xs: list[int]) -> list[int]:
            raise ro.ActorLost("worker died")

    m = ro.RayModule(AlwaysLost).ray_options(infra_retries=1)
    try:
        ro.SyncExecutor(lambda x: m(x)).run([1])
    except ro.ExecutionError as error:
        assert "worker died" in str(error)
    else:
        raise AssertionError("the run should abort")
