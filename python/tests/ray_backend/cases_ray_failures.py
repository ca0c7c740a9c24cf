"""Ray cases: failures behave as on the local executor. Raising and hung UDFs, lost actors,
constructor errors, a missing cluster, and nodes removed mid-run with their actors and blocks.

Run only through test_ray.py (ray_cluster.py starts the cluster)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import ray_udfs as u
from ray_cluster import DOCS, assert_on_loopback, local, on_ray, one_call, run_killed_driver

import rayorch_cpp as ro


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


def test_actor_lost_replays_as_locally(cluster: Any, tmp_path: Path) -> None:
    expected = local(u.documents(), DOCS)
    with on_ray(u.documents(ocr_args=(0.0, "lost_once", 1201, str(tmp_path)))) as ex:
        got = ex.run(DOCS, progress=False)
    assert got.outputs == expected
    assert got.actors_replaced == 1
    assert (tmp_path / "lost-1201").exists()


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


def test_a_constructor_failure_is_a_clear_error(cluster: Any) -> None:
    class Bad(ro.Pipeline):
        def __init__(self) -> None:
            self.m = ro.Module(u.Broken, num_cpus=0.5)

        def forward(self, x: ro.Port) -> Any:
            return self.m(x)

    # The executor returns while its actors start (eager start); the run finds the pool
    # without a ready actor.
    with pytest.raises(ro.ExecutionError, match="Module<Broken>.*RuntimeError: no model file"):
        on_ray(Bad()).run([1], progress=False)


def test_actors_no_node_can_place_fail_the_run_after_the_startup_timeout(cluster: Any) -> None:
    # Two actors asking for a resource no node has stay pending in Ray for ever: the driver
    # gives up their starts once the pool waited the startup timeout for a first one (its
    # rule, DESIGN 6.1.4); the backend kills them and says what they ask for.
    class Unplaceable(ro.Pipeline):
        def __init__(self) -> None:
            self.m = ro.Module(u.Noop, replicas=2, num_cpus=0.5, resources={"tpu_slice": 1})

        def forward(self, x: ro.Port) -> Any:
            return self.m(x)

    began = time.monotonic()
    with ro.Executor(Unplaceable(), backend="ray", actor_startup_timeout_s=2) as ex:
        with pytest.raises(ro.ExecutionError) as error:
            ex.run([1, 2], progress=False)
        assert ex.closed
    assert 2 <= time.monotonic() - began < 60
    message = str(error.value)
    assert "no actor of Module<Noop> could start (2 of 2 failed)" in message, message
    assert "did not start within 2 s (actor_startup_timeout_s)" in message, message
    assert "Module<Noop>: 2 actor(s) waiting, each asking {CPU: 0.5, tpu_slice: 1}" in message


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
    # The run's report names the node that went, once; the next run lost none.
    assert_reports_the_loss_of(got, victim)
    assert again.node_losses == ()


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
            ex._ray.replace(0, 0)
            assert ex.actor_nodes()[0] == [home]
            assert ex.run([0], progress=False).outputs == [0]  # the driver took every start
            ex._ray.restart_lost(0, 0)
            moved = _restarted_node(ex._ray, 0, 0)
            assert_on_loopback()  # the node the restart went to, too
            assert ex.run([1, 2, 3], progress=False).outputs == [1, 2, 3]
        assert (moved != home) if soft else (moved == home), (soft, moved, home)


def _restarted_node(backend: Any, pool: int, actor: int) -> str:
    """The node of actor (pool, actor) once its background restart is reported (taken here:
    the driver did not ask for it)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for started in backend.take_started():
            assert started == (pool, actor, ""), started
            return str(backend.nodes[pool][actor])
        time.sleep(0.05)
    raise AssertionError(f"actor {actor} of pool {pool} was not restarted within 60 s")


