"""The run journal, error budget and dead letters through the Python API (docs/JOURNAL.md)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

import rayorch_cpp as ro
from conftest import make_executor
from rayorch_cpp import F

_lock = threading.Lock()


class Split:
    """n -> [n*10, .., n*10 + n % 3]."""

    def run(self, ns: list[int]) -> list[list[int]]:
        return [[n * 10 + k for k in range(n % 3 + 1)] for n in ns]


class Work:
    """Counts the calls per root; roots with n % 10 < fail fail."""

    calls: dict[int, int] = {}
    fail = 0

    def run(self, xs: list[int]) -> list[Any]:
        out: list[Any] = []
        for x in xs:
            root = x // 10
            with _lock:
                Work.calls[root] = Work.calls.get(root, 0) + 1
            if root % 10 < Work.fail:
                out.append(ro.RecordFailure(f"bad root {root}"))
            else:
                out.append({"square": x * x})  # any picklable value
        return out


@pytest.fixture(autouse=True)
def _reset() -> None:
    Work.calls = {}
    Work.fail = 0


def pipeline() -> Any:
    split = ro.RayModule(Split)
    work = ro.RayModule(Work).ray_options(batch_size=3)
    return lambda n: F.reduce(work(F.expand(split(n))))


def test_a_finished_journal_restores_every_root_without_running(
    executor_kind: str, tmp_path: Path
) -> None:
    path = tmp_path / "run.journal"
    with make_executor(executor_kind, pipeline()) as ex:
        first = ex.run(list(range(12)), journal=path, input_batch_size=4)
    assert first.roots_restored == 0
    assert sorted(Work.calls) == list(range(12))
    Work.calls = {}
    with make_executor(executor_kind, pipeline()) as ex:
        again = ex.run(list(range(12)), journal=str(path), input_batch_size=4)
        assert again.outputs == first.outputs
        assert again.roots_restored == 12
        assert again.roots_by_outcome == {"present": 12}
        assert Work.calls == {}
        # Streaming delivers the restored rows too, each once, and progress counts them.
        rows: list[int] = []
        seen: list[tuple[int, int]] = []
        ex.run(
            list(range(12)),
            journal=path,
            on_row=lambda i, _: rows.append(i),
            progress=lambda done, total: seen.append((done, total)),
        )
        assert sorted(rows) == list(range(12))
        assert seen[-1] == (12, 12)


def test_resume_runs_only_unrecorded_and_failed_roots(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    journal = ro.Journal(str(path), key=lambda row: f"row-{row}", allow_other_inputs=True)
    Work.fail = 2
    ex = ro.SyncExecutor(pipeline())
    ex.run(list(range(6)), journal=journal)
    Work.calls = {}
    out = ex.run(list(range(12)), journal=journal)
    # Rows 0-5 are recorded; 0 and 1 failed and run again, as do the new rows 6-11.
    assert out.roots_restored == 4
    assert sorted(Work.calls) == [0, 1, 6, 7, 8, 9, 10, 11]
    assert isinstance(out.outputs[0], ro.OutputIssue)
    assert out.outputs[5] == [{"square": 2500}, {"square": 2601}, {"square": 2704}]
    # Failed roots restored too when told.
    Work.calls = {}
    kept = ex.run(
        list(range(12)),
        journal=ro.Journal(str(path), key=lambda row: f"row-{row}", retry_failed=False),
    )
    assert kept.roots_restored == 12 and Work.calls == {}
    assert kept.outputs[1].cause == "bad root 1"


def test_a_resumed_run_tells_restored_rows_from_computed_ones(
    executor_kind: str, tmp_path: Path
) -> None:
    journal = ro.Journal(str(tmp_path / "run.journal"), allow_other_inputs=True)
    with make_executor(executor_kind, pipeline()) as ex:
        ex.run(list(range(6)), journal=journal)
        computed: list[int] = []
        restored: list[int] = []
        for ordered in (False, True):
            computed.clear()
            restored.clear()
            ex.run(
                list(range(10)),
                journal=journal,
                ordered=ordered,
                on_row=lambda i, _: computed.append(i),
                on_restored_row=lambda i, _: restored.append(i),
                progress=False,
            )
            # Rows 6-9 are new in the first pass; every row is recorded finished in the second.
            assert sorted(restored) == list(range(10 if ordered else 6)), ordered
            assert sorted(computed) == ([] if ordered else [6, 7, 8, 9]), ordered
        # A stream says which rows were restored, and hands over the run's result at its end.
        rows = ex.stream(list(range(12)), journal=journal, progress=False)
        assert rows.result is None
        seen = {i: out for i, out in rows}
        assert sorted(seen) == list(range(12))
        assert rows.restored_rows == set(range(10))
        assert seen[11] == [{"square": 12100}, {"square": 12321}, {"square": 12544}]
        assert rows.result is not None and rows.result.roots_restored == 10
        assert rows.result.outputs is None
        assert sum(c.grain_dispatches for c in rows.result.calls if c.call.startswith("Work"))
        with pytest.raises(ValueError, match="on_restored_row .* pass on_row too"):
            ex.run([1], journal=journal, on_restored_row=lambda i, _: None)
        with pytest.raises(TypeError, match="on_row is run"):
            ex.stream([1], on_row=lambda i, _: None)


def test_a_foreign_journal_and_an_unwritable_path_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    ro.SyncExecutor(pipeline()).run([1, 2, 3], journal=path)
    other = ro.SyncExecutor(lambda n: ro.RayModule(Split)(n))
    with pytest.raises(ValueError, match="another pipeline"):
        other.run([1, 2, 3], journal=path)
    with pytest.raises(ValueError, match="other inputs"):
        ro.SyncExecutor(pipeline()).run([1, 2, 4], journal=path)
    forced = ro.SyncExecutor(pipeline()).run([1, 2, 4], journal=ro.Journal(str(path), force=True))
    assert forced.roots_restored == 2
    with pytest.raises(ValueError, match="cannot be opened"):
        ro.SyncExecutor(pipeline()).run([1], journal=tmp_path / "missing" / "run.journal")
    with pytest.raises(TypeError, match="must return a str"):
        ro.SyncExecutor(pipeline()).run([1], journal=ro.Journal(str(path), key=lambda r: r))  # type: ignore[arg-type,return-value]


def test_a_torn_tail_is_cut_and_its_roots_run_again(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    ex = ro.SyncExecutor(pipeline())
    ex.run(list(range(8)), journal=path)
    data = path.read_bytes()
    path.write_bytes(data[:-5])  # the last record loses its end
    Work.calls = {}
    again = ex.run(list(range(8)), journal=path)
    assert again.roots_restored == 7
    assert again.journal_discarded_bytes > 0
    assert len(Work.calls) == 1


def test_error_budget_stops_a_run_where_thirty_percent_fail(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    Work.fail = 3
    delivered: list[int] = []
    ex = ro.SyncExecutor(pipeline())
    with pytest.raises(ro.ExecutionError, match="error budget exceeded") as info:
        ex.run(
            list(range(200)),
            input_batch_size=4,
            journal=ro.Journal(str(path), key=lambda row: f"row-{row}"),
            max_failed_roots=5,
            on_row=lambda i, _: delivered.append(i),
        )
    assert "bad root" in str(info.value)
    assert 6 <= len(delivered) < 200  # spent only past its limit of five
    # The journal holds exactly the delivered roots: a rerun restores the finished ones.
    Work.fail = 0
    Work.calls = {}
    rerun = ro.SyncExecutor(pipeline()).run(
        list(range(200)), journal=ro.Journal(str(path), key=lambda row: f"row-{row}")
    )
    finished = [i for i in delivered if i % 10 >= 3]
    assert rerun.roots_restored == len(finished)
    assert not set(Work.calls) & set(finished)
    with pytest.raises(ValueError, match="max_failed_roots"):
        ex.run([1], max_failed_roots=-1)


def test_entity_keys_stay_the_source_rows_after_a_resume(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    dead = tmp_path / "dead.jsonl"
    Work.fail = 3
    ex = ro.SyncExecutor(pipeline())
    ex.run(list(range(30)), journal=path)
    # Only the failed roots run again, as rows 0..8 of the resumed run.
    out = ex.run(list(range(30)), journal=path, dead_letters=dead)
    assert out.roots_restored == 21
    letters = {j["row"]: j for j in map(json.loads, dead.read_text().splitlines())}
    assert sorted(letters) == [0, 1, 2, 10, 11, 12, 20, 21, 22]
    for row, j in letters.items():
        issue = out.outputs[row]
        assert isinstance(issue, ro.OutputIssue) and issue.origin is not None
        assert issue.origin.entity.startswith(f"{row}/"), (row, issue.origin.entity)
        assert j["entity"] == issue.origin.entity


class Logged:
    """x -> x + 1; logs each call and fails odd x; counts its instances."""

    events: list[str] = []
    instances = 0

    def __init__(self) -> None:
        with _lock:
            Logged.instances += 1

    def run(self, xs: list[int]) -> list[Any]:
        with _lock:
            Logged.events.append("rpc")
        return [ro.RecordFailure(f"odd {x}") if x % 2 else x + 1 for x in xs]


def logged_executor() -> ro.Executor:
    Logged.events, Logged.instances = [], 0
    logged = ro.RayModule(Logged).ray_options(batch_size=2, replicas=2)
    return ro.Executor(lambda x: logged(x))


def test_error_budget_stops_dispatching_with_one_input_batch() -> None:
    ex = logged_executor()
    failed = [0]

    def on_row(_: int, out: Any) -> None:
        if isinstance(out, ro.OutputIssue):
            failed[0] += 1
            if failed[0] == 4:
                with _lock:
                    Logged.events.append("exceeded")

    with pytest.raises(ro.ExecutionError, match="error budget exceeded"):
        ex.run(list(range(1000)), max_failed_roots=3, on_row=on_row, progress=False)
    exceeded = Logged.events.index("exceeded")
    # Only the RPCs in flight (one per actor) may start after the budget was spent.
    assert Logged.events[exceeded:].count("rpc") <= 2, len(Logged.events)


def test_an_aborted_run_carries_its_partial_outputs_and_keeps_the_executor() -> None:
    ex = logged_executor()
    with pytest.raises(ro.ExecutionError, match="error budget exceeded") as info:
        ex.run(list(range(1000)), max_failed_roots=3, progress=False)
    partial = info.value.partial
    assert isinstance(partial, ro.RunResult) and len(partial.outputs) == 1000
    delivered = [i for i, o in enumerate(partial.outputs) if o is not None]
    assert 4 <= len(delivered) < 1000
    for i in delivered:
        assert partial.outputs[i] == (
            i + 1 if i % 2 == 0 else ro.OutputIssue(ro.ItemOutcome.FAILED, f"odd {i}")
        )
    # The same actors serve the next run: no constructor ran again (the second actor may
    # still be starting: the local executor starts its actors in the background).
    assert not ex.closed and Logged.instances <= 2
    assert ex.run([0, 2, 4], progress=False).outputs == [1, 3, 5]
    ex.close()
    assert Logged.instances == 2


def test_leaving_a_stream_early_keeps_the_executor() -> None:
    ex = logged_executor()
    for _ in ex.stream(list(range(0, 200, 2)), input_batch_size=1, progress=False):
        break
    assert not ex.closed and Logged.instances <= 2
    assert ex.run([0, 2, 4], progress=False).outputs == [1, 3, 5]
    ex.close()  # waits for a constructor still running (eager start)
    assert Logged.instances == 2


def test_dead_letters_name_every_root_that_is_not_present(tmp_path: Path) -> None:
    path = tmp_path / "dead.jsonl"
    Work.fail = 2
    out = ro.SyncExecutor(pipeline()).run(list(range(20)), dead_letters=path).outputs
    letters = {j["row"]: j for j in map(json.loads, path.read_text().splitlines())}
    assert sorted(letters) == [0, 1, 10, 11]
    for row, j in letters.items():
        assert j["outcome"] == "suppressed" and j["cause"] == f"bad root {row}"
        assert j["call"] == "Work#1" and j["entity"].startswith(f"{row}/")
        assert j["attempts"] >= 1 and j["restored"] is False
        assert len(j["key"]) == 16  # the digest of the pickled source value
        assert j["failed"] is True  # suppressed by a failure, not dropped on purpose
        assert isinstance(out[row], ro.OutputIssue)


def test_dead_letter_fields_add_a_rows_own_fields(tmp_path: Path) -> None:
    path = tmp_path / "dead.jsonl"
    Work.fail = 2
    ro.SyncExecutor(pipeline()).run(
        list(range(12)),
        dead_letters=path,
        dead_letter_fields=lambda row: {"name": f"doc-{row}", "row": "overwritten"},
    )
    letters = {j["row"]: j for j in map(json.loads, path.read_text().splitlines())}
    assert sorted(letters) == [0, 1, 10, 11]
    assert all(j["name"] == f"doc-{row}" for row, j in letters.items())
    with pytest.raises(ValueError, match="pass dead_letters too"):
        ro.SyncExecutor(pipeline()).run([1], dead_letter_fields=lambda row: {})
    with pytest.raises(TypeError, match=r"dead_letter_fields\(0\) must return a mapping of str"):
        ro.SyncExecutor(pipeline()).run(
            list(range(12)), dead_letters=path, dead_letter_fields=lambda row: {"n": row}
        )


class Doubled:
    def run(self, docs: list[dict[str, Any]]) -> list[int]:
        return [doc["n"] * 2 for doc in docs]


def test_a_journal_keys_rows_by_a_source_value_of_a_list_or_a_generator(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    double = ro.Module(Doubled)
    docs = [{"id": f"doc-{n}", "n": n} for n in range(6)]
    by_id = ro.Journal(str(path), value_key=lambda values: values[0]["id"])
    first = ro.SyncExecutor(lambda d: double(d)).run(docs[:4], journal=by_id)
    assert first.outputs == [0, 2, 4, 6]
    # Another order, two new documents, from a generator: the four are restored by id.
    reordered = (doc for doc in reversed(docs))
    again = ro.SyncExecutor(lambda d: double(d)).run(
        reordered,
        journal=ro.Journal(str(path), value_key=lambda v: v[0]["id"], allow_other_inputs=True),
    )
    assert again.roots_restored == 4
    assert again.outputs == [10, 8, 6, 4, 2, 0]
    with pytest.raises(ValueError, match="key .* or value_key .*, not both"):
        ro.SyncExecutor(lambda d: double(d)).run(
            docs, journal=ro.Journal(str(path), key=str, value_key=lambda v: "x")
        )
    with pytest.raises(TypeError, match=r"value_key\(values\) must return a str; row 0 gave int"):
        ro.SyncExecutor(lambda d: double(d)).run(
            docs,
            journal=ro.Journal(str(tmp_path / "other.journal"), value_key=lambda v: 1),  # type: ignore[arg-type,return-value]
        )
