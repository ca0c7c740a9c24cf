"""A UDF learns which replica of its Module it is, and the GPU devices that replica is
given, in its constructor and in run (rayorch_cpp.replica_context())."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import rayorch_cpp as ro

_lock = threading.Lock()


class WhoAmI:
    built: list[ro.ReplicaContext] = []

    def __init__(self) -> None:
        context = ro.replica_context()
        assert context is not None
        self.context = context
        with _lock:
            WhoAmI.built.append(context)

    def run(self, xs: list[int]) -> list[Any]:
        context = ro.replica_context()
        assert context == self.context, "run sees its own constructor's replica"
        time.sleep(0.002)  # lets the other replicas take batches too
        return [(context.index, context.replicas, context.devices) for _ in xs]


@pytest.fixture(autouse=True)
def _reset() -> None:
    WhoAmI.built = []


def test_each_local_replica_sees_a_distinct_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    who = ro.Module(WhoAmI, replicas=3, batch_size=1, name="who")
    with ro.Executor(lambda x: who(x)) as ex:
        outputs = ex.run(list(range(60))).outputs
    assert sorted(c.index for c in WhoAmI.built) == [0, 1, 2]
    assert {c.module for c in WhoAmI.built} == {"who"}
    assert {replicas for _, replicas, _ in outputs} == {3}
    assert {index for index, _, _ in outputs} <= {0, 1, 2}
    assert all(devices == () for _, _, devices in outputs), "no num_gpus: no devices"


def test_num_gpus_gives_each_replica_its_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    who = ro.Module(WhoAmI, replicas=3, num_gpus=2)
    with ro.Executor(lambda x: who(x)) as ex:
        ex.run([1, 2, 3])
    devices = {c.index: c.devices for c in WhoAmI.built}
    assert devices == {0: ("4", "5"), 1: ("6", "7"), 2: ("4", "5")}


@pytest.mark.parametrize("executor", [ro.Executor, ro.SyncExecutor])
def test_a_replica_sees_its_modules_cpus_and_gpus(executor: Any) -> None:
    """What a UDF sizes its thread pools and picks its device by (a model runtime with
    num_cpus=k runs k threads)."""
    who = ro.Module(WhoAmI, replicas=2, num_cpus=3, num_gpus=0.5)
    plain = ro.Module(WhoAmI, name="plain")
    executor(lambda x: plain(who(x))).run([1, 2])
    resources = {(c.module, c.num_cpus, c.num_gpus) for c in WhoAmI.built}
    assert resources == {("WhoAmI", 3.0, 0.5), ("plain", 1.0, 0.0)}


def test_the_synchronous_core_runs_one_replica_on_the_callers_thread() -> None:
    who = ro.Module(WhoAmI, replicas=2, batch_size=1, num_gpus=1)
    outputs = ro.SyncExecutor(lambda x: who(x)).run(list(range(4))).outputs
    assert [c.index for c in WhoAmI.built] == [0]
    assert set(outputs) == {(0, 2, WhoAmI.built[0].devices)}
    assert ro.replica_context() is None, "the caller's thread is no replica after the run"


def test_there_is_no_replica_outside_a_udf() -> None:
    assert ro.replica_context() is None
