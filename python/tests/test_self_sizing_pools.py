"""Self-sizing pools on the local backend (docs/DESIGN.md 6.1.7):
``replicas="auto"`` pools start and retire actors within the executor's budget; no row is
lost or computed twice (counts from the UDFs' own logs); misuse is a clear error naming the
Module. Order comes from gates and logs, never from durations."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from pathlib import Path

import pytest

import rayorch_cpp as ro


class Seen:
    """Every value the actors of one Module saw, with repeats, and their constructors."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: Counter[int] = Counter()
        self.built = 0

    def add(self, xs: list[int]) -> None:
        with self.lock:
            self.values.update(xs)

    def constructed(self) -> None:
        with self.lock:
            self.built += 1


class Shift:
    def __init__(self, seen: Seen, by: int) -> None:
        self.seen = seen
        self.by = by
        seen.constructed()

    def run(self, xs: list[int]) -> list[int]:
        self.seen.add(xs)
        return [x + self.by for x in xs]


class Broken:
    def __init__(self) -> None:
        raise RuntimeError("weights missing")

    def run(self, xs: list[int]) -> list[int]:
        return xs


def test_auto_pools_compute_every_row_once_and_report_their_decisions(tmp_path: Path) -> None:
    first, second = Seen(), Seen()
    a = ro.Module(Shift, replicas="auto", max_replicas=4).pre_init(first, 1000)
    b = ro.Module(Shift, replicas="auto", min_replicas=1, max_replicas=3).pre_init(second, 1)
    rows = list(range(300))
    report = tmp_path / "report.json"
    with ro.Executor(lambda x: b(a(x)), budget={"CPU": 8}) as ex:
        result = ex.run(rows, progress=False, report=str(report), input_batch_size=50)
    assert result.outputs == [x + 1001 for x in rows]
    assert first.values == Counter(rows)
    assert second.values == Counter(x + 1000 for x in rows)
    pools = {p.pool: p for p in result.pools}
    assert set(pools) == {"Shift/0", "Shift/1"}
    for p in pools.values():
        assert p.actors_over_time, p
        assert all(0 <= n <= 4 for _, n in p.actors_over_time)
        for r in p.resizes:
            assert r.reason
    # The second Module starts each run with at least its minimum.
    assert pools["Shift/1"].actors_over_time[0][1] >= 1
    doc = json.loads(report.read_text())
    assert "actors_over_time" in doc["pools"][0]


def test_random_resizes_lose_and_duplicate_no_row() -> None:
    first, second = Seen(), Seen()
    a = ro.Module(Shift, replicas="auto", max_replicas=3, batch_size=2).pre_init(first, 1)
    b = ro.Module(Shift, replicas="auto", max_replicas=2, batch_size=3).pre_init(second, 1)
    rows = list(range(400))
    with ro.Executor(lambda x: b(a(x)), budget={"CPU": 8}, _random_resize_seed=11) as ex:
        result = ex.run(rows, progress=False, input_batch_size=40, max_active_input_batches=2)
    assert result.outputs == [x + 2 for x in rows]
    assert first.values == Counter(rows)
    assert second.values == Counter(x + 1 for x in rows)


def test_an_auto_pool_whose_every_actor_fails_names_the_module() -> None:
    m = ro.Module(Broken, replicas="auto", max_replicas=2)
    with ro.Executor(lambda x: m(x), budget={"CPU": 4}) as ex:
        with pytest.raises(ro.ExecutionError, match=r"no actor of Module<Broken> could start"):
            ex.run([1, 2, 3], progress=False)


def test_a_minimum_that_cannot_fit_the_budget_names_the_module_and_the_holders() -> None:
    seen = Seen()
    render = ro.Module(Shift, replicas=1, num_gpus=1).pre_init(seen, 0)
    ocr = ro.Module(Shift, replicas="auto", min_replicas=2, num_gpus=1).pre_init(seen, 0)
    with pytest.raises(ro.ExecutionError) as err:
        ro.Executor(lambda x: ocr(render(x)), budget={"CPU": 8, "GPU": 2})
    text = str(err.value)
    assert "sizes itself with min_replicas=2" in text
    assert "the budget's GPU: 1 of 2 in use by 'Shift/0' (1)" in text


def test_misused_sizing_options_are_clear_errors() -> None:
    seen = Seen()
    fixed = ro.Module(Shift, replicas=2, max_replicas=4).pre_init(seen, 0)
    with pytest.raises(ro.CompileError, match="apply to a self-sizing pool only"):
        ro.compile(lambda x: fixed(x))
    wrong = ro.Module(Shift, replicas="many").pre_init(seen, 0)
    with pytest.raises(ro.CompileError, match="an integer or 'auto'"):
        ro.compile(lambda x: wrong(x))
    upside_down = ro.Module(Shift, replicas="auto", min_replicas=3, max_replicas=2)
    with pytest.raises(ro.CompileError, match=r"min_replicas \(3\) is above max_replicas \(2\)"):
        ro.compile(lambda x: upside_down.pre_init(seen, 0)(x))
    auto = ro.Module(Shift, replicas="auto").pre_init(seen, 0)
    with pytest.raises(ValueError, match="budget\\['GPU'\\] must be a number >= 0"):
        ro.Executor(lambda x: auto(x), budget={"GPU": -1})


class Where:
    def __init__(self) -> None:
        self.context = ro.replica_context()

    def run(self, xs: list[int]) -> list[tuple[int, int]]:
        return [(self.context.index, self.context.replicas) for _ in xs]


def test_an_auto_pool_without_a_maximum_numbers_its_replicas_over_one_slot_per_cpu() -> None:
    # max_replicas defaults to the machine's CPU count: replica_context() must count those
    # slots (not 1), so that replicas that start get distinct indices and devices.
    slots = max(1, os.cpu_count() or 1)
    where = ro.Module(Where, replicas="auto")
    with ro.Executor(lambda x: where(x)) as ex:
        seen = ex.run(list(range(64)), progress=False).outputs
    assert {replicas for _, replicas in seen} == {slots}
    assert all(0 <= index < slots for index, _ in seen)
