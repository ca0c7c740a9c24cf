"""A thread the engine starts keeps one Python thread state from its first Python call to its
exit (python/src/py_values.h, Gil): what a UDF keeps in ``threading.local`` lives as long as
its actor's thread, and goes when that thread ends."""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any

import rayorch_cpp as ro


class Kept:
    """An object a UDF keeps in thread-local storage."""


def test_thread_local_storage_lasts_from_call_to_call_on_an_actor_thread() -> None:
    local = threading.local()
    threads: list[int] = []

    class Remember:
        def run(self, xs: list[int]) -> list[bool]:
            seen = getattr(local, "seen", False)
            local.seen = True
            threads.append(threading.get_ident())
            return [seen for _ in xs]

    remember = ro.RayModule(Remember).ray_options(batch_size=1, replicas=1)
    with ro.Executor(lambda x: remember(x)) as ex:
        first = ex.run(list(range(6)), progress=False).outputs
        second = ex.run(list(range(3)), progress=False).outputs
    assert len(set(threads)) == 1, "one actor runs every call on its own thread"
    # Before the thread kept its state, every call started with an empty threading.local.
    assert first == [False, True, True, True, True, True]
    assert second == [True, True, True]


def test_thread_local_storage_is_released_when_the_executor_closes() -> None:
    local = threading.local()
    kept: list[weakref.ref[Any]] = []

    class Keep:
        def run(self, xs: list[int]) -> list[int]:
            if not hasattr(local, "kept"):
                local.kept = Kept()
                kept.append(weakref.ref(local.kept))
            return xs

    keep = ro.RayModule(Keep).ray_options(batch_size=1, replicas=2)
    ex = ro.Executor(lambda x: keep(x))
    assert ex.run(list(range(8)), progress=False).outputs == list(range(8))
    assert 1 <= len(kept) <= 2
    assert all(ref() is not None for ref in kept), "the actors' threads still run"
    ex.close()
    gc.collect()
    # The actors' threads ended: their thread states were deleted, and with them what
    # their threading.local held.
    assert all(ref() is None for ref in kept)
