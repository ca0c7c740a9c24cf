"""Self-sizing pools (``replicas="auto"``) on the Ray backend's pools (python/src/ray_pools.cc)
driven through the in-process stand-in for Ray (fake_ray.py): the driver starts and retires
the pool's actors through the backend's start/retire; no row is lost or computed twice
(counts from the UDFs' own logs) whatever the order of starts, reports and resizes; misuse
is a clear error naming the Module. The real cluster is exercised by test_ray.py."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Any

import pytest
from fake_ray import FakeRay

import rayorch_cpp as ro
from rayorch_cpp import F


class Seen:
    """Every value the actors of one Module saw, with repeats."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: Counter[int] = Counter()

    def add(self, xs: list[int]) -> None:
        with self.lock:
            self.values.update(xs)


class Pages:
    def run(self, docs: list[int]) -> list[list[int]]:
        return [[d * 10 + i for i in range(d % 5)] for d in docs]


class Ocr:
    def __init__(self, seen: Seen, delay_s: float) -> None:
        self.seen = seen
        self.delay_s = delay_s  # lets a run span several of the driver's resize ticks

    def run(self, pages: list[int]) -> list[str]:
        self.seen.add(pages)
        time.sleep(self.delay_s)
        return [f"t{p}" for p in pages]


class Join:
    def run(self, groups: list[list[str]], docs: list[int]) -> list[str]:
        return [f"{d}:" + ",".join(g) for g, d in zip(groups, docs, strict=True)]


DOCS = list(range(40))
PAGES = Counter(d * 10 + i for d in DOCS for i in range(d % 5))


def pipeline(seen: Seen, delay_s: float = 0.0, **ocr: Any) -> Any:
    pages = ro.Module(Pages, batch_size=3)
    ocr_module = ro.Module(Ocr, batch_size=4, **ocr).pre_init(seen, delay_s)
    join = ro.Module(Join, batch_size=2)

    def forward(docs: ro.Port) -> Any:
        return join(F.reduce(ocr_module(F.expand(pages(docs)))), docs)

    return forward


def expected() -> list[str]:
    with ro.SyncExecutor(pipeline(Seen())) as ex:
        return list(ex.run(DOCS).outputs)


def run_auto(
    seed: int, budget: dict[str, float] | None = None, **ocr: Any
) -> tuple[Any, FakeRay, Seen]:
    """One run with a self-sizing Ocr pool; seed > 0 starts actors in a random order, returns
    reports in a random order and resizes the pool at random (every 0.1 s of the driver's:
    each Ocr call then takes 20 ms so that a run sees several)."""
    seen = Seen()
    program = ro.compile(pipeline(seen, 0.02 if seed else 0.0, replicas="auto", **ocr))
    draws = random.Random(seed) if seed else None
    fake = FakeRay(program, shuffle=draws, starts=random.Random(seed + 1) if seed else None)
    with ro.Executor._on_backend(program, fake, budget or {"CPU": 8}, seed) as ex:
        result = ex.run(DOCS, progress=False, input_batch_size=8)
    assert fake.stopped
    return result, fake, seen


def test_an_auto_pool_starts_its_actors_when_the_driver_asks_and_computes_every_row_once() -> None:
    result, fake, seen = run_auto(0, max_replicas=3)
    assert result.outputs == expected()
    assert seen.values == PAGES
    assert fake.starts_asked and {p for p, _ in fake.starts_asked} == {1}
    ocr = next(p for p in result.pools if p.pool == "Ocr")
    assert ocr.actors == 3  # its slots: max_replicas
    assert ocr.actors_over_time[0][1] >= 1 and ocr.started  # it started before the first row
    assert all(0 <= n <= 3 for _, n in ocr.actors_over_time)
    assert all(r.reason for r in ocr.resizes)


@pytest.mark.parametrize("seed", range(1, 21))
def test_random_resizes_with_reports_in_any_order_lose_and_duplicate_no_row(seed: int) -> None:
    result, fake, seen = run_auto(seed, max_replicas=3)
    assert result.outputs == expected()
    assert seen.values == PAGES  # each page recognised once, by whichever actor
    assert fake.starts_asked


def test_random_resizes_retire_actors() -> None:
    # Across seeds the random policy retires actors (the test above then covers retirement).
    retired = sum(len(run_auto(seed, max_replicas=3)[1].retired) for seed in range(1, 11))
    assert retired > 0


def test_an_auto_pool_whose_every_actor_fails_to_start_names_the_module() -> None:
    seen = Seen()
    program = ro.compile(pipeline(seen, replicas="auto", max_replicas=2))
    fake = FakeRay(program, broken=frozenset({(1, 0), (1, 1)}))
    with ro.Executor._on_backend(program, fake, {"CPU": 8}) as ex:
        with pytest.raises(ro.ExecutionError, match=r"no actor of Module<Ocr> could start"):
            ex.run(DOCS, progress=False)


def test_a_minimum_that_cannot_fit_the_budget_names_the_module() -> None:
    program = ro.compile(pipeline(Seen(), replicas="auto", min_replicas=3, num_cpus=2))
    fake = FakeRay(program)
    with pytest.raises(ro.ExecutionError, match=r"Module<Ocr> sizes itself with min_replicas=3"):
        ro.Executor._on_backend(program, fake, {"CPU": 4})
