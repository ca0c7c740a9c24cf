"""The Ray backend's worker pools (python/src/ray_pools.cc) through FakeRay when values and
nodes are lost: input blocks rebuilt from lineage, calls reported before Ray ended them
holding their actors (the backend's record of held calls: take_resumed), node losses in the
metrics and the report, outputs lost before delivery, and the budgets past which the Grains
fail."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from fake_ray import FakeRay
from pools_rig import DOCS, expected, pipeline, run_on

import rayorch_cpp as ro


@pytest.mark.parametrize("rpc", [1, 2, 8, 13])
def test_a_lost_input_block_is_rebuilt_and_its_readers_get_its_values(rpc: int) -> None:
    # Ray's error names no object here, so every block the call carried counts as lost: the
    # engine runs their producers again (or, for RPC 1, puts the source rows into the store
    # again) and the call's Grains wait for them (DESIGN 5.13).
    out, fake, result = run_on({rpc: "block_lost"})
    assert out == expected()
    assert result.values_rebuilt > 0
    assert (result.grains_reexecuted > 0 and result.rebuild_s > 0) == (rpc != 1)


@pytest.mark.parametrize("rpc", [1, 2, 8, 13])
def test_a_call_reported_before_ray_ended_it_holds_its_actor_until_then(rpc: int) -> None:
    # The call's inputs are rebuilt and its Grains replay at once, on other actors or after
    # the wait; the held actor gets no call until it is resumed (FakeRay asserts it), and
    # calls again after it when its pool has work left (the Pages actor, the first call).
    out, fake, result = run_on({rpc: "held"})
    assert out == expected()
    assert result.values_rebuilt > 0
    assert len(fake.resumed) == 1 and fake.held_calls == {}
    pool, actor, sent_before = fake.resumed[0]
    if rpc == 1:
        assert (pool, actor) in fake.calls_to[sent_before:]
    assert fake.replaced == []  # a held actor is not replaced: its UDF instance stays


@pytest.mark.parametrize("seed", range(3))
def test_an_actor_held_longer_than_a_start_takes_restarts_in_the_background(seed: int) -> None:
    # Ray would hold the actor until it marks the lost node dead: past a start's time (at
    # least a second) the driver restarts it instead; the fresh actor's start comes like
    # any, no call reached the held one (FakeRay.submit checks), the outputs are exact. The
    # first call goes to the only Pages actor, so the run needs it back.
    program = ro.compile(pipeline())
    fake = FakeRay(program, {1: "stuck"}, starts=random.Random(seed))
    with ro.Executor._on_backend(program, fake) as ex:
        result = ex.run(DOCS, progress=False)
    assert result.outputs == expected()
    assert fake.held_restarts == [(0, 0)] == fake.calls_to[:1]
    assert fake.held_calls == {} and fake.resumed == [] and fake.restarting == {}
    assert result.actors_replaced == 1 and result.values_rebuilt > 0


@pytest.mark.parametrize("seed", range(30))
def test_held_actors_with_reports_in_any_order_give_the_same_outputs(seed: int) -> None:
    # Calls reported before Ray ended them, at random, with queued calls and reports in any
    # order: the outputs are the synchronous core's, and no call reaches a held actor.
    draws = random.Random(seed)
    tasks_in_flight = [draws.randint(1, 3) for _ in range(4)]
    held = {rpc: "held" for rpc in draws.sample(range(1, 15), draws.randint(1, 3))}
    shape = {"infra": 3}  # every held call is a loss charged to its Grains
    out, fake, _ = run_on(
        held, tasks_in_flight=tasks_in_flight, shuffle=random.Random(seed), shape=shape
    )
    assert out == expected(**shape), (tasks_in_flight, held)
    assert fake.held_calls == {}


@pytest.mark.parametrize("fault", ["lost", "block_lost"])
def test_the_node_losses_the_backend_detects_are_in_the_metrics_and_the_report(
    fault: str, tmp_path: Path
) -> None:
    program = ro.compile(pipeline())
    fake = FakeRay(program, {4: fault})
    report = tmp_path / "report.json"
    with ro.Executor._on_backend(program, fake) as ex:
        result = ex.run(DOCS, progress=False, report=str(report))
    assert result.outputs == expected()
    [(node, address, _, cause)] = fake.lost_nodes
    [loss] = result.node_losses
    assert (loss.node, loss.address, loss.cause) == (node, address, cause)
    assert 0 < loss.detected_s <= result.elapsed_s
    # The report says the same.
    written = json.loads(report.read_text())["node_losses"]
    assert written == [
        {"node": node, "address": address, "detected_seconds": loss.detected_s, "cause": cause}
    ]


def test_outputs_lost_before_delivery_are_rebuilt_and_delivered() -> None:
    # Every call's outputs are lost in turn once read (the node went before the driver
    # fetched them); where they are a root's outputs, the fetch finds them lost, the engine
    # runs their producers again (DESIGN 5.13) and delivers the rebuilt values.
    pytest.importorskip("ray", reason="the fake raises Ray's ObjectLostError")
    program = ro.compile(pipeline())
    calls = run_on()[1].submitted
    delivered_lost = 0
    for rpc in range(1, calls + 1):
        fake = FakeRay(program, {rpc: "outputs_gone"})
        with ro.Executor._on_backend(program, fake) as ex:
            result = ex.run(DOCS, progress=False)
        assert result.outputs == expected(), rpc
        if fake.lost_fetches:
            delivered_lost += 1
            assert result.grains_reexecuted > 0 and result.values_rebuilt > 0, rpc
            assert [n.cause for n in result.node_losses] == ["ObjectLostError: gone"]
    assert delivered_lost > 0  # some call's outputs were lost between their reader and delivery


def test_past_the_budget_a_lost_input_block_fails_the_grains_that_read_it() -> None:
    out, fake, _ = run_on({4: "block_lost"}, shape={"infra": 0})
    issues = [o for o in out if isinstance(o, ro.OutputIssue)]
    lost = [o for o in issues if o.cause and "rayorch::BlockLost: ObjectLostError" in o.cause]
    assert lost, out
    assert all(
        o.outcome is ro.ItemOutcome.SUPPRESSED or o.outcome is ro.ItemOutcome.FAILED for o in lost
    )
    # Every other document is what the synchronous core gives.
    want = expected(infra=0)
    hit = {i for i, o in enumerate(out) if o in lost}
    assert [o for i, o in enumerate(out) if i not in hit] == [
        o for i, o in enumerate(want) if i not in hit
    ]


def test_an_actor_lost_on_every_attempt_exhausts_the_infrastructure_budget() -> None:
    program = ro.compile(pipeline())
    fake = FakeRay(program, {n: "lost" for n in range(1, 200)})
    with ro.Executor._on_backend(program, fake) as ex:
        with pytest.raises(ro.ExecutionError) as error:
            ex.run(DOCS, progress=False)
        assert not ex.closed  # each lost actor was replaced; close() stops them
    assert fake.stopped
    assert "ActorDiedError: the actor died" in str(error.value)
    assert 1 < len(fake.replaced) < 200
