"""The Ray backend's worker pools (python/src/ray_pools.cc) driven through an in-process
stand-in for Ray: the same actor code (`_core.RayWorker`), object references that are plain
Python objects, and scripted infrastructure faults. Runs without Ray, deterministically;
the real cluster is exercised by test_ray.py."""

from __future__ import annotations

import inspect
import json
import pickle
import random
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fake_ray import FakeRay
from pools_rig import DOCS, Ocr, expected, pipeline, run_on

import rayorch_cpp as ro
from rayorch_cpp import _ray_backend
from rayorch_cpp._ray_backend import RayBackend
from rayorch_cpp._ray_contract import CallReport, CallStatus, RayBackendProtocol
from rayorch_cpp._ray_startup import DEFAULT_ACTOR_STARTUP_TIMEOUT_S, startup_timeout_s


def test_outputs_equal_the_synchronous_core() -> None:
    out, fake, result = run_on()
    assert out == expected()
    assert result.node_losses == ()
    assert any(isinstance(o, ro.OutputIssue) for o in out)
    # Only the final outputs were fetched: no more blocks than output rows.
    assert 0 < fake.fetched <= len(DOCS)


def test_input_batches_and_runs_reuse_the_pools() -> None:
    program = ro.compile(pipeline())
    fake = FakeRay(program)
    with ro.Executor._on_backend(program, fake) as ex:
        for batch in (None, 1, 5):
            got = ex.run(DOCS, input_batch_size=batch, max_active_input_batches=2, progress=False)
            assert got.outputs == expected()
    assert fake.replaced == []


@pytest.mark.parametrize("rpc", [1, 2, 4, 7])
def test_a_lost_actor_is_replaced_and_its_grains_replay(rpc: int) -> None:
    out, fake, result = run_on({rpc: "lost"})
    assert out == expected()
    assert len(fake.replaced) == 1
    assert fake.replaced_lost == [True]  # the backend is told to start it on another node
    assert result.actors_replaced == 1


@pytest.mark.parametrize("seed", range(12))
def test_a_lost_actor_restarts_in_the_background_while_the_others_go_on(seed: int) -> None:
    # The replacement's start comes a few waits later, at random: no call reaches it before
    # (FakeRay.submit checks), the other actors take calls meanwhile, the outputs are exact.
    program = ro.compile(pipeline())
    fake = FakeRay(program, {2 + seed % 5: "lost"}, starts=random.Random(seed))
    with ro.Executor._on_backend(program, fake) as ex:
        result = ex.run(DOCS, progress=False)
    assert result.outputs == expected()
    assert fake.replaced_lost == [True] and result.actors_replaced == 1
    assert fake.restarting == {}  # its start was reported
    assert len(fake.sent_while_restarting) == 1


def test_the_driver_goes_on_while_a_lost_actor_restarts() -> None:
    sent = []
    for seed in range(12):
        program = ro.compile(pipeline())
        fake = FakeRay(program, {3: "lost"}, starts=random.Random(seed))
        with ro.Executor._on_backend(program, fake) as ex:
            assert ex.run(DOCS, progress=False).outputs == expected()
        sent += fake.sent_while_restarting
    assert max(sent) > 0, sent  # calls went to other actors before the restart was in


def test_calls_queued_at_an_actor_give_the_same_outputs() -> None:
    out, fake, result = run_on(tasks_in_flight=[2, 3, 2, 1])
    assert out == expected()
    assert fake.peak_outstanding > 1  # calls really were outstanding together at one actor
    assert [c.actor_instances for c in result.calls] == [1, 2, 1, 1]


@pytest.mark.parametrize("seed", range(60))
def test_queued_calls_with_reports_in_any_order_give_the_same_outputs(seed: int) -> None:
    # Groups read blocks that the engine has released to them, while other calls that carry
    # the same blocks are still out: the actors' block records must stay exact.
    # An OCR batch spans several documents, and each Join call takes one: calls that carry
    # the same OCR block are out together while the block's last group is composed.
    draws = random.Random(seed)
    tasks_in_flight = [draws.randint(1, 3), draws.randint(1, 3), 3, draws.randint(1, 3)]
    shape = {"ocr_batch": draws.choice([2, 5, 8]), "join_batch": draws.choice([1, 2])}
    out, fake, _ = run_on(
        tasks_in_flight=tasks_in_flight,
        shuffle=random.Random(seed),
        shape=shape,
        input_batch_size=draws.choice([None, 6]),
    )
    assert out == expected(**shape), (tasks_in_flight, shape)


