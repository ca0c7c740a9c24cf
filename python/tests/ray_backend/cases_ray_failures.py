"""Ray cases: failures behave as on the local executor. Raising and hung UDFs, lost actors,
constructor errors, a missing cluster, nodes removed mid-run with their actors, a driver
killed mid-run (lost values rebuilt from lineage: cases_ray_rebuild.py).

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
from ray_cluster import (
    DOCS,
    assert_on_loopback,
    assert_reports_the_loss_of,
    local,
    on_ray,
    one_call,
    run_killed_driver,
)

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


def test_a_constructor_that_ends_its_process_is_a_clear_error_not_a_restart(
    cluster: Any,
) -> None:
    # The actor's process dies while its node is up: not a lost node, so no fresh actor
    # takes its place (one would end the same way, for ever).
    module = ro.Module(u.ExitsWhileBuilt, num_cpus=0.5)
    with pytest.raises(ro.ExecutionError, match=r"Module<ExitsWhileBuilt> ended its Ray actor"):
        on_ray(lambda x: module(x)).run([1], progress=False)


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
