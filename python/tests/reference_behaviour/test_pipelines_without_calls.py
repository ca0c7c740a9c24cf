"""A pipeline with no Call (forward returns its sources, or a filter of them) finishes: its
outputs follow from the sources, on every executor (once, every run of at least one row
waited forever for an actor that no such pipeline has)."""

from __future__ import annotations

from typing import Any

import pytest

import rayorch_cpp as ro
from rayorch_cpp import F


class Same(ro.Pipeline):
    def forward(self, values: ro.Port) -> Any:
        return values


class Both(ro.Pipeline):
    def forward(self, values: ro.Port, keep: ro.Port) -> Any:
        return values, F.filter(values, keep)


@pytest.mark.parametrize("executor", [ro.SyncExecutor, ro.Executor])
def test_a_pipeline_that_returns_its_source(executor: Any) -> None:
    with executor(Same()) as ex:
        assert ex.run([3, 1, 2], input_batch_size=2).outputs == [3, 1, 2]
        assert ex.run([]).outputs == []
        again = ex.run(iter(range(5)), input_batch_size=2, max_active_input_batches=2)
    assert again.outputs == [0, 1, 2, 3, 4]
    assert again.rpc_count == 0


def test_a_filter_of_the_sources_by_a_source_column() -> None:
    result = ro.run(Both(), ["a", "b", "c"], [True, False, True], input_batch_size=1)
    dropped = ro.OutputIssue(ro.ItemOutcome.DROPPED)
    assert result.outputs == (["a", "b", "c"], ["a", dropped, "c"])


def test_rows_are_delivered_and_streamed() -> None:
    rows: list[tuple[int, Any]] = []
    with ro.Executor(Same()) as ex:
        ex.run([5, 6], on_row=lambda i, out: rows.append((i, out)))
        streamed = list(ex.stream([7, 8]))
    assert sorted(rows) == [(0, 5), (1, 6)]
    assert [out for _, out in sorted(streamed)] == [7, 8]