@pytest.mark.parametrize("rpc", [2, 3, 8, 13])
def test_an_actor_lost_with_queued_calls_is_replaced_once(rpc: int) -> None:
    out, fake, result = run_on({rpc: "lost"}, tasks_in_flight=[3, 3, 3, 3])
    assert fake.died_queued > 0  # the loss took calls queued behind the failing one
    assert out == expected()
    assert len(fake.replaced) == 1 and result.actors_replaced == 1
    assert fake.replaced_lost == [True]


def test_the_late_report_of_a_replaced_worker_is_fenced(tmp_path: Path) -> None:
    # RPC 3 does not report before the Module's timeout: the driver replaces its worker and
    # replays its Grains; the old attempt's report arrives after that and is rejected.
    program = ro.compile(pipeline(timeout=0.05))
    fake = FakeRay(program, {3: "late"})
    report = tmp_path / "report.json"
    with ro.Executor._on_backend(program, fake) as ex:
        result = ex.run(DOCS, progress=False, report=str(report))
    assert result.outputs == expected()
    assert len(fake.replaced) == 1 and result.actors_replaced == 1
    assert fake.replaced_lost == [False]  # a hang: the node is fine
    assert json.loads(report.read_text())["stale_reports_rejected"] == 1


def test_a_call_report_crosses_the_object_store_unchanged() -> None:
    # An actor's CallReport reaches the driver pickled, through Ray's object store.
    report = CallReport(
        CallStatus.udf_lost_unrebuilt,
        report=b"\x00\xffraw",
        error="ActorLost: gone",
        start_s=1.5,
        end_s=2.25,
        rebuild_error="ValueError: no GPU",
    )
    back = pickle.loads(pickle.dumps(report))
    assert back.status is CallStatus.udf_lost_unrebuilt
    assert (back.report, back.error, back.start_s, back.end_s, back.rebuild_error) == (
        b"\x00\xffraw",
        "ActorLost: gone",
        1.5,
        2.25,
        "ValueError: no GPU",
    )


@pytest.mark.parametrize("backend", [RayBackend, FakeRay])
def test_a_backend_takes_the_contracts_parameters(backend: type) -> None:
    # The C++ pools pass these positionally: a backend's parameters must line up.
    methods = [m for m in vars(RayBackendProtocol) if not m.startswith("_")]
    assert len(methods) == 19, methods
    for name in methods:
        if isinstance(vars(RayBackendProtocol)[name], property):  # read as an attribute
            assert isinstance(getattr(backend, name), property), name
            continue
        want = list(inspect.signature(getattr(RayBackendProtocol, name)).parameters)
        assert list(inspect.signature(getattr(backend, name)).parameters) == want, name


@pytest.mark.parametrize("seed", range(40))
def test_actors_that_start_in_any_order_give_the_same_outputs(seed: int) -> None:
    # Eager start: the driver calls only actors reported ready, which start a few at a time
    # in a random order; one OCR actor of two fails to start in some cases.
    program = ro.compile(pipeline())
    broken = frozenset({(1, seed % 2)}) if seed % 3 == 0 else frozenset()
    fake = FakeRay(program, starts=random.Random(seed), broken=broken)
    with ro.Executor._on_backend(program, fake) as ex:
        got = ex.run(DOCS, progress=False)
        again = ex.run(DOCS, progress=False)
    assert got.outputs == again.outputs == expected()
    ocr = again.pools[1]
    assert ocr.actors == 2
    assert [s.ready for s in ocr.started if (1, s.actor) in broken] in ([], [False])
    if broken and len(ocr.started) == 2:
        assert ocr.ready_actors == 1
        assert "ValueError: no model" in next(s.error for s in ocr.started if not s.ready)