def _lose_big_blocks(
    cluster: Any, tmp_path: Path, infra_retries: int, shape: str = "single"
) -> tuple[list[Any], Any]:
    """Runs x -> Big (200 kB values, on a node of their own) -> WaitThenMeasure (on another
    node) and removes Big's node once every block exists and the first reader has read its
    own. Ray cannot rebuild those blocks (an actor task without retries). `shape` "chain":
    x -> Big -> Grow -> WaitThenMeasure, both producers on the node (two lost levels);
    "group": x -> BigPages, expanded, reduced -> WaitThenMeasure (lost reduce members);
    "pair": x -> Big and x -> BigToo, both on the node -> WaitThenMeasureBoth (one call reads
    two lost blocks, which Ray's errors name one at a time)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    victim = cluster.add_node(node_ip_address="127.0.0.1", num_cpus=2)
    cluster.wait_for_nodes()
    assert_on_loopback()  # the node just added too: only loopback, every node on 127.0.0.1
    survivor, doomed, markers = (
        cluster.worker_nodes_started[0].node_id,
        victim.node_id,
        str(tmp_path),
    )
    rows = list(range(6))
    on_victim = NodeAffinitySchedulingStrategy(doomed, soft=True)

    def forward(x: ro.Port) -> Any:
        # One call at a time (the default): Ray fetches a queued call's argument before the
        # call runs, which would let more rows read their block before the node goes.
        measure = ro.Module(
            u.WaitThenMeasure,
            num_cpus=0.5,
            scheduling_strategy=NodeAffinitySchedulingStrategy(survivor, soft=False),
            max_tasks_in_flight_per_actor=1,
            infra_retries=infra_retries,
        ).pre_init(markers)
        if shape == "pair":
            both = ro.Module(
                u.WaitThenMeasureBoth,
                num_cpus=0.5,
                scheduling_strategy=NodeAffinitySchedulingStrategy(survivor, soft=False),
                infra_retries=infra_retries,
            ).pre_init(markers)
            big_too = ro.Module(u.BigToo, num_cpus=0.5, scheduling_strategy=on_victim)
            big = ro.Module(u.Big, num_cpus=0.5, scheduling_strategy=on_victim)
            return both(big.pre_init(markers)(x), big_too.pre_init(markers)(x))
        if shape == "group":
            pages = ro.Module(u.BigPages, num_cpus=0.5, scheduling_strategy=on_victim)
            return measure(ro.F.reduce(ro.F.expand(pages.pre_init(markers)(x))))
        big = ro.Module(u.Big, num_cpus=0.5, scheduling_strategy=on_victim).pre_init(markers)
        if shape == "chain":
            grow = ro.Module(u.Grow, num_cpus=0.5, scheduling_strategy=on_victim)
            return measure(grow.pre_init(markers)(big(x)))
        return measure(big(x))

    produced = {"single": ["big-*"], "chain": ["grow-*"], "group": ["pages-*"]}.get(
        shape, ["big-*", "bigtoo-*"]
    )

    def remove_when_produced() -> None:
        # Every block exists and the first reader has read its own: then the node goes.
        while (
            any(len(list(tmp_path.glob(p))) < len(rows) for p in produced)
            or not (tmp_path / "first-done").exists()
        ):
            time.sleep(0.05)
        cluster.remove_node(victim, allow_graceful=False)
        (tmp_path / "go").touch()

    worker = threading.Thread(target=remove_when_produced)
    with on_ray(forward) as ex:
        assert set(ex.actor_nodes()[0]) == {victim.node_id}
        worker.start()
        result = ex.run(rows, progress=False)
        worker.join()
    assert_reports_the_loss_of(result, victim)
    return result.outputs, result


def assert_reports_the_loss_of(result: Any, node: Any) -> None:
    """The run's metrics name `node` as lost, once, with its address and what revealed it."""
    import ray

    [loss] = [n for n in result.node_losses if n.node == node.node_id]
    [info] = [n for n in ray.nodes() if n["NodeID"] == node.node_id]
    assert loss.address == f"127.0.0.1:{info['NodeManagerPort']}", loss
    assert 0 <= loss.detected_s <= result.elapsed_s, loss
    assert "Error" in loss.cause.split(":")[0], loss  # Ray's error type, by name


def test_blocks_lost_with_their_node_are_rebuilt_from_lineage(cluster: Any, tmp_path: Path) -> None:
    """The rows whose blocks went with the node are re-materialised (DESIGN 5.13): Big runs
    again on a live node, the readers wait for it, and every output is PRESENT and what the
    run without a loss gives."""
    out, result = _lose_big_blocks(cluster, tmp_path, infra_retries=1)
    assert out == [200_000 + len(str(i)) + 1 for i in range(6)], out
    assert result.values_rebuilt >= 1 and result.grains_reexecuted >= 1
    assert result.rebuild_s > 0


