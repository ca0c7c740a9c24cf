"""The order in which the Ray backend asks Ray for its actors (rayorch_cpp._ray_actors): the
first actor of every Module at once, in pipeline order; the others in a second wave, the second
of each, then the third, and so on, once those first actors are ready or a second has passed. A
row needs one actor of each Module it passes, and worker processes started all at once share
the CPUs (docs/RAY.md, eager start)."""

from __future__ import annotations

from typing import Any

from rayorch_cpp._ray_actors import RayActors


class Recorded:
    """A stand-in actor handle: its `ready` call returns an object reference of its own."""

    class _Method:
        def remote(self, *args: Any) -> object:
            return object()

    ready = _Method()


class RecordingClass:
    """A stand-in Ray actor class that records the (pool, replica) of each actor made."""

    def __init__(self) -> None:
        self.made: list[tuple[int, int]] = []

    def options(self, **options: Any) -> RecordingClass:
        return self

    def remote(self, source: Any, optimize: bool, explain: str, pool: int, replica: int) -> Any:
        self.made.append((pool, replica))
        return Recorded()


def backend(slots: list[int], started: list[bool]) -> tuple[RayActors, RecordingClass]:
    actors = RayActors()
    cls = RecordingClass()
    actors._cls = cls
    actors._source_ref = object()
    actors._optimize = True
    actors._explain = ""
    actors._pools = [{"name": f"M{p}"} for p in range(len(slots))]
    actors._options = [{} for _ in slots]
    actors._startup_timeout_s = 60.0
    actors._init_actors(slots, started)
    return actors, cls


def test_the_first_actor_of_every_module_is_asked_for_first() -> None:
    actors, cls = backend([3, 1, 2], [True, True, True])
    assert cls.made == [(0, 0), (1, 0), (2, 0)]
    actors._start_second_wave()  # the first actors are still starting, the second is not up
    assert len(cls.made) == 3
    actors._start_second_wave(now=True)
    assert cls.made == [(0, 0), (1, 0), (2, 0), (0, 1), (2, 1), (0, 2)]


def test_the_second_wave_starts_once_every_first_actor_is_ready() -> None:
    actors, cls = backend([2, 2], [True, True])
    actors._first_wave.clear()  # what _note_started does as each first actor is ready
    actors._start_second_wave()
    assert cls.made == [(0, 0), (1, 0), (0, 1), (1, 1)]


def test_the_second_wave_starts_after_its_time_whatever_the_first_actors_do() -> None:
    actors, cls = backend([2, 1], [True, True])
    actors._second_wave_at = 0.0
    actors._start_second_wave()
    assert cls.made == [(0, 0), (1, 0), (0, 1)]


def test_a_self_sizing_pool_starts_no_actor_with_the_others() -> None:
    actors, cls = backend([2, 4, 1], [True, False, True])
    actors._start_second_wave(now=True)
    assert cls.made == [(0, 0), (2, 0), (0, 1)]