def test_a_pool_whose_every_actor_fails_to_start_is_an_error() -> None:
    program = ro.compile(pipeline())
    fake = FakeRay(program, broken=frozenset({(1, 0), (1, 1)}))
    with ro.Executor._on_backend(program, fake) as ex:
        with pytest.raises(ro.ExecutionError, match=r"no actor of Module<Ocr> could start"):
            ex.run(DOCS, progress=False)
        assert ex.closed
    assert fake.stopped


def test_a_ray_error_fails_the_call_like_a_udf_exception() -> None:
    program = ro.compile(pipeline())
    fake = FakeRay(program, {4: "ray_error"})
    with ro.Executor._on_backend(program, fake) as ex:
        with pytest.raises(ro.ExecutionError, match="failed on Grains .*RaySystemError: no worker"):
            ex.run(DOCS, progress=False)
    assert fake.stopped
    assert fake.replaced == []  # the actor is fine: nothing to replace


def _unplaceable_ray(killed: list[Any]) -> Any:
    """A Ray whose actors are never placed: a cluster without the CPUs they ask for."""
    actor = SimpleNamespace(
        booted=SimpleNamespace(remote=lambda: object()),
        ready=SimpleNamespace(remote=lambda: object()),
    )
    actor_class = SimpleNamespace(options=lambda **_: SimpleNamespace(remote=lambda *_: actor))

    def wait(refs: list[Any], num_returns: int, timeout: float) -> tuple[list[Any], list[Any]]:
        time.sleep(min(timeout, 0.01))
        return [], list(refs)

    return SimpleNamespace(
        remote=lambda **_: lambda cls: actor_class,
        put=lambda value: value,
        wait=wait,
        get=lambda refs: refs,
        cluster_resources=lambda: {"CPU": 2.0, "node:10.0.0.1": 1.0, "object_store_memory": 1e9},
        available_resources=lambda: {"CPU": 0.0},
        kill=lambda a, no_restart: killed.append(a),
        nodes=lambda: [{"NodeID": "n", "Alive": True, "Resources": {"CPU": 2.0}}],
        get_runtime_context=lambda: SimpleNamespace(get_node_id=lambda: "n"),
    )


def test_the_backend_gives_up_starts_the_driver_abandons_naming_what_they_ask_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    killed: list[Any] = []
    monkeypatch.setattr(_ray_backend, "connect", lambda *_: None)
    monkeypatch.setattr(_ray_backend, "import_ray", lambda: _unplaceable_ray(killed))
    program = ro.compile(lambda x: ro.Module(Ocr, name="ocr", replicas=3, num_cpus=1)(x))
    backend = RayBackend(program, b"", actor_startup_timeout_s=0.3)  # returns at once
    assert backend.startup_timeout_s == 0.3
    # Past the timeout the backend decides nothing by itself: the wait is the driver's rule.
    time.sleep(0.35)
    assert backend.take_started() == []
    message = backend.abandon_starts(0, [0, 1, 2])
    assert "did not start within 0.3 s (actor_startup_timeout_s)" in message
    assert "Module<ocr>: 3 actor(s) waiting, each asking {CPU: 1}" in message
    assert "The cluster has {CPU: 2} in all, {CPU: 0} free" in message
    # The Module sets num_cpus=1 itself: the message does not say it set none.
    assert "unless its Module sets" not in message
    assert (
        "Each actor asks for what its Module sets (num_cpus=1 where it sets none, less" in message
    )
    # The first actor had been asked for (and is killed); the two of the second wave
    # (test_ray_actors.py) are never asked for.
    assert len(killed) == 1
    time.sleep(1.0)
    assert backend.take_started() == []  # an abandoned start is never reported
    assert len(killed) == 1 and backend._second_wave == []


def test_a_pool_without_a_first_actor_within_the_startup_timeout_fails_the_run() -> None:
    program = ro.compile(pipeline())
    fake = FakeRay(program, unplaced=frozenset({(1, 0), (1, 1)}), startup_timeout_s=0.3)
    began = time.monotonic()
    with ro.Executor._on_backend(program, fake) as ex:
        with pytest.raises(ro.ExecutionError) as error:
            ex.run(DOCS, progress=False)
        assert ex.closed
    assert 0.3 <= time.monotonic() - began < 10
    name = fake.pools[1]["name"]
    assert (
        f"no actor of Module<{name}> could start (2 of 2 failed); the first error: "
        "2 actor(s) of pool 1 were not placed" in str(error.value)
    )
    assert fake.abandoned == [(1, [0, 1])]  # once, both actors
    assert fake.stopped


