"""The Ray backend on a multi-node Ray cluster on this machine (ray.cluster_utils.Cluster).

Run only through test_ray.py, which starts this module in a private network and PID
namespace with only loopback: the cluster cannot bind an external address, and when the
run ends nothing it started can outlive it. The fixture checks both."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray_udfs as u

import rayorch_cpp as ro

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
WORKLOADS = TESTS / "workloads"  # the workloads' Python pipelines (test_video.py)
EXAMPLES = TESTS.parent / "examples"
sys.path[:0] = [str(WORKLOADS), str(EXAMPLES)]
DOCS = list(range(1, 25))
RAY_PROCESS_MARKS = (
    "raylet",
    "gcs_server",
    "ray::",
    "default_worker",
    "ray/_private",
    "ray/dashboard",
)


def ancestors() -> set[int]:
    """This process and its parents."""
    out, pid = set(), os.getpid()
    while pid > 0 and pid not in out:
        out.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
    return out


def ray_processes() -> list[str]:
    """Live (non-zombie) processes of this PID namespace that belong to Ray."""
    found = []
    mine = ancestors()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if state != "Z" and any(mark in cmdline for mark in RAY_PROCESS_MARKS):
            found.append(f"{entry.name}: {cmdline[:120]}")
    return found


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    interfaces = sorted(name for _, name in socket.if_nameindex())
    assert interfaces == ["lo"], f"run through test_ray.py (network interfaces: {interfaces})"
    assert ray_processes() == [], "Ray processes were running before the suite started"
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), str(TESTS), str(WORKLOADS), str(EXAMPLES), os.environ.get("PYTHONPATH", "")]
    )
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    import ray
    from ray.cluster_utils import Cluster

    node = {"node_ip_address": "127.0.0.1", "object_store_memory": 80 * 1024 * 1024}
    c = Cluster(initialize_head=True, head_node_args={**node, "num_cpus": 0})
    workers = [c.add_node(**node, num_cpus=8) for _ in range(2)]
    try:
        ray.init(address=c.address, logging_level="ERROR", log_to_driver=False)
        c.wait_for_nodes()
        addresses = sorted({n["NodeManagerAddress"] for n in ray.nodes()})
        assert addresses == ["127.0.0.1"], f"a Ray node is not on loopback: {addresses}"
        c.worker_nodes_started = workers  # type: ignore[attr-defined]
        yield c
    finally:
        ray.shutdown()
        c.shutdown()
    deadline = time.monotonic() + 30
    while ray_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray_processes() == [], "Ray processes survived the suite"


def local(pipeline: Any, *columns: Any, **options: Any) -> Any:
    with ro.Executor(pipeline) as ex:
        return ex.run(*columns, progress=False, **options).outputs


def one_call(module: ro.Module) -> Any:
    """A pipeline of one Call of `module`."""
    return lambda x: module(x)


def on_ray(pipeline: Any) -> ro.Executor:
    return ro.Executor(pipeline, backend="ray")


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


@pytest.mark.parametrize("in_flight", [1, 2])
def test_a_block_crosses_to_each_actor_once_and_is_dropped_after(
    cluster: Any, in_flight: int
) -> None:
    """An actor keeps the blocks its RPCs read: a source slice read by 48 RPCs travels to
    each of the 2 actors once, not 48 times (once per call sent before the first of them
    came back, with calls queued at the actors); what the driver released is dropped with
    the actor's next RPC, so reused actors do not accumulate blocks run after run; and a
    block id that a later run uses again never resolves to the earlier run's values."""
    noop = ro.Module(u.Noop, replicas=2, batch_size=1, max_tasks_in_flight_per_actor=in_flight)
    with on_ray(lambda x: noop(x)) as ex:
        stats = ex._ray.stats
        for run in range(4):
            rows = [f"run{run}-row{i}" for i in range(48)]
            sent = stats["blocks_sent"]
            result = ex.run(rows, progress=False)
            assert result.outputs == rows  # run-specific values: a stale block would show
            assert result.rpc_count == 48
            assert 1 <= stats["blocks_sent"] - sent <= 2 * in_flight
        held = ex._ray.cached_blocks()
    # Each actor holds at most the last run's source slice, not one per run.
    assert all(n <= 1 for n in held[0]), held


def test_streaming_delivers_every_row(cluster: Any) -> None:
    expected = local(u.documents(), DOCS)
    with on_ray(u.documents()) as ex:
        rows = dict(ex.stream(DOCS, input_batch_size=6))
    assert [rows[i] for i in range(len(DOCS))] == expected


