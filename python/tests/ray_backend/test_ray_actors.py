"""The order and pace in which the Ray backend asks Ray for its actors (rayorch_cpp._ray_actors):
the first actor of every Module at once, in pipeline order; the others in a second wave, in the
order of _ray_start_pace.second_wave_order, once those first actors are ready or a second has
passed, and no more booting at once than the pace allows. A row needs one actor of each Module
it passes, and worker processes started all at once share the CPUs (docs/RAY.md, eager
start)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from rayorch_cpp._ray_actors import RayActors


class Ref:
    """A stand-in object reference: `done` once what it stands for is over."""

    def __init__(self) -> None:
        self.done = False


class Recorded:
    """A stand-in actor handle: its `booted` and `ready` calls return references of their own
    (`boot` and `build`)."""

    def __init__(self) -> None:
        self.boot = Ref()
        self.build = Ref()
        self.booted = SimpleNamespace(remote=lambda: self.boot)
        self.ready = SimpleNamespace(remote=lambda: self.build)


class StandInRay:
    """`ray.wait` over stand-in references."""

    @staticmethod
    def wait(refs: list[Ref], num_returns: int, timeout: float) -> tuple[list[Ref], list[Ref]]:
        return [r for r in refs if r.done], [r for r in refs if not r.done]


class RecordingClass:
    """A stand-in Ray actor class that records the (pool, replica) of each actor made."""

    def __init__(self) -> None:
        self.made: list[tuple[int, int]] = []
        self.handles: list[Recorded] = []

    def options(self, **options: Any) -> RecordingClass:
        return self

    def remote(
        self, source: Any, compile_options: dict[str, bool], explain: str, pool: int, replica: int
    ) -> Any:
        self.made.append((pool, replica))
        self.handles.append(Recorded())
        return self.handles[-1]


def backend(
    slots: list[int], started: list[bool], boots_at_once: int | None = None
) -> tuple[RayActors, RecordingClass]:
    actors = RayActors()
    cls = RecordingClass()
    actors._ray = StandInRay()
    actors._cls = cls
    actors._source_ref = object()
    actors._compile_options = {"optimize": True, "auto_colocate": False}
    actors._explain = ""
    actors._pools = [{"name": f"M{p}"} for p in range(len(slots))]
    actors._options = [{} for _ in slots]
    actors._startup_timeout_s = 60.0
    actors._init_actors(slots, started, boots_at_once)
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


def test_the_second_wave_boots_no_more_at_once_than_the_pace_allows() -> None:
    actors, cls = backend([1, 4], [True, True], boots_at_once=1)
    assert cls.made == [(0, 0), (1, 0)]
    actors._first_wave.clear()
    actors._start_second_wave()  # both first actors are still booting
    assert len(cls.made) == 2
    cls.handles[0].boot.done = True
    actors._start_second_wave()  # one boot over: one place
    assert cls.made == [(0, 0), (1, 0)]
    cls.handles[1].boot.done = True
    actors._start_second_wave()
    assert cls.made == [(0, 0), (1, 0), (1, 1)]
    actors._start_second_wave()  # its boot is not over: nothing more, though no build is
    assert len(cls.made) == 3
    cls.handles[2].boot.done = True  # up: the next boots while its UDF is still built
    actors._start_second_wave()
    assert cls.made == [(0, 0), (1, 0), (1, 1), (1, 2)]
    actors._start_second_wave(now=True)  # all of it, paced or not
    assert cls.made == [(0, 0), (1, 0), (1, 1), (1, 2), (1, 3)]


def test_a_boot_that_does_not_end_gives_up_its_place_after_a_while() -> None:
    actors, cls = backend([1, 3], [True, True], boots_at_once=1)
    actors._first_wave.clear()
    cls.handles[0].boot.done = True
    actors._start_second_wave()
    assert len(cls.made) == 2  # the second pool's first actor is not up (Ray cannot place it)
    assert actors.boots_to_wait_for()[0] == [cls.handles[1].boot]
    actors._booting = dict.fromkeys(actors._booting, 0.0)  # its hold is over
    actors._start_second_wave()
    assert cls.made == [(0, 0), (1, 0), (1, 1)]


def test_the_boots_to_wait_for_are_none_before_the_second_wave_is_due_or_after_it() -> None:
    actors, cls = backend([1, 2], [True, True], boots_at_once=1)
    assert actors.boots_to_wait_for() == ([], None)  # not due: the wave's time is waited for
    actors._first_wave.clear()
    boots, hold_s = actors.boots_to_wait_for()
    assert boots == [cls.handles[0].boot, cls.handles[1].boot]
    assert hold_s is not None and 0 < hold_s <= 2.0
    for handle in cls.handles:
        handle.boot.done = True
    actors._start_second_wave()
    assert cls.made[-1] == (1, 1) and actors.boots_to_wait_for() == ([], None)