def test_a_pool_with_one_ready_actor_keeps_waiting_for_the_others() -> None:
    # One actor of pool 1 cannot be placed, the other runs: the pool is not waiting for a
    # first actor, so nothing is given up and the run ends with every output.
    program = ro.compile(pipeline())
    fake = FakeRay(program, unplaced=frozenset({(1, 1)}), startup_timeout_s=0.05)
    with ro.Executor._on_backend(program, fake) as ex:
        out = ex.run(DOCS, progress=False).outputs
    assert out == expected()
    assert fake.abandoned == []


def test_modules_without_num_cpus_share_a_small_cluster_and_it_is_said_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asked: list[dict[str, Any]] = []
    ray = _unplaceable_ray([])  # a cluster of 2 CPUs
    actor = SimpleNamespace(
        booted=SimpleNamespace(remote=lambda: object()),
        ready=SimpleNamespace(remote=lambda: object()),
    )

    def options(**given: Any) -> Any:
        asked.append(given)
        return SimpleNamespace(remote=lambda *_: actor)

    ray.remote = lambda **_: lambda cls: SimpleNamespace(options=options)
    monkeypatch.setattr(_ray_backend, "connect", lambda *_: None)
    monkeypatch.setattr(_ray_backend, "import_ray", lambda: ray)
    ocr = ro.Module(Ocr, name="ocr", replicas=3)  # 3 CPUs by default, on 2 with "split"
    split = ro.Module(Ocr, name="split", num_cpus=0.5)
    backend = RayBackend(ro.compile(lambda x: ocr(split(x))), b"", actor_startup_timeout_s=60)
    backend._start_second_wave(now=True)  # the other actors (test_ray_actors.py)
    backend.stop()
    assert sorted(a["num_cpus"] for a in asked) == [0.5, 0.5, 0.5, 0.5]
    err = capsys.readouterr().err
    assert err.count("rayorch: the Ray cluster has 2 CPUs") == 1, err
    assert "(ocr: 3 actors) would ask for 3 beside the 0.5 set explicitly" in err


def test_the_startup_timeout_is_the_option_then_the_environment_then_120_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RAYORCH_RAY_STARTUP_TIMEOUT_S", raising=False)
    assert startup_timeout_s(None) == DEFAULT_ACTOR_STARTUP_TIMEOUT_S == 120.0
    monkeypatch.setenv("RAYORCH_RAY_STARTUP_TIMEOUT_S", "45")
    assert startup_timeout_s(None) == 45.0
    assert startup_timeout_s(7) == 7.0
    with pytest.raises(ValueError, match="actor_startup_timeout_s must be a number > 0"):
        startup_timeout_s(0)


LIVE_PORT = 0
LIVE_PAGES: list[str] = []


class ReadLivePage:
    """Fetches the run's live page at every call."""

    def run(self, xs: list[int]) -> list[int]:
        with urllib.request.urlopen(f"http://127.0.0.1:{LIVE_PORT}/", timeout=10) as response:
            LIVE_PAGES.append(response.read().decode())
        return xs


def test_the_live_page_is_served_on_the_ray_backend_and_gone_after_the_run() -> None:
    global LIVE_PORT
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        LIVE_PORT = int(s.getsockname()[1])
    LIVE_PAGES.clear()
    read = ro.Module(ReadLivePage, batch_size=1)
    program = ro.compile(lambda x: read(x))
    with ro.Executor._on_backend(program, FakeRay(program)) as ex:
        result = ex.run([1, 2], progress=False, live=LIVE_PORT)
    assert result.outputs == [1, 2]
    assert len(LIVE_PAGES) == 2 and all("<h1>Live run</h1>" in p for p in LIVE_PAGES)
    assert "0 of 2 parents delivered" in LIVE_PAGES[0]
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{LIVE_PORT}/", timeout=5)