def test_a_raising_udf_aborts_as_locally(cluster: Any, tmp_path: Path) -> None:
    pipeline = u.documents(ocr_args=(0.0, "raise", 403))
    with pytest.raises(ro.ExecutionError) as on_local:
        local(pipeline, DOCS)
    with on_ray(u.documents(ocr_args=(0.0, "raise", 403))) as ex:
        with pytest.raises(ro.ExecutionError) as on_cluster:
            ex.run(DOCS, progress=False)
        assert not ex.closed  # an aborted run keeps the actors
    assert "ValueError: cannot read page 403" in str(on_cluster.value)
    assert (
        str(on_cluster.value).split(" failed on ")[0] == str(on_local.value).split(" failed on ")[0]
    )
    # The UDF's traceback crosses the worker process as text: its cause on both backends.
    for caught in (on_local, on_cluster):
        cause = caught.value.__cause__
        assert isinstance(cause, ro.UdfTraceback), caught.value
        assert "ray_udfs.py" in str(cause) and ", in run" in str(cause), str(cause)


def test_a_raising_udf_is_isolated_as_locally(cluster: Any, tmp_path: Path) -> None:
    options = {"recovery": ro.RecoveryPolicy.isolate_tail()}
    expected = local(u.documents(ocr_args=(0.0, "raise", 403), ocr_options=options), DOCS)
    with on_ray(u.documents(ocr_args=(0.0, "raise", 403), ocr_options=options)) as ex:
        got = ex.run(DOCS, progress=False)
    assert got.outputs == expected
    failed = [o for o in got.outputs if isinstance(o, ro.OutputIssue)]
    assert any("ValueError: cannot read page 403" in o.cause for o in failed)


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


def test_group_failure_behaves_as_locally(cluster: Any) -> None:
    expected = local(u.documents(), DOCS)
    issue = expected[DOCS.index(13)]
    assert isinstance(issue, ro.OutputIssue) and "1302" in issue.cause
    with on_ray(u.documents(ocr_batch=1)) as ex:
        assert ex.run(DOCS, progress=False).outputs == expected


def test_actor_lost_replays_as_locally(cluster: Any, tmp_path: Path) -> None:
    expected = local(u.documents(), DOCS)
    with on_ray(u.documents(ocr_args=(0.0, "lost_once", 1201, str(tmp_path)))) as ex:
        got = ex.run(DOCS, progress=False)
    assert got.outputs == expected
    assert got.actors_replaced == 1
    assert (tmp_path / "lost-1201").exists()


def test_calls_queued_at_each_actor_give_the_local_outputs(cluster: Any) -> None:
    expected = local(u.documents(), DOCS)
    pipeline = u.documents(
        ocr_batch=1, ocr_args=(0.01,), ocr_options={"max_tasks_in_flight_per_actor": 3}
    )
    with on_ray(pipeline) as ex:
        assert ex._ray.max_tasks_in_flight_per_actor() == [1, 3, 1, 1]  # the default elsewhere
        for _ in range(2):
            got = ex.run(DOCS, progress=False)
            assert got.outputs == expected
        # Every OCR actor had three calls outstanding at some point: two waited in Ray.
        assert ex._ray.peak_tasks_in_flight[1] == 3
        # Metrics and traces count actors, not queued calls.
        assert next(c for c in got.calls if c.call.startswith("Ocr")).actor_instances == 2


def test_an_actor_dying_with_queued_calls_replays_them(cluster: Any, tmp_path: Path) -> None:
    """The actor's process exits in a call with two more queued behind it: all three
    replay on one replacement, and the outputs are the local executor's."""
    expected = local(u.documents(), DOCS)
    pipeline = u.documents(
        ocr_batch=1,
        ocr_args=(0.01, "exit_once", 1201, str(tmp_path)),
        ocr_options={"max_tasks_in_flight_per_actor": 3},
    )
    with on_ray(pipeline) as ex:
        got = ex.run(DOCS, progress=False)
        again = ex.run(DOCS, progress=False)
    assert (tmp_path / "exit-1201").exists()
    assert got.outputs == expected and again.outputs == expected
    assert got.actors_replaced == 1
    assert again.actors_replaced == 0


def test_a_hung_udf_is_killed_replaced_and_replayed(cluster: Any, tmp_path: Path) -> None:
    expected = local(u.documents(), DOCS)
    pipeline = u.documents(
        ocr_args=(0.0, "hang_once", 801, str(tmp_path)), ocr_options={"timeout": 3.0}
    )
    with on_ray(pipeline) as ex:
        before = ex.actor_nodes()
        got = ex.run(DOCS, progress=False)
        after = ex.actor_nodes()
    assert got.outputs == expected
    assert got.actors_replaced == 1
    assert (tmp_path / "hang-801").exists()
    assert len(before[1]) == len(after[1]) == 2


