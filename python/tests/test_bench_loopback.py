"""The guards that keep the benchmarks' Ray clusters on loopback (python/bench/loopback_ray.py
for the project's benchmarks, bench/peers/common.py for the peers): Ray is started only in a
network namespace whose only interface is loopback, on 127.0.0.1, and a node anywhere else
ends the benchmark. Nothing here starts Ray: a stand-in module records what would be asked of
it. The benchmark script itself runs on a real cluster in the Ray suite
(ray_backend/cases_ray_workloads.py)."""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


loopback_ray = load(ROOT / "python" / "bench" / "loopback_ray.py", "loopback_ray_under_test")
peers_common = load(ROOT / "bench" / "peers" / "common.py", "peers_common_under_test")


class StandInRay(ModuleType):
    """`ray` as the guards use it: init() is recorded, nodes() answers with `addresses`."""

    def __init__(self, addresses: list[str]) -> None:
        super().__init__("ray")
        self.addresses = addresses
        self.inits: list[dict[str, Any]] = []

    def init(self, **kwargs: Any) -> None:
        self.inits.append(kwargs)

    def nodes(self) -> list[dict[str, Any]]:
        return [
            {"NodeManagerAddress": a, "NodeManagerPort": 7000 + i, "Alive": True}
            for i, a in enumerate(self.addresses)
        ]


def interfaces(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    monkeypatch.setattr(socket, "if_nameindex", lambda: list(enumerate(names, start=1)))


def stand_in_ray(monkeypatch: pytest.MonkeyPatch, *addresses: str) -> StandInRay:
    ray = StandInRay(list(addresses))
    monkeypatch.setitem(sys.modules, "ray", ray)
    return ray


def test_ray_is_not_started_outside_a_loopback_only_namespace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    interfaces(monkeypatch, "lo", "eth0")
    ray = stand_in_ray(monkeypatch, "127.0.0.1")
    with pytest.raises(SystemExit, match="outside a loopback-only network namespace"):
        loopback_ray.start_local_ray(2)
    with pytest.raises(SystemExit, match="only loopback"):
        peers_common.start_local_ray(num_cpus=2)
    assert ray.inits == []


def test_ray_starts_on_127_0_0_1_and_every_node_is_checked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    interfaces(monkeypatch, "lo")
    ray = stand_in_ray(monkeypatch, "127.0.0.1")
    assert loopback_ray.start_local_ray(3) is ray
    peers_common.start_local_ray(num_cpus=3)
    # A peer's log shows where its cluster ran.
    assert "Ray nodes: 1, addresses: 127.0.0.1\n" in capsys.readouterr().err
    assert [init["_node_ip_address"] for init in ray.inits] == ["127.0.0.1", "127.0.0.1"]
    assert [init["address"] for init in ray.inits] == ["local", "local"]
    assert loopback_ray.check_on_loopback(ray) == ["127.0.0.1"]


@pytest.mark.parametrize("address", ["10.0.0.5", "192.168.1.2"])
def test_a_node_off_loopback_ends_the_benchmark(
    monkeypatch: pytest.MonkeyPatch, address: str
) -> None:
    interfaces(monkeypatch, "lo")
    ray = stand_in_ray(monkeypatch, "127.0.0.1", address)
    with pytest.raises(SystemExit, match=f"not on loopback: .*{address}"):
        loopback_ray.start_local_ray(2)
    with pytest.raises(SystemExit, match=f"not on loopback: .*{address}"):
        peers_common.start_local_ray(num_cpus=2)
    with pytest.raises(SystemExit, match=address):
        loopback_ray.check_on_loopback(ray)


def test_the_object_store_count_asks_only_nodes_on_loopback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # store_created_bytes asks each node manager over gRPC (Ray's node_stats): it sums what
    # the nodes on 127.0.0.1 answer, and ends the benchmark before asking a node elsewhere.
    asked: list[tuple[str, int]] = []

    def node_stats(address: str, port: int) -> Any:
        asked.append((address, port))
        stats = ModuleType("stats")
        stats.cumulative_created_bytes = 1000 * (len(asked))  # type: ignore[attr-defined]
        reply = ModuleType("reply")
        reply.store_stats = stats  # type: ignore[attr-defined]
        return reply

    internal_api = ModuleType("ray._private.internal_api")
    internal_api.node_stats = node_stats  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ray._private", ModuleType("ray._private"))
    monkeypatch.setitem(sys.modules, "ray._private.internal_api", internal_api)
    assert loopback_ray.store_created_bytes(StandInRay(["127.0.0.1", "127.0.0.1"])) == 3000
    assert asked == [("127.0.0.1", 7000), ("127.0.0.1", 7001)]
    asked.clear()
    with pytest.raises(SystemExit, match="not on 127.0.0.1: 10.0.0.5"):
        loopback_ray.store_created_bytes(StandInRay(["10.0.0.5"]))
    assert asked == []


def test_a_script_reexecutes_itself_in_a_private_namespace_with_loopback_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    interfaces(monkeypatch, "lo", "eth0")
    calls: list[list[str]] = []
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(os, "execvp", lambda file, argv: calls.append([file, *argv]))
    monkeypatch.setattr(sys, "argv", ["bench.py", "--backend", "ray"])
    loopback_ray.ensure_private_network("bench.py")
    assert len(calls) == 1
    command = calls[0]
    assert command[:3] == ["unshare", "unshare", "--net"]
    assert command[-1].startswith("ip link set lo up && ")
    assert "'--backend' 'ray'" in command[-1]


def test_a_script_that_cannot_make_the_namespace_refuses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    interfaces(monkeypatch, "lo", "eth0")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(os, "execvp", lambda file, argv: pytest.fail("re-executed without root"))
    with pytest.raises(SystemExit, match="run as root"):
        loopback_ray.ensure_private_network("bench.py")


def test_a_script_already_in_a_loopback_only_namespace_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    interfaces(monkeypatch, "lo")
    monkeypatch.setattr(os, "execvp", lambda file, argv: pytest.fail("re-executed again"))
    loopback_ray.ensure_private_network("bench.py")
