"""Gathers of gathers: a reduce of a reduce over two expand levels gives, per root, its
children's groups of grandchildren, as an output and as the input of a Call; empty groups
stay empty lists. (On the Ray backend this shape once crashed the driver: the Ray suite's
cases_ray_results.py runs it there.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import rayorch_cpp as ro
from rayorch_cpp import F


class Unwrap:
    """A list value stays a list (for F.expand)."""

    def run(self, xs: list[Any]) -> list[Any]:
        return [list(x) for x in xs]


class Keep:
    def run(self, xs: list[Any]) -> list[bool]:
        return [True for _ in xs]


class Describe:
    """Reads nested groups: the value a Call sees is the nested list itself."""

    def run(self, groups: list[Any]) -> list[str]:
        return [repr(g) for g in groups]


class NestedGather(ro.Pipeline):
    """root -> documents -> pages; pages gathered per document, documents per root."""

    def __init__(self, batch_size: int = 2) -> None:
        self.unwrap = ro.RayModule(Unwrap).ray_options(batch_size=batch_size, replicas=2)
        self.describe = ro.RayModule(Describe).ray_options(batch_size=batch_size)

    def forward(self, roots: ro.Port) -> Any:
        documents = F.expand(self.unwrap(roots))
        pages = F.expand(self.unwrap(documents))
        gathered = F.reduce(F.reduce(pages))
        return gathered, self.describe(gathered)


class NestedFilteredGather(ro.Pipeline):
    """Three expand levels, a filter in between, and a gather of gathers of the filtered
    groups, as an output and read by a Call."""

    def __init__(self) -> None:
        self.unwrap = ro.RayModule(Unwrap)
        self.keep = ro.RayModule(Keep)

    def forward(self, roots: ro.Port) -> Any:
        documents = F.expand(self.unwrap(roots))
        pages = F.expand(self.unwrap(documents))
        regions = F.expand(self.unwrap(pages))
        selected = F.filter(F.reduce(regions), self.keep(pages))
        collected = F.reduce(F.reduce(selected))
        return collected, self.unwrap(collected)


ROOTS = [[], [[], [1, 2]], [[3], [], [4, 5, 6]], [[7]]]
NESTED = [[], [[], [[1]]], [[[]], [[2], [3]]]]


def test_a_gather_of_gathers_is_the_nested_groups_as_output_and_as_call_input(
    executor_of_each_kind: Callable[[Any], Any],
) -> None:
    with executor_of_each_kind(NestedGather()) as ex:
        result = ex.run(ROOTS, input_batch_size=2, max_active_input_batches=2, progress=False)
    assert result.outputs == (ROOTS, [repr(r) for r in ROOTS])


def test_a_gather_of_filtered_gathers_over_three_levels() -> None:
    result = ro.run(NestedFilteredGather(), NESTED, input_batch_size=1, max_active_input_batches=2)
    assert result.outputs == (NESTED, NESTED)
