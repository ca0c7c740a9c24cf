"""The pipeline the Ray pools' tests drive through FakeRay (test_ray_pools.py,
test_ray_pools_losses.py): documents expanded into pages, pages recognised in batches on two
actors, gathered per document and filtered; the synchronous core's outputs are the oracle."""

from __future__ import annotations

import random
from typing import Any

from fake_ray import FakeRay

import rayorch_cpp as ro
from rayorch_cpp import F


class Pages:
    def run(self, docs: list[int]) -> list[list[int]]:
        return [[d * 10 + i for i in range(d % 4)] for d in docs]


class Ocr:
    def run(self, pages: list[int]) -> list[Any]:
        return [ro.RecordFailure(f"bad {p}") if p == 52 else f"t{p}" for p in pages]


class Join:
    def run(self, groups: list[list[str]], docs: list[int]) -> list[str]:
        return [f"{d}:" + ",".join(g) for g, d in zip(groups, docs)]


class Even:
    def run(self, texts: list[str]) -> list[bool]:
        return [len(t) % 2 == 0 for t in texts]


def pipeline(
    timeout: float | None = None, ocr_batch: int = 2, join_batch: int = 2, infra: int = 1
) -> Any:
    pages = ro.Module(Pages, batch_size=3, infra_retries=infra)
    ocr = ro.Module(Ocr, replicas=2, batch_size=ocr_batch, timeout=timeout, infra_retries=infra)
    join = ro.Module(Join, batch_size=join_batch, infra_retries=infra)
    even = ro.Module(Even, infra_retries=infra)

    def forward(docs: ro.Port) -> Any:
        md = join(F.reduce(ocr(F.expand(pages(docs)))), docs)
        return F.filter(md, even(md))

    return forward


DOCS = list(range(12))


def expected(**shape: int) -> Any:
    with ro.SyncExecutor(pipeline(**shape)) as ex:
        return ex.run(DOCS).outputs


def run_on(
    fake_faults: dict[int, str] | None = None,
    tasks_in_flight: list[int] | None = None,
    shuffle: random.Random | None = None,
    shape: dict[str, int] | None = None,
    **run: Any,
) -> tuple[Any, FakeRay, Any]:
    program = ro.compile(pipeline(**(shape or {})))
    fake = FakeRay(program, fake_faults, tasks_in_flight, shuffle)
    with ro.Executor._on_backend(program, fake) as ex:
        result = ex.run(DOCS, progress=False, **run)
    assert fake.stopped
    return result.outputs, fake, result
