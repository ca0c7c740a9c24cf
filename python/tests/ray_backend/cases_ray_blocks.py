"""Ray cases: blocks and queued calls. A block crosses to each actor once and is dropped after;
calls queued at an actor give the local outputs, and replay when the actor dies with them.

Run only through test_ray.py (ray_cluster.py starts the cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import ray_udfs as u
from ray_cluster import DOCS, local, on_ray

import rayorch_cpp as ro


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