def test_two_lost_levels_are_rebuilt_recursively(cluster: Any, tmp_path: Path) -> None:
    """Grow's blocks and the Big blocks they were made from went with the node: Grow runs
    again, which needs Big's values, so Big runs again first."""
    out, result = _lose_big_blocks(cluster, tmp_path, infra_retries=1, shape="chain")
    assert out == [200_000 + len(str(i)) + 2 for i in range(6)], out
    assert result.grains_reexecuted >= 2


def test_lost_reduce_members_are_rebuilt(cluster: Any, tmp_path: Path) -> None:
    """A group's member blocks went with the node: the pages are rebuilt and the groups
    composed again from them."""
    out, result = _lose_big_blocks(cluster, tmp_path, infra_retries=1, shape="group")
    assert out == [2 * (200_000 + len(f"{i}/0:")) for i in range(6)], out
    assert result.values_rebuilt >= 2


def test_a_call_reading_two_lost_blocks_is_charged_one_loss(cluster: Any, tmp_path: Path) -> None:
    """Each row's call reads a Big block and a BigToo block, both gone with the node; Ray's
    error names one of them, so the call learns of the other only when it runs again. That is
    one loss: with a budget of one wait, every output is PRESENT (DESIGN 5.13, "Budget")."""
    out, result = _lose_big_blocks(cluster, tmp_path, infra_retries=1, shape="pair")
    assert out == [2 * (200_000 + len(f"{i}:")) for i in range(6)], out
    assert result.values_rebuilt >= 2 and result.grains_reexecuted >= 2


