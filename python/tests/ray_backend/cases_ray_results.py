"""Ray cases: the Ray backend gives the local executor's outputs (and the synchronous core's),
across runs, streamed, fed by a generator, with C++ UDFs, and with what each actor learns of
itself.

Run only through test_ray.py (ray_cluster.py starts the cluster)."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest
import ray_udfs as u
from ray_cluster import DOCS, local, on_ray, one_call

import rayorch_cpp as ro


def test_every_node_is_on_loopback(cluster: Any) -> None:
    import ray

    alive = [n for n in ray.nodes() if n["Alive"]]
    assert len(alive) >= 3
    assert {n["NodeManagerAddress"] for n in alive} == {"127.0.0.1"}


def test_outputs_match_the_local_executor_across_runs(cluster: Any, tmp_path: Path) -> None:
    expected = local(u.documents(), DOCS)
    trace, report = tmp_path / "trace.json", tmp_path / "report.json"
    with on_ray(u.documents(ocr_replicas=2, ocr_options={"scheduling_strategy": "SPREAD"})) as ex:
        nodes = ex.actor_nodes()
        first = ex.run(DOCS, progress=False, trace=str(trace), report=str(report))
        # The same actors serve a second run with other input batching.
        again = ex.run(DOCS, input_batch_size=5, max_active_input_batches=2, progress=False)
        assert ex.actor_nodes() == nodes
    assert ex.closed
    # Closing killed the actors: the cluster gets every CPU they held back.
    import ray

    total = ray.cluster_resources()["CPU"]
    deadline = time.monotonic() + 60
    while ray.available_resources().get("CPU", 0) < total and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ray.available_resources().get("CPU", 0) == total
    assert first.outputs == expected
    assert again.outputs == expected
    assert len(set(nodes[1])) == 2, f"the Ocr pool was not spread over the nodes: {nodes}"
    assert first.actors_replaced == 0
    assert '"traceEvents"' in trace.read_text() and "Ocr#1" in trace.read_text()
    assert '"rpcs"' in report.read_text()
    issues = [o for o in first.outputs if isinstance(o, ro.OutputIssue)]
    assert {i.origin.call for i in issues if i.origin} >= {"Ocr#1"}


def test_eager_start_runs_calls_before_the_slowest_actor_is_ready(
    cluster: Any, tmp_path: Path
) -> None:
    # Two of three actors finish their constructors only after a call ran: the executor
    # returns at once and the run starts on the first ready actor (eager start).
    waits = ro.Module(u.WaitsForTheFirstCall, replicas=3, batch_size=2, num_cpus=0.25)
    pipeline = one_call(waits.pre_init(str(tmp_path)))
    with ro.SyncExecutor(pipeline) as sync:
        expected = sync.run(DOCS, progress=False).outputs
    (tmp_path / "first-call").unlink()
    with on_ray(pipeline) as ex:
        first = ex.run(DOCS, progress=False)
        later = first
        while len(later.pools[0].started) < 3:  # the slow ones join after the first call
            later = ex.run(DOCS[:2], progress=False)
    assert not list(tmp_path.glob("watchdog-*")), "an actor waited for the executor"
    assert first.outputs == expected == [x * 3 for x in DOCS]
    pool = later.pools[0]
    assert pool.ready_actors == 3
    assert pool.started[0].actor == 0  # the quick one came first


def test_a_self_sizing_pool_grows_on_ray_and_gives_the_local_outputs(cluster: Any) -> None:
    # replicas="auto": the driver starts the Ocr actors as its backlog asks, within the
    # executor's budget, and retires them; closing returns every CPU they held.
    import ray

    expected = local(u.documents(), DOCS)
    pipeline = u.documents(ocr_replicas="auto", ocr_args=(0.3,), ocr_options={"max_replicas": 3})
    with ro.Executor(pipeline, backend="ray", budget={"CPU": 6}) as ex:
        result = ex.run(DOCS, progress=False)
        again = ex.run(DOCS, input_batch_size=5, progress=False)
    assert result.outputs == again.outputs == expected
    ocr = next(p for p in result.pools if p.pool == "Ocr")
    assert ocr.actors == 3  # its slots: max_replicas
    assert max(n for _, n in ocr.actors_over_time) >= 2, ocr  # the backlog grew it
    assert ocr.resizes and all(r.reason for r in ocr.resizes)
    total = ray.cluster_resources()["CPU"]
    deadline = time.monotonic() + 60
    while ray.available_resources().get("CPU", 0) < total and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ray.available_resources().get("CPU", 0) == total


def test_a_self_sizing_minimum_beyond_the_budget_on_ray_names_the_module(cluster: Any) -> None:
    pipeline = u.documents(ocr_replicas="auto", ocr_options={"min_replicas": 4})
    with pytest.raises(ro.ExecutionError, match=r"Module<Ocr> sizes itself with min_replicas=4"):
        ro.Executor(pipeline, backend="ray", budget={"CPU": 2})


def test_streaming_delivers_every_row(cluster: Any) -> None:
    expected = local(u.documents(), DOCS)
    with on_ray(u.documents()) as ex:
        rows = dict(ex.stream(DOCS, input_batch_size=6))
    assert [rows[i] for i in range(len(DOCS))] == expected


def test_a_lazy_source_gives_the_outputs_of_the_same_list(cluster: Any) -> None:
    expected = local(u.documents(), DOCS)
    pulled: list[int] = []

    def documents() -> Any:
        for d in DOCS:
            pulled.append(d)
            yield d

    rows: dict[int, Any] = {}
    pulled_at_first_row: list[int] = []

    def on_row(index: int, output: Any) -> None:
        if not rows:
            pulled_at_first_row.append(len(pulled))
        rows[index] = output

    with on_ray(u.documents()) as ex:
        ex.run(documents(), input_batch_size=4, on_row=on_row, progress=False)
        streamed = dict(ex.stream(iter(DOCS), input_batch_size=5))
    assert [rows[i] for i in range(len(DOCS))] == expected
    assert pulled_at_first_row == [4]  # one batch admitted: the source was pulled no further
    assert [streamed[i] for i in range(len(DOCS))] == expected


def test_arrays_arrive_read_only_as_locally(cluster: Any) -> None:
    np = pytest.importorskip("numpy")
    source = [np.full(3, 255.0), np.arange(3.0)]
    expected = local(u.scaled_in_place(), source)
    with on_ray(u.scaled_in_place()) as ex:
        got = ex.run(source, progress=False).outputs
    assert got == expected
    assert got[1] == [False, False]  # what the second Call received was read-only
    scaled = got[0][0]
    assert isinstance(scaled, ro.OutputIssue) and scaled.cause is not None
    assert scaled.cause.startswith("ValueError: output array is read-only")
    assert source[0].tolist() == [255.0, 255.0, 255.0]


def test_a_large_array_is_read_in_place_from_the_object_store(cluster: Any) -> None:
    """An array another Module made reaches the next Module's actor without a copy: Ray
    wrote it into the object store once (out of band), and the reader's array is a read-only
    view of the store's shared memory, not a private copy made by unpickling."""
    pytest.importorskip("numpy")
    make = ro.Module(u.MakeArray, batch_size=2, num_cpus=0.5)
    where = ro.Module(u.WhereArrayLives, batch_size=3, num_cpus=0.5)
    rows = list(range(6))
    with on_ray(lambda x: where(make(x))) as ex:
        got = ex.run(rows, progress=False).outputs
    for row, (writable, mapping, total) in zip(rows, got, strict=True):
        assert total == u.ARRAY_BYTES * (row % 251)
        assert not writable
        assert "plasma" in mapping, mapping  # Ray's object store file, e.g. /dev/shm/plasma...


