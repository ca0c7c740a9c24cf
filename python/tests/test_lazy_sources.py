"""Lazy source columns (Executor.run, DESIGN 6.1.2): an iterable without a length is pulled row
by row as input batches are admitted, so the rows held are those of the active batches; its
outputs are those of the same rows in a list; columns that end apart, a source that raises,
the run journal and streaming."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rayorch_cpp as ro
from conftest import Children, Ident, make_executor
from rayorch_cpp import F


class Square:
    def run(self, xs: list[int]) -> list[int]:
        return [x * x for x in xs]


class Add:
    def run(self, a: list[int], b: list[int]) -> list[int]:
        return [x + y for x, y in zip(a, b)]


class Pulls:
    """A generator of 0..n-1 that records how many items were pulled, and on which thread."""

    def __init__(self, n: int, fail_at: int | None = None) -> None:
        self.n, self.fail_at = n, fail_at
        self.pulled = 0
        self.threads: set[int] = set()

    def __iter__(self) -> Iterator[int]:
        for i in range(self.n):
            if i == self.fail_at:
                raise KeyError(f"the source broke at item {i}")
            self.pulled += 1
            self.threads.add(threading.get_ident())
            yield i


def square() -> Any:
    module = ro.RayModule(Square).ray_options(batch_size=4)
    return lambda x: module(x)


def test_the_first_row_is_delivered_before_the_source_is_pulled_past_two_batches(
    executor_kind: str,
) -> None:
    source = Pulls(1000)
    pulled_at: dict[int, int] = {}
    with make_executor(executor_kind, square()) as ex:
        result = ex.run(
            iter(source),
            input_batch_size=10,
            max_active_input_batches=1,
            on_row=lambda i, _: pulled_at.__setitem__(i, source.pulled),
            progress=False,
        )
    assert pulled_at[0] <= 20
    # Every row is delivered while at most its own batch and the next one were pulled.
    assert all(pulled_at[i] <= (i // 10 + 2) * 10 for i in range(1000))
    assert source.pulled == 1000
    assert len(result.input_batches) == 100
    assert result.peak_active_input_batches == 1
    # Pulled on the thread that ran the run.
    assert source.threads == {threading.get_ident()}


def test_a_large_generator_gives_the_outputs_of_the_same_list() -> None:
    n = 100_000
    with ro.Executor(square()) as ex:
        lazy = ex.run((i for i in range(n)), input_batch_size=5000, max_active_input_batches=2)
        eager = ex.run(list(range(n)), input_batch_size=5000, max_active_input_batches=2)
    assert lazy.outputs == eager.outputs
    assert lazy.outputs[n - 1] == (n - 1) ** 2


def test_without_an_input_batch_size_a_lazy_source_is_cut_into_batches_of_1024() -> None:
    source = Pulls(3000)
    with ro.SyncExecutor(square()) as ex:
        result = ex.run(iter(source), progress=False)
    assert [b.rows for b in result.input_batches] == [1024, 1024, 952]
    assert result.outputs == [i * i for i in range(3000)]


@pytest.mark.parametrize(
    "columns",
    [
        lambda: [iter(range(5)), map(int, "0123456")],
        lambda: [list(range(5)), (i for i in range(3))],
        lambda: [(i for i in range(7)), iter(range(5))],
    ],
    ids=["second-longer", "second-shorter", "first-longer"],
)
def test_columns_that_end_apart_are_a_value_error_naming_the_column_and_row(
    executor_kind: str, columns: Any
) -> None:
    add = ro.RayModule(Add)
    with make_executor(executor_kind, lambda a, b: add(a, b)) as ex:
        a, b = columns()
        with pytest.raises(ValueError, match=r"not row-aligned: column (0|1) ended at row (3|5)"):
            ex.run(a, b, input_batch_size=2, progress=False)
        # The run stopped cleanly: the executor runs again.
        assert ex.run(iter([1, 2]), iter([3, 4]), progress=False).outputs == [4, 6]


def test_the_divergence_names_the_column_and_the_row() -> None:
    add = ro.RayModule(Add)
    with ro.SyncExecutor(lambda a, b: add(a, b)) as ex:
        with pytest.raises(ValueError) as error:
            ex.run(iter(range(5)), iter(range(8)), input_batch_size=2, progress=False)
    assert "column 0 ended at row 5 while column 1 goes on" in str(error.value)


def test_an_exception_from_the_source_aborts_the_run_after_the_work_in_flight(
    executor_kind: str,
) -> None:
    source = Pulls(100, fail_at=35)
    delivered: list[int] = []
    with make_executor(executor_kind, square()) as ex:
        with pytest.raises(KeyError, match="the source broke at item 35") as error:
            ex.run(
                iter(source),
                input_batch_size=10,
                on_row=lambda i, _: delivered.append(i),
                progress=False,
            )
        # The generator's own frame is in the traceback.
        frames = [entry.name for entry in error.traceback]
        assert "__iter__" in frames
        assert sorted(delivered) == list(range(30))  # the batches before the broken one
        assert not ex.closed
        assert ex.run(iter(range(3)), progress=False).outputs == [0, 1, 4]


def test_a_lazy_mask_column_must_hold_bools() -> None:
    ident = ro.RayModule(Ident)
    with ro.SyncExecutor(lambda x, keep: ident(F.filter(x, keep))) as ex:
        out = ex.run(iter([1, 2, 3]), iter([True, False, True]), progress=False).outputs
        assert out[0] == 1 and out[2] == 3 and isinstance(out[1], ro.OutputIssue)
        with pytest.raises(ValueError, match="row 1 is int"):
            ex.run(iter([1, 2]), iter([True, 0]), progress=False)


def test_a_lazy_source_expands_like_a_list() -> None:
    children = ro.RayModule(Children)
    ident = ro.RayModule(Ident).ray_options(batch_size=3)
    with ro.Executor(lambda n: F.reduce(ident(F.expand(children(n))))) as ex:
        lazy = ex.run(iter([3, 0, 2, 5]), input_batch_size=2, progress=False).outputs
    assert lazy == [[0, 1, 2], [], [0, 1], [0, 1, 2, 3, 4]]


def test_progress_gets_no_total_until_the_source_ended() -> None:
    seen: list[tuple[int, int | None]] = []
    with ro.SyncExecutor(square()) as ex:
        ex.run(
            (i for i in range(50)),
            input_batch_size=10,
            progress=lambda done, total: seen.append((done, total)),
        )
    assert seen[0][1] is None  # the first row: the source has not ended
    assert seen[-1] == (50, 50)


class Stop(Exception):
    pass


def test_a_journal_resumes_a_generator_source(executor_kind: str, tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    delivered: list[int] = []

    def stop_after_seven(index: int, _: Any) -> None:
        if len(delivered) == 7:
            raise Stop("interrupted")
        delivered.append(index)

    with make_executor(executor_kind, square()) as ex:
        with pytest.raises(Stop):
            ex.run(
                (i for i in range(30)),
                journal=path,
                input_batch_size=5,
                on_row=stop_after_seven,
                progress=False,
            )
        assert len(delivered) == 7
        source = Pulls(30)
        resumed = ex.run(iter(source), journal=path, input_batch_size=5, progress=False)
    assert resumed.roots_restored == 7
    assert resumed.outputs == [i * i for i in range(30)]
    assert source.pulled == 30
    # Restored rows are not run: 23 computed roots in batches of at most 5.
    assert sum(b.rows for b in resumed.input_batches) == 23


def test_a_journal_of_a_list_run_serves_a_generator_run(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    with ro.SyncExecutor(square()) as ex:
        ex.run(list(range(10)), journal=path, progress=False)
        again = ex.run((i for i in range(12)), journal=path, progress=False)
    # The same rows have the same keys whether listed or generated.
    assert again.roots_restored == 10
    assert again.outputs == [i * i for i in range(12)]


def test_a_list_run_over_a_journal_a_generator_run_began_needs_allow_other_inputs(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.journal"
    with ro.SyncExecutor(square()) as ex:
        ex.run((i for i in range(6)), journal=path, progress=False)
        # The generator's rows were not digested before the run: the inputs cannot be told.
        with pytest.raises(ValueError, match="allow_other_inputs"):
            ex.run(list(range(6)), journal=path, progress=False)
        again = ex.run(
            list(range(6)), journal=ro.Journal(str(path), allow_other_inputs=True), progress=False
        )
    assert again.roots_restored == 6


def test_stream_pulls_a_generator_on_its_background_thread() -> None:
    source = Pulls(40)
    with ro.Executor(square()) as ex:
        rows = dict(ex.stream(iter(source), input_batch_size=8, progress=False))
    assert rows == {i: i * i for i in range(40)}
    assert threading.get_ident() not in source.threads


def test_sized_columns_are_read_whole_as_before() -> None:
    with ro.SyncExecutor(square()) as ex:
        result = ex.run(range(5), progress=False)  # a range has a length: one batch
        assert [b.rows for b in result.input_batches] == [5]
    add = ro.RayModule(Add)
    with ro.SyncExecutor(lambda a, b: add(a, b)) as ex:
        with pytest.raises(ValueError, match="column 0 has 2 rows but column 1 has 3"):
            ex.run([1, 2], [1, 2, 3], progress=False)


class FailOdd:
    """x -> x + 1; odd x fail."""

    def run(self, xs: list[int]) -> list[Any]:
        return [ro.RecordFailure(f"odd {x}") if x % 2 else x + 1 for x in xs]


def test_entity_keys_and_dead_letters_name_the_pulled_rows_also_after_a_resume(
    tmp_path: Path,
) -> None:
    path, dead = tmp_path / "run.journal", tmp_path / "dead.jsonl"
    fail_odd = ro.RayModule(FailOdd)
    with ro.SyncExecutor(lambda x: fail_odd(x)) as ex:
        first = ex.run((i for i in range(12)), journal=path, input_batch_size=5, progress=False)
        # The failed (odd) rows run again, between restored even rows.
        out = ex.run(
            (i for i in range(12)),
            journal=path,
            dead_letters=dead,
            input_batch_size=5,
            progress=False,
        )
    assert out.roots_restored == 6
    assert out.outputs == first.outputs
    letters = {j["row"]: j for j in map(json.loads, dead.read_text().splitlines())}
    assert sorted(letters) == [1, 3, 5, 7, 9, 11]
    for row, letter in letters.items():
        issue = out.outputs[row]
        assert isinstance(issue, ro.OutputIssue) and issue.origin is not None
        assert issue.origin.entity == str(row)
        assert letter["entity"] == str(row) and letter["restored"] is False
        assert len(letter["key"]) == 16  # the digest of the pickled source value


def test_ordered_delivery_of_a_generator_is_in_source_order() -> None:
    order: list[int] = []
    with ro.Executor(square()) as ex:
        ex.run(
            (i for i in range(200)),
            input_batch_size=16,
            max_active_input_batches=3,
            on_row=lambda i, _: order.append(i),
            ordered=True,
            progress=False,
        )
    assert order == list(range(200))


def test_a_spent_error_budget_stops_pulling_the_source() -> None:
    source = Pulls(1000)
    fail_odd = ro.RayModule(FailOdd)
    with ro.SyncExecutor(lambda x: fail_odd(x)) as ex:
        with pytest.raises(ro.ExecutionError, match="error budget exceeded") as error:
            ex.run(iter(source), input_batch_size=10, max_failed_roots=3, progress=False)
    # The fourth failure is in the first batch: no further batch was admitted or pulled.
    assert source.pulled == 10
    assert error.value.partial is not None
    assert len(error.value.partial.outputs) == 10