def test_a_root_output_lost_before_delivery_is_rebuilt_and_delivered(
    cluster: Any, tmp_path: Path
) -> None:
    """Big's values are outputs nothing reads; they live on a node that goes before the
    roots finish (the other output waits for it): the driver's fetch finds them lost, Big runs
    again on a live node, and every root is delivered once with its values."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    victim = cluster.add_node(node_ip_address="127.0.0.1", num_cpus=2)
    cluster.wait_for_nodes()
    survivor = cluster.worker_nodes_started[0].node_id
    rows, markers = list(range(6)), str(tmp_path)
    big = ro.Module(
        u.Big,
        num_cpus=0.5,
        scheduling_strategy=NodeAffinitySchedulingStrategy(victim.node_id, soft=True),
    ).pre_init(markers)
    hold = ro.Module(
        u.WaitForGo,
        num_cpus=0.5,
        scheduling_strategy=NodeAffinitySchedulingStrategy(survivor, soft=False),
    ).pre_init(markers)

    def remove_when_produced() -> None:
        while len(list(tmp_path.glob("big-*"))) < len(rows):
            time.sleep(0.05)
        cluster.remove_node(victim, allow_graceful=False)
        (tmp_path / "go").touch()

    delivered: list[tuple[int, Any]] = []
    worker = threading.Thread(target=remove_when_produced)
    with on_ray(lambda x: (big(x), hold(x))) as ex:
        assert set(ex.actor_nodes()[0]) == {victim.node_id}
        worker.start()
        result = ex.run(rows, progress=False, on_row=lambda row, out: delivered.append((row, out)))
        worker.join()
    # Each root once, with the values of the run without a loss.
    assert sorted(delivered) == [(x, (f"{x}:" + "x" * 200_000, x)) for x in rows]
    assert result.values_rebuilt >= 1 and result.grains_reexecuted >= 1
    assert_reports_the_loss_of(result, victim)


def test_past_the_budget_a_lost_block_fails_its_readers(cluster: Any, tmp_path: Path) -> None:
    """With no replay left (infra_retries=0), a reader of a lost block is FAILED with a cause
    naming the loss, and the run goes on."""
    out, _ = _lose_big_blocks(cluster, tmp_path, infra_retries=0)
    lost = [o for o in out if isinstance(o, ro.OutputIssue)]
    assert out[0] == 200_002  # read before the node went away
    # The readers that found the loss fail; rows still waiting in the queue read the values
    # rebuilt meanwhile.
    assert lost, out
    for issue in lost:
        assert issue.outcome is ro.ItemOutcome.FAILED
        assert issue.cause.startswith("rayorch::BlockLost: ")
        assert "Object" in issue.cause  # Ray's ObjectLostError family, by name
    assert all(o == 200_000 + len(str(i)) + 1 for i, o in enumerate(out) if isinstance(o, int))


def test_a_driver_killed_mid_run_resumes_from_its_journal(cluster: Any, tmp_path: Path) -> None:
    """The driver process is killed (SIGKILL) mid-run; a new driver on the same cluster
    resumes from the run journal: the roots the first one finished are restored, the others
    computed, and the outputs are the local executor's."""
    journal = tmp_path / "run.journal"
    # The journal's writer thread writes records a few milliseconds after the run commits
    # them (docs/JOURNAL.md: durability), so the driver waits until the file holds six root
    # records before it dies: the resume must then restore at least those.
    code = (
        "import os, signal, struct, time\n"
        "import rayorch_cpp as ro, ray_udfs as u\n"
        "def written_roots(path: str) -> int:\n"
        "    data, at, roots = open(path, 'rb').read(), 0, 0\n"
        "    while at + 8 < len(data):\n"
        "        (length,) = struct.unpack_from('<I', data, at)\n"
        "        if at + 8 + length > len(data):\n"
        "            break\n"
        "        roots += data[at + 8] == ord('R')\n"
        "        at += 8 + length\n"
        "    return roots\n"
        "def progress(done: int, total: int) -> None:\n"
        "    if done >= 6:\n"
        "        deadline = time.monotonic() + 60\n"
        f"        while written_roots({str(journal)!r}) < 6 and time.monotonic() < deadline:\n"
        "            time.sleep(0.01)\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "pipeline = u.documents(ocr_args=(0.05,))\n"
        f"with ro.Executor(pipeline, backend='ray', address={cluster.address!r}) as ex:\n"
        "    import ray\n"
        "    from ray_cluster import assert_on_loopback\n"
        "    assert_on_loopback()  # this driver too sees only loopback nodes\n"
        "    print('JOB', ray.get_runtime_context().get_job_id(), flush=True)\n"
        f"    ex.run({DOCS!r}, journal={str(journal)!r}, progress=progress)\n"
        "print('not killed')\n"
    )
    killed = run_killed_driver(code)
    assert journal.exists()
    # The first driver's actors belonged to its job: with the driver gone, they go too.
    job = killed.stdout.split("JOB ", 1)[1].split()[0]
    pools = ro.compile(u.documents(ocr_args=(0.05,))).native.pools()
    assert_actors_of_job_go_away(job, at_least=sum(int(p["replicas"]) for p in pools))
    expected = local(u.documents(ocr_args=(0.05,)), DOCS)
    with on_ray(u.documents(ocr_args=(0.05,))) as ex:
        resumed = ex.run(DOCS, progress=False, journal=str(journal))
    assert resumed.outputs == expected
    assert 6 <= resumed.roots_restored < len(DOCS), resumed.roots_restored


def assert_actors_of_job_go_away(job: str, at_least: int, deadline_s: float = 60.0) -> None:
    """The job's actors (at least `at_least` of them) are all DEAD in the cluster's actor
    table, and their worker processes have exited, within `deadline_s` (polled)."""
    import ray

    def alive_pid(pid: int) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state != "Z"

    deadline = time.monotonic() + deadline_s
    while True:
        # The GCS actor table (the state API needs the dashboard, which the suite does not
        # start): every actor the job ever created, with its state and process.
        actors = [a for a in ray._private.state.actors().values() if a["JobID"] == job]
        living = [a for a in actors if a["State"] != "DEAD" or alive_pid(a["Pid"])]
        if len(actors) >= at_least and not living:
            return
        assert time.monotonic() < deadline, (
            f"{len(living)} of the {len(actors)} actors of the killed driver's job {job} are "
            f"still alive after {deadline_s:g} s: {[(a['State'], a['Pid']) for a in living]}"
        )
        time.sleep(0.2)
