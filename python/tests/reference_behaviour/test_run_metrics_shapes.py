"""RunResult's metrics in the reference's shapes: the Grains of each RPC as a tuple, actors
counted with their replacements, values released, and an empty run's one input batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import rayorch_cpp as ro
from rayorch_cpp import F


class Double:
    def run(self, xs: list[int]) -> list[int]:
        return [2 * x for x in xs]


class FailsOnce:
    """Raises `error` on its first call (ActorLost: the actor is lost), then doubles."""

    def __init__(self, marker: str, error: type[Exception]) -> None:
        self.marker = Path(marker)
        self.error = error

    def run(self, xs: list[int]) -> list[int]:
        if not self.marker.exists():
            self.marker.write_text("failed once")
            raise self.error("the first call")
        return [2 * x for x in xs]


class Children:
    def run(self, xs: list[int]) -> list[list[int]]:
        return [list(range(x)) for x in xs]


class Sum:
    def run(self, groups: list[list[int]]) -> list[int]:
        return [sum(g) for g in groups]


def one_call(udf: Any, *init: Any, **options: Any) -> Any:
    module = ro.RayModule(udf).pre_init(*init).ray_options(replicas=1, **options)
    return lambda values: module(values)


def test_batch_sizes_are_the_grains_of_each_rpc_in_order(tmp_path: Path) -> None:
    pipeline = one_call(
        FailsOnce,
        str(tmp_path / "marker"),
        ValueError,
        batch_size=2,
        recovery=ro.RecoveryPolicy.retry_batch(max_retries=1),
    )
    with ro.SyncExecutor(pipeline) as ex:
        result = ex.run(range(5))
    call = result.calls[0]
    assert result.outputs == [0, 2, 4, 6, 8]
    assert call.batch_sizes == (2, 2, 2, 1)  # the failed call, its retry, then the rest
    assert call.batch_size_histogram == {2: 3, 1: 1}
    assert call.rpcs == len(call.batch_sizes)
    assert call.grain_dispatches == sum(call.batch_sizes)


def test_actor_instances_count_the_actors_that_replaced_lost_ones(tmp_path: Path) -> None:
    pipeline = one_call(FailsOnce, str(tmp_path / "marker"), ro.ActorLost, batch_size=4)
    with ro.Executor(pipeline) as ex:
        first = ex.run(range(4), input_batch_size=4)
        second = ex.run(range(4), input_batch_size=4)
    assert first.outputs == second.outputs == [0, 2, 4, 6]
    assert first.calls[0].actor_instances == 2
    assert first.calls[0].actors_replaced == 1
    assert first.actor_count == 2
    assert first.calls[0].grain_requeues == 4
    assert second.calls[0].actor_instances == 1  # nothing replaced in this run
    assert second.actor_count == 1


def test_input_batches_count_entities_items_expansions_and_released_values() -> None:
    children = ro.RayModule(Children)
    total = ro.RayModule(Sum)

    def pipeline(values: Any) -> Any:
        return total(F.reduce(F.expand(children(values))))

    with ro.SyncExecutor(pipeline) as ex:
        result = ex.run([2, 0, 3], input_batch_size=3)
        empty = ex.run([])
    assert result.outputs == [1, 0, 3]
    (batch,) = result.input_batches
    assert batch.entity_count == 3 + 5  # the rows and their children
    assert batch.expansion_count == 3
    # Ports: the source, the lists, the children (child Domain), the groups, the sums.
    assert batch.item_count == 3 + 3 + 5 + 3 + 3
    assert 0 < batch.released_values <= batch.item_count
    assert result.released_values == batch.released_values
    (nothing,) = empty.input_batches
    assert (nothing.rows, nothing.entity_count, nothing.grain_count) == (0, 0, 0)
    assert empty.calls[0].rpcs == 0
