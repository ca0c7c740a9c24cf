"""Executors: shared pools, parallel replicas, streaming, metrics, files, misuse."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import rayorch_cpp as ro
from conftest import Children, Ident, make_executor
from rayorch_cpp import F

_lock = threading.Lock()


class Built:
    """Counts its constructions."""

    count = 0

    def __init__(self) -> None:
        with _lock:
            Built.count += 1

    def run(self, xs: list[Any], *, tag: str = "") -> list[Any]:
        return [f"{tag}{x}" for x in xs]


@pytest.fixture(autouse=True)
def _reset() -> None:
    Built.count = 0
    Sleepy.spans = []


def test_one_module_used_twice_shares_one_pool(executor_kind: str) -> None:
    shared = ro.RayModule(Built).ray_options(replicas=2)
    ex = make_executor(executor_kind, lambda x: shared(shared(x, tag="a"), tag="b"))
    expected_actors = 2 if executor_kind == "local" else 1
    result = ex.run([1, 2])
    assert result.outputs == ["ba1", "ba2"]
    assert [c.call for c in result.calls] == ["Built#0", "Built#1"]
    assert result.actor_count == expected_actors
    ex.run([3])  # actors are reused across runs
    # Closing waits for constructors still running (the local executor starts its actors in
    # the background): one pool's actors were built, once each.
    ex.close()
    assert Built.count == expected_actors


def test_two_modules_get_two_pools(executor_kind: str) -> None:
    first = ro.RayModule(Built).ray_options(replicas=2)
    second = ro.RayModule(Built).ray_options(replicas=2)
    make_executor(executor_kind, lambda x: second(first(x))).close()
    assert Built.count == (4 if executor_kind == "local" else 2)


class Sleepy:
    """Sleeps (releasing the GIL) and logs when each call started and ended."""

    spans: list[tuple[float, float]] = []

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def run(self, xs: list[Any]) -> list[Any]:
        start = time.monotonic()
        time.sleep(self.seconds)
        end = time.monotonic()
        with _lock:
            Sleepy.spans.append((start, end))
        return list(xs)


def test_udfs_that_release_the_gil_run_in_parallel_across_replicas() -> None:
    sleepy = ro.RayModule(Sleepy).pre_init(0.2).ray_options(replicas=4, batch_size=1)
    with ro.Executor(lambda x: sleepy(x)) as ex:
        assert ex.run([1, 2, 3, 4]).outputs == [1, 2, 3, 4]
    assert len(Sleepy.spans) == 4
    # All four calls were inside run() at one moment: the latest start precedes the
    # earliest end.
    assert max(s for s, _ in Sleepy.spans) < min(e for _, e in Sleepy.spans)


def test_one_replica_runs_its_calls_one_after_another() -> None:
    sleepy = ro.RayModule(Sleepy).pre_init(0.02).ray_options(replicas=1, batch_size=1)
    with ro.Executor(lambda x: sleepy(x)) as ex:
        ex.run([1, 2, 3])
    spans = sorted(Sleepy.spans)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


class Page:
    """Page `slow` takes a while; the others are instant."""

    finished: list[str] = []

    def run(self, pages: list[str]) -> list[str]:
        for p in pages:
            if p.startswith("long"):
                time.sleep(0.4)
        with _lock:
            Page.finished.extend(pages)
        return [p.upper() for p in pages]


class Pages:
    def run(self, docs: list[str]) -> list[list[str]]:
        return [[f"{d}/{i}" for i in range(2 if d == "long" else 1)] for d in docs]


def streaming_pipeline() -> Any:
    pages = ro.RayModule(Pages)
    page = ro.RayModule(Page).ray_options(replicas=3, batch_size=1)
    return lambda d: F.reduce(page(F.expand(pages(d))))


def test_streaming_delivers_a_short_document_while_a_long_one_runs() -> None:
    Page.finished = []
    seen: list[tuple[int, Any, int]] = []
    with ro.Executor(streaming_pipeline()) as ex:
        result = ex.run(
            ["long", "short"],
            on_row=lambda i, out: seen.append(
                (i, out, sum(p.startswith("long") for p in Page.finished))
            ),
        )
    assert result.outputs is None
    assert [s[0] for s in seen] == [1, 0]
    assert seen[0][1] == ["SHORT/0"] and seen[0][2] == 0  # no long page had finished yet
    assert seen[1][1] == ["LONG/0", "LONG/1"]


def test_stream_iterator_and_ordered_delivery() -> None:
    Page.finished = []
    with ro.Executor(streaming_pipeline()) as ex:
        rows = list(ex.stream(["long", "short", "short"]))
        assert sorted(i for i, _ in rows) == [0, 1, 2]
        assert rows[-1][0] == 0
        ordered: list[int] = []
        ex.run(["long", "short"], on_row=lambda i, _: ordered.append(i), ordered=True)
        assert ordered == [0, 1]


def test_stream_consumer_stopping_early_keeps_the_executor() -> None:
    ex = ro.Executor(lambda x: ro.RayModule(Ident)(x))
    for _ in ex.stream(list(range(100)), input_batch_size=1):
        break
    assert not ex.closed
    assert ex.run([1, 2]).outputs == [1, 2]


def test_an_exception_in_the_row_callback_propagates(executor_kind: str) -> None:
    ex = make_executor(executor_kind, lambda x: ro.RayModule(Ident)(x))

    def explode(i: int, out: Any) -> None:
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        ex.run([1, 2], on_row=explode)
    assert not ex.closed  # an aborted run keeps the executor


def test_values_travel_by_reference(executor_kind: str) -> None:
    payload = object()
    ident = ro.RayModule(Ident)
    with make_executor(executor_kind, lambda x: F.reduce(F.expand(ident(x)))) as ex:
        out = ex.run([[payload]]).outputs
    assert out[0][0] is payload


def test_metrics_input_batches_and_files(tmp_path: Path) -> None:
    ident = ro.RayModule(Ident).ray_options(batch_size=2, replicas=2)
    trace, report = tmp_path / "trace.json", tmp_path / "report.json"
    with ro.Executor(lambda x: ident(x)) as ex:
        result = ex.run(
            list(range(5)),
            input_batch_size=2,
            max_active_input_batches=2,
            trace=str(trace),
            report=str(report),
            progress=False,
        )
    assert result.outputs == list(range(5))
    assert [b.rows for b in result.input_batches] == [2, 2, 1]
    assert 1 <= result.peak_active_input_batches <= 2
    assert result.calls[0].grain_dispatches == 5 and result.calls[0].actor_instances == 2
    assert result.roots_by_outcome == {"present": 5}
    assert len(result.root_completed_s) == 5
    assert "traceEvents" in json.loads(trace.read_text())
    assert json.loads(report.read_text())


def test_metrics_count_each_expansions_children_per_parent() -> None:
    ident = ro.RayModule(Ident).ray_options(batch_size=2, replicas=1)
    source = [[1], [2, 3, 4], [], [5, 6, 7]]
    with ro.Executor(lambda x: F.reduce(ident(F.expand(ident(x))))) as ex:
        result = ex.run(source, input_batch_size=2, progress=False)
    assert [len(r) for r in result.outputs] == [1, 3, 0, 3]
    (expand,) = result.expands
    assert (expand.call, expand.parents, expand.children) == ("Ident#0", 4, 7)
    assert expand.fan_out_histogram == {0: 1, 1: 1, 3: 2}


def test_misaligned_or_missing_columns_raise(executor_kind: str) -> None:
    ident = ro.RayModule(Ident)
    with make_executor(executor_kind, lambda x, y: ident(x, y=y)) as ex:
        with pytest.raises(ValueError, match="not row-aligned"):
            ex.run([1, 2], [1])
        with pytest.raises(ValueError, match="2 source columns but 1"):
            ex.run([1, 2])
        with pytest.raises(TypeError):
            ex.run([1], 5)
        assert not ex.closed


def test_empty_input(executor_kind: str) -> None:
    with make_executor(executor_kind, lambda x: ro.RayModule(Ident)(x)) as ex:
        assert ex.run([]).outputs == []


def test_one_run_at_a_time_per_executor(executor_kind: str) -> None:
    ex = make_executor(executor_kind, lambda x: ro.RayModule(Ident)(x))

    def reenter(i: int, out: Any) -> None:
        ex.run([1])

    with pytest.raises(ro.ExecutionError, match="already in progress"):
        ex.run([1, 2], on_row=reenter)

    ex2 = make_executor(executor_kind, lambda x: ro.RayModule(Ident)(x))

    def close_inside(i: int, out: Any) -> None:
        ex2.close()

    with pytest.raises(ro.ExecutionError, match="while run\\(\\) is in progress"):
        ex2.run([1], on_row=close_inside)


def test_wire_protocol_sync_core_gives_the_same_outputs() -> None:
    split, ident = ro.RayModule(Children), ro.RayModule(Ident).ray_options(batch_size=3)

    def forward(x: ro.Port) -> tuple[ro.Port, ro.Port]:
        child = F.expand(split(x))
        return F.reduce(ident(child)), ident(x)

    data = [[1, 2, 3], [], [4]]
    with ro.SyncExecutor(forward, wire=True) as ex:
        assert ex.run(data).outputs == ([[1, 2, 3], [], [4]], data)
    with ro.SyncExecutor(forward) as ex:
        rows: list[tuple[int, Any]] = []
        ex.run(data, on_row=lambda i, out: rows.append((i, out)))
    assert sorted(rows) == [(0, ([1, 2, 3], [1, 2, 3])), (1, ([], [])), (2, ([4], [4]))]


def test_progress_callback_reports_finished_rows(executor_kind: str) -> None:
    seen: list[tuple[int, int]] = []
    sleepy = ro.RayModule(Sleepy).pre_init(0.0)
    with make_executor(executor_kind, lambda x: sleepy(x)) as ex:
        result = ex.run(list(range(30)), progress=lambda done, total: seen.append((done, total)))
    assert result.outputs == list(range(30))
    assert seen and seen[-1] == (30, 30)
    assert all(total == 30 for _, total in seen)
    assert [d for d, _ in seen] == sorted({d for d, _ in seen})

    def stop(done: int, total: int) -> None:
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        make_executor(executor_kind, lambda x: sleepy(x)).run([1, 2], progress=stop)