def test_co_located_stages_keep_a_large_array_in_the_actor(cluster: Any) -> None:
    """Co-located, the next Module reads the array in the process that made it (DESIGN
    5.12): in the process's own memory, never in the object store; the outputs are those of
    the local executor."""
    pytest.importorskip("numpy")
    make = ro.Module(u.MakeArray, batch_size=2, num_cpus=0.5, colocate="array")
    where = ro.Module(u.WhereArrayLives, batch_size=3, num_cpus=0.5, colocate="array")
    rows = list(range(6))
    with on_ray(lambda x: where(make(x))) as ex:
        got = ex.run(rows, progress=False).outputs
    assert [t for *_, t in got] == [t for *_, t in local(lambda x: where(make(x)), rows)]
    for row, (writable, mapping, total) in zip(rows, got, strict=True):
        assert total == u.ARRAY_BYTES * (row % 251)
        assert not writable  # values are immutable between Calls, as locally
        assert "plasma" not in mapping, mapping


def test_a_chain_the_compiler_co_locates_keeps_the_array_in_the_actor(cluster: Any) -> None:
    """auto_colocate=True: the compiler finds the chain that co-located stages declare above,
    each Ray actor compiles the program again the same way, and the array stays in the actor
    that made it."""
    pytest.importorskip("numpy")
    make = ro.Module(u.MakeArray, batch_size=2, num_cpus=0.5)
    where = ro.Module(u.WhereArrayLives, batch_size=3, num_cpus=0.5)
    rows = list(range(6))
    program = ro.compile(lambda x: where(make(x)), auto_colocate=True)
    assert "(found by the compiler)" in program.explain()
    with on_ray(program) as ex:
        got = ex.run(rows, progress=False).outputs
    assert [t for *_, t in got] == [t for *_, t in local(lambda x: where(make(x)), rows)]
    for row, (writable, mapping, total) in zip(rows, got, strict=True):
        assert total == u.ARRAY_BYTES * (row % 251)
        assert not writable
        assert "plasma" not in mapping, mapping


