"""Co-located pools on the Ray backend's worker pools (python/src/ray_pools.cc, DESIGN 5.12),
driven through the in-process stand-in for Ray (fake_ray.py): an output that only Calls of
its own co-located pool read stays in the actor that made it, the next Call goes to that
actor where it is idle, a reader elsewhere gets it exported, and one lost with its actor is
rebuilt from lineage; the outputs are always those of the pipeline without co-location."""

from __future__ import annotations

import random
from typing import Any

from fake_ray import FakeRay
from pools_rig import Ocr, Pages

import rayorch_cpp as ro
from rayorch_cpp import F

DOCS = list(range(16))


class Clean:
    def run(self, texts: list[str]) -> list[str]:
        return [t.upper() for t in texts]


class Join:
    def run(self, groups: list[list[str]], docs: list[int]) -> list[str]:
        return [f"{d}:" + ",".join(g) for g, d in zip(groups, docs)]


def pipeline(colocate: str | None = "page", replicas: int = 2) -> Any:
    pages = ro.Module(Pages, batch_size=3)
    ocr = ro.Module(Ocr, replicas=replicas, batch_size=2, colocate=colocate)
    clean = ro.Module(Clean, replicas=replicas, batch_size=3, colocate=colocate)
    join = ro.Module(Join, batch_size=2)

    def forward(docs: ro.Port) -> Any:
        return join(F.reduce(clean(ocr(F.expand(pages(docs))))), docs)

    return forward


def expected() -> Any:
    with ro.SyncExecutor(pipeline(colocate=None)) as ex:
        return ex.run(DOCS).outputs


def run_on(
    faults: dict[int, str] | None = None, shuffle: random.Random | None = None, **shape: Any
) -> tuple[Any, FakeRay, Any]:
    program = ro.compile(pipeline(**shape))
    fake = FakeRay(program, faults, shuffle=shuffle)
    with ro.Executor._on_backend(program, fake) as ex:
        result = ex.run(DOCS, progress=False)
    assert fake.stopped
    return result.outputs, fake, result


def test_the_pool_is_shared_and_the_outputs_are_those_without_co_location() -> None:
    program = ro.compile(pipeline())
    assert [p["name"] for p in program.native.pools()] == ["Pages", "Ocr+Clean", "Join"]
    assert "co-located pool Ocr+Clean: Ocr#1, Clean#2" in program.explain()
    out, fake, _ = run_on()
    assert out == expected()
    # Every OCR output stayed in its actor (Clean alone reads it); the driver fetched the
    # final outputs only.
    assert fake.kept_returns > 0
    assert 0 < fake.fetched <= len(DOCS)


def test_with_one_actor_nothing_is_exported() -> None:
    out, fake, _ = run_on(replicas=1)
    assert out == expected()
    assert fake.kept_returns > 0
    assert fake.exports == []


def test_in_any_order_of_reports_the_outputs_are_the_same_and_readers_elsewhere_export() -> None:
    exports = 0
    for seed in range(30):
        out, fake, _ = run_on(shuffle=random.Random(seed))
        assert out == expected(), seed
        # An export comes from the actor that keeps the block, for a call sent elsewhere.
        for pool, actor, _block in fake.exports:
            assert pool == 1 and actor in (0, 1)
        exports += len(fake.exports)
    assert exports > 0


def test_a_value_lost_with_its_actor_is_rebuilt_and_nothing_else_changes() -> None:
    rebuilt = 0
    for call in range(4, 20):
        out, fake, result = run_on(faults={call: "lost"})
        assert out == expected(), call
        if fake.replaced and fake.replaced[0][0] == 1:
            rebuilt += result.values_rebuilt
    assert rebuilt > 0
