"""The Ray suite's cluster and helpers, shared by its cases (cases_ray_*.py).

test_ray.py loads this module as a pytest plugin (``-p ray_cluster``) of its namespaced run, so
the session-scoped ``cluster`` fixture is one fixture for every case file: the multi-node Ray
cluster on this machine (ray.cluster_utils.Cluster) starts once per run. The run is in a
private network and PID namespace with only loopback: the cluster cannot bind an external
address, and when the run ends nothing it started can outlive it. The fixture checks both."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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


@pytest.fixture(scope="session")
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
        assert_on_loopback()
        c.worker_nodes_started = workers  # type: ignore[attr-defined]
        yield c
    finally:
        ray.shutdown()
        c.shutdown()
    deadline = time.monotonic() + 30
    while ray_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray_processes() == [], "Ray processes survived the suite"


def assert_on_loopback() -> None:
    """This process sees only loopback, and every Ray node it knows of (alive or dead: the
    nodes cases add and remove too) is on 127.0.0.1."""
    import ray

    interfaces = sorted(name for _, name in socket.if_nameindex())
    assert interfaces == ["lo"], f"network interfaces besides loopback: {interfaces}"
    addresses = sorted({n["NodeManagerAddress"] for n in ray.nodes()})
    assert addresses == ["127.0.0.1"], f"a Ray node is not on loopback: {addresses}"


@pytest.fixture(autouse=True)
def _every_node_on_loopback(cluster: Any) -> Iterator[None]:
    """Checked around every case of the suite, whatever nodes it started."""
    assert_on_loopback()
    yield
    assert_on_loopback()


def local(pipeline: Any, *columns: Any, **options: Any) -> Any:
    with ro.Executor(pipeline) as ex:
        return ex.run(*columns, progress=False, **options).outputs


def one_call(module: ro.Module) -> Any:
    """A pipeline of one Call of `module`."""
    return lambda x: module(x)


def on_ray(pipeline: Any) -> ro.Executor:
    return ro.Executor(pipeline, backend="ray")


def run_killed_driver(code: str) -> subprocess.CompletedProcess[str]:
    """Runs `code` as a driver process of its own (this directory on its path, so it imports
    ray_udfs and ray_cluster), which must kill itself with SIGKILL mid-run; returns it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    killed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env
    )
    assert killed.returncode == -signal.SIGKILL, (killed.stdout, killed.stderr[-3000:])
    return killed


def assert_reports_the_loss_of(result: Any, node: Any) -> None:
    """The run's metrics name `node` as lost, once, with its address and what revealed it."""
    import ray

    [loss] = [n for n in result.node_losses if n.node == node.node_id]
    [info] = [n for n in ray.nodes() if n["NodeID"] == node.node_id]
    assert loss.address == f"127.0.0.1:{info['NodeManagerPort']}", loss
    assert 0 <= loss.detected_s <= result.elapsed_s, loss
    assert "Error" in loss.cause.split(":")[0], loss  # Ray's error type, by name