def test_each_ray_actor_learns_its_replica_index(cluster: Any) -> None:
    module = ro.Module(u.ReplicaIndex, replicas=3, batch_size=1, num_cpus=0.1)
    with on_ray(one_call(module)) as ex:
        assert set(ex.run(list(range(30)), progress=False).outputs) == {0, 1, 2}


def test_a_constructor_failure_is_a_clear_error(cluster: Any) -> None:
    class Bad(ro.Pipeline):
        def __init__(self) -> None:
            self.m = ro.Module(u.Broken, num_cpus=0.5)

        def forward(self, x: ro.Port) -> Any:
            return self.m(x)

    with pytest.raises(ro.ExecutionError, match="Module<Broken>.*RuntimeError: no model file"):
        on_ray(Bad())


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


def test_a_missing_cluster_is_a_clear_error(cluster: Any) -> None:
    code = (
        "import rayorch_cpp as ro, ray_udfs as u\n"
        "try:\n"
        "    ro.Executor(u.documents(), backend='ray', address='127.0.0.1:9')\n"
        "except ro.ExecutionError as e:\n"
        "    print('ERROR', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "ERROR no Ray cluster answers at '127.0.0.1:9'" in out.stdout


def test_random_pipelines_agree_with_the_synchronous_core(cluster: Any) -> None:
    from test_schedule_independence import make_pipeline

    for seed in (0, 3, 5, 8):
        data = [random.Random(seed * 31 + i).randrange(101) for i in range(24)]
        with ro.SyncExecutor(make_pipeline(seed, None)) as sync:
            expected = sync.run(data).outputs
        draws = random.Random(1000 + seed)
        with on_ray(make_pipeline(seed, draws, queued_calls=True)) as ex:
            for _ in range(2):
                got = ex.run(
                    data,
                    input_batch_size=draws.choice([None, 1, 3, 7]),
                    max_active_input_batches=draws.randint(1, 3),
                    progress=False,
                ).outputs
                assert got == expected, f"seed {seed}"


def test_a_node_removed_mid_run(cluster: Any) -> None:
    """Non-graceful node loss: the lost actors are replaced on a live node, their Grains
    replay, and the outputs are the local executor's."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    victim = cluster.add_node(node_ip_address="127.0.0.1", num_cpus=2)
    cluster.wait_for_nodes()
    strategy = NodeAffinitySchedulingStrategy(victim.node_id, soft=True)
    expected = local(u.documents(), DOCS)
    # Until the head marks the removed node dead (12-17 s), Ray could still place a
    # replacement actor there (the soft affinity asks for it), to be lost in turn; the
    # backend starts replacements for lost actors on another node, so the default budget of
    # one replay per Grain is enough.
    pipeline = u.documents(
        ocr_args=(0.05,),
        ocr_options={"scheduling_strategy": strategy},
        ocr_batch=1,
    )
    removed = threading.Event()

    def remove_once(done: int, total: int) -> None:
        if done >= 1 and not removed.is_set():
            removed.set()
            threading.Thread(
                target=cluster.remove_node, args=(victim,), kwargs={"allow_graceful": False}
            ).start()

    with on_ray(pipeline) as ex:
        assert set(ex.actor_nodes()[1]) == {victim.node_id}
        got = ex.run(DOCS, progress=remove_once)
        after = ex.actor_nodes()[1]
        # The executor still works on the surviving nodes.
        again = ex.run(DOCS, progress=False)
    assert removed.is_set()
    assert got.outputs == expected and again.outputs == expected
    assert got.actors_replaced >= 1
    assert victim.node_id not in after
    assert all(n["NodeManagerAddress"] == "127.0.0.1" for n in ray.nodes())


def test_a_lost_actor_is_replaced_on_another_node(cluster: Any) -> None:
    """After a loss, the replacement starts away from the lost actor's node, even against a
    soft affinity to it (Ray may not know yet that the node is gone); a hard affinity is the
    user's to keep; an engine-driven replacement (a hang) stays where Ray puts it."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    home = cluster.worker_nodes_started[0].node_id
    for soft in (True, False):
        noop = ro.Module(
            u.Noop,
            num_cpus=0.5,
            scheduling_strategy=NodeAffinitySchedulingStrategy(home, soft=soft),
        )
        with on_ray(one_call(noop)) as ex:
            assert ex.actor_nodes()[0] == [home]
            ex._ray.replace(0, 0, lost=False)
            assert ex.actor_nodes()[0] == [home]
            ex._ray.replace(0, 0, lost=True)
            moved = ex.actor_nodes()[0][0]
            assert ex.run([1, 2, 3], progress=False).outputs == [1, 2, 3]
        assert (moved != home) if soft else (moved == home), (soft, moved, home)


@pytest.mark.skipif("Pdf2mdOcr" not in ro.cpp_udfs(), reason="built without the pdf2md stages")
def test_pdf2md_on_ray_gives_the_local_markdown(cluster: Any, tmp_path: Path) -> None:
    from pdf2md import convert

    samples = ro._core.pdf2md_make_samples(str(tmp_path), docs=3, seed=3, max_pages=3, corrupt=1)
    paths = [p for p, _ in samples] + [str(tmp_path / "corrupt.pdf")]
    expected = convert(paths)
    got = convert(paths, backend="ray")
    assert [d.text for d in got[:-1]] == [d.text for d in expected[:-1]]
    assert all(f"## Page {len(pages)}" in d.text for (_, pages), d in zip(samples, got))
    assert isinstance(got[-1], ro.OutputIssue) and got[-1].cause == expected[-1].cause


def test_a_block_lost_with_its_node_fails_its_readers(cluster: Any, tmp_path: Path) -> None:
    """A block that lived in the object store of a removed node, and that Ray cannot rebuild
    (an actor task without retries), is not replayed: the Grains that read it are FAILED with
    a cause naming the loss, and the run goes on."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    victim = cluster.add_node(node_ip_address="127.0.0.1", num_cpus=2)
    cluster.wait_for_nodes()
    survivor, doomed, markers = (
        cluster.worker_nodes_started[0].node_id,
        victim.node_id,
        str(tmp_path),
    )
    rows = list(range(6))

    def forward(x: ro.Port) -> Any:
        big = ro.Module(
            u.Big,
            num_cpus=0.5,
            scheduling_strategy=NodeAffinitySchedulingStrategy(doomed, soft=True),
        ).pre_init(markers)
        # One call at a time (the default): Ray fetches a queued call's argument before the
        # call runs, which would let more rows read their block before the node goes.
        measure = ro.Module(
            u.WaitThenMeasure,
            num_cpus=0.5,
            scheduling_strategy=NodeAffinitySchedulingStrategy(survivor, soft=False),
            max_tasks_in_flight_per_actor=1,
        ).pre_init(markers)
        return measure(big(x))

    def remove_when_produced() -> None:
        # Every block exists and the first reader has read its own: then the node goes.
        while (
            len(list(tmp_path.glob("big-*"))) < len(rows) or not (tmp_path / "first-done").exists()
        ):
            time.sleep(0.05)
        cluster.remove_node(victim, allow_graceful=False)
        (tmp_path / "go").touch()

    worker = threading.Thread(target=remove_when_produced)
    with on_ray(forward) as ex:
        assert ex.actor_nodes()[0] == [victim.node_id]
        worker.start()
        out = ex.run(rows, progress=False).outputs
        worker.join()
    lost = [o for o in out if isinstance(o, ro.OutputIssue)]
    assert out[0] == 200_002  # read before the node went away
    assert len(lost) >= len(rows) - 2, out  # the rows read after the node went away
    for issue in lost:
        assert issue.outcome is ro.ItemOutcome.FAILED
        assert issue.cause.startswith("rayorch::BlockLost: ")
        assert "Object" in issue.cause  # Ray's ObjectLostError family, by name
    assert all(o == 200_000 + len(str(i)) + 1 for i, o in enumerate(out) if isinstance(o, int))


@pytest.mark.skipif("VideoOcrFrame" not in ro.cpp_udfs(), reason="built without the video stages")
def test_the_video_stages_on_ray_give_the_local_records(cluster: Any, tmp_path: Path) -> None:
    from test_video import VideoToRecords

    samples = ro._core.video_make_samples(str(tmp_path), videos=2, seed=5, corrupt=1)
    paths = [p for p, _ in samples] + [str(tmp_path / "corrupt.mp4")]
    with ro.Executor(VideoToRecords()) as ex:
        expected = ex.run(paths, progress=False).outputs
    with on_ray(VideoToRecords()) as ex:
        got = ex.run(paths, progress=False).outputs
    assert [r.to_json() for r in got[:-1]] == [r.to_json() for r in expected[:-1]]
    assert isinstance(got[-1], ro.OutputIssue) and got[-1].cause == expected[-1].cause


@pytest.mark.skipif("Pdf2mdOcr" not in ro.cpp_udfs(), reason="built without the pdf2md stages")
def test_the_documented_pdf2md_command_on_ray(cluster: Any, tmp_path: Path) -> None:
    script = EXAMPLES / "pdf2md.py"

    def convert(out: str, *extra: str) -> dict[str, str]:
        done = subprocess.run(
            [sys.executable, str(script), str(tmp_path / "in"), str(tmp_path / out), *extra],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 1 and "corrupt.pdf" in done.stderr, done.stderr
        return {p.name: p.read_text() for p in (tmp_path / out).glob("*.md")}

    local_md = convert("local", "--samples", "2")
    ray_md = convert("ray", "--backend", "ray", "--address", cluster.address)
    assert len(local_md) == 2 and ray_md == local_md