def test_group_failure_behaves_as_locally(cluster: Any) -> None:
    expected = local(u.documents(), DOCS)
    issue = expected[DOCS.index(13)]
    assert isinstance(issue, ro.OutputIssue) and "1302" in issue.cause
    with on_ray(u.documents(ocr_batch=1)) as ex:
        assert ex.run(DOCS, progress=False).outputs == expected


def test_each_ray_actor_learns_its_replica_index(cluster: Any) -> None:
    module = ro.Module(u.ReplicaIndex, replicas=3, batch_size=1, num_cpus=0.1)
    with on_ray(one_call(module)) as ex:
        assert set(ex.run(list(range(30)), progress=False).outputs) == {0, 1, 2}


def test_cpp_udfs_run_on_ray_actors(cluster: Any) -> None:
    class Upper(ro.Pipeline):
        def __init__(self) -> None:
            self.upper = ro.CppModule("Upper", replicas=2, batch_size=3, num_cpus=0.5)
            self.ident = ro.Module(u.Noop, num_cpus=0.5)

        def forward(self, x: ro.Port) -> Any:
            return self.ident(self.upper(x))

    words = [f"word{i}" for i in range(20)]
    with on_ray(Upper()) as ex:
        assert ex.run(words, progress=False).outputs == [w.upper() for w in words]


def test_a_gather_of_gathers_and_a_pipeline_without_calls(cluster: Any) -> None:
    # Both once failed on Ray alone: a gather of gathers crashed the driver (a group's member
    # that is a group had no block), a pipeline with no Call waited forever for an actor.
    roots = [[], [[], [1, 2]], [[3], [], [4, 5, 6]], [[7]], [[]]]
    with on_ray(u.nested_gathers()) as ex:
        for size in (None, 2):
            got = ex.run(roots, input_batch_size=size, max_active_input_batches=2, progress=False)
            assert got.outputs == (roots, [repr(r) for r in roots])
    with on_ray(lambda x: x) as ex:
        assert ex.run([3, 1, 2], input_batch_size=2, progress=False).outputs == [3, 1, 2]


def test_random_pipelines_agree_with_the_synchronous_core(cluster: Any) -> None:
    from test_schedule_independence import make_pipeline, run_drawn, seed_data, sync_outputs

    # Seed 3 has no Call, seed 4 gathers gathers (one as an output), seed 1 (below) too.
    for seed in (0, 3, 4, 5, 8):
        expected = sync_outputs(seed)
        draws = random.Random(1000 + seed)
        with on_ray(make_pipeline(seed, draws, queued_calls=True)) as ex:
            for _ in range(2):
                assert run_drawn(ex, seed_data(seed), draws) == expected, f"seed {seed}"


def test_co_located_random_pipelines_agree_with_the_synchronous_core(cluster: Any) -> None:
    # Every Module in one co-located pool of two actors (DESIGN 5.12): outputs kept in the
    # actors that made them, calls sent to where their inputs are, exports to the other
    # actor, in Ray's own order of reports.
    from test_schedule_independence import make_pipeline, run_drawn, seed_data, sync_outputs

    for seed in (0, 4, 5):
        expected = sync_outputs(seed)
        draws = random.Random(9100 + seed)
        with on_ray(make_pipeline(seed, draws, colocated_replicas=2)) as ex:
            for _ in range(2):
                assert run_drawn(ex, seed_data(seed), draws) == expected, f"seed {seed}"


def test_chains_the_compiler_co_located_agree_with_the_synchronous_core(cluster: Any) -> None:
    # Pools of two actors that the compiler found (auto_colocate), in Ray's own order of
    # reports: seed 7 chains five maps, seed 10 has two found pools.
    from test_schedule_independence import make_pipeline, run_drawn, seed_data, sync_outputs

    for seed in (7, 10):
        expected = sync_outputs(seed)
        draws = random.Random(9300 + seed)
        pipeline = make_pipeline(seed, draws, colocated_replicas=2, declared=False)
        program = ro.compile(pipeline, auto_colocate=True)
        assert any(p["found_by_compiler"] for p in program.native.pools()), seed
        with on_ray(program) as ex:
            for _ in range(2):
                assert run_drawn(ex, seed_data(seed), draws) == expected, f"seed {seed}"


def test_self_sizing_pools_resized_at_random_agree_with_the_synchronous_core(
    cluster: Any,
) -> None:
    # Ray actors started and retired at random times (the random resize hook) under reports
    # in Ray's own order: the synchronous core's outputs, run after run.
    from test_schedule_independence import make_pipeline, run_drawn, seed_data, sync_outputs

    for seed in (1,):  # each start is a process on the cluster: one pipeline, two runs
        expected = sync_outputs(seed)
        draws = random.Random(4000 + seed)
        pipeline = make_pipeline(seed, draws, auto_pools=True)
        with ro.Executor(
            pipeline, backend="ray", budget={"CPU": 32}, _random_resize_seed=9000 + seed
        ) as ex:
            for _ in range(2):
                assert run_drawn(ex, seed_data(seed), draws) == expected, f"seed {seed}"
