"""Where a replacement for an actor lost with its node may go, and how many actor slots a
self-sizing pool gets within its budget (rayorch_cpp._ray_placement)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("ray")

import rayorch_cpp as ro  # noqa: E402
from rayorch_cpp._ray_placement import (  # noqa: E402
    NODE_LABEL,
    actor_options,
    cluster_budget,
    options_avoiding,
    self_sizing_slots,
    share_default_cpus,
)


def node(node_id: str, alive: bool = True, cpus: float = 4.0, gpus: float = 0.0) -> dict[str, Any]:
    return {"NodeID": node_id, "Alive": alive, "Resources": {"CPU": cpus, "GPU": gpus}}


def test_the_lost_node_is_excluded_by_its_label_and_the_users_options_are_kept() -> None:
    options = {"num_cpus": 1, "label_selector": {"zone": "a"}, "max_restarts": 0}
    out = options_avoiding(options, "dead", [node("dead"), node("other")])
    assert out == {
        "num_cpus": 1,
        "label_selector": {"zone": "a", NODE_LABEL: "!dead"},
        "max_restarts": 0,
    }
    assert options == {"num_cpus": 1, "label_selector": {"zone": "a"}, "max_restarts": 0}


def test_no_other_live_node_that_can_host_the_actor_places_it_as_usual() -> None:
    nodes = [node("dead"), node("down", alive=False), node("small", cpus=0.5)]
    assert options_avoiding({"num_cpus": 1}, "dead", nodes) is None
    assert options_avoiding({"num_gpus": 1}, "dead", [node("dead"), node("cpu-only")]) is None
    assert options_avoiding({"num_gpus": 1}, "dead", [node("dead"), node("gpu", gpus=1)])


def test_a_placement_the_user_chose_is_never_overridden() -> None:
    nodes = [node("dead"), node("other")]
    assert options_avoiding({"scheduling_strategy": object()}, "dead", nodes) is None
    assert options_avoiding({"label_selector": {NODE_LABEL: "x"}}, "dead", nodes) is None
    spread = options_avoiding({"scheduling_strategy": "SPREAD"}, "dead", nodes)
    assert spread is not None and "scheduling_strategy" not in spread


def test_the_default_budget_is_the_clusters_resources_without_memory_and_node_entries() -> None:
    resources = {
        "CPU": 24.0,
        "GPU": 2.0,
        "memory": 1e10,
        "object_store_memory": 1e9,
        "node:127.0.0.1": 1.0,
        "node:__internal_head__": 1.0,
        "accelerator_type:H200": 1.0,
        "disk": 3.0,
    }
    assert cluster_budget(resources) == {"CPU": 24.0, "GPU": 2.0, "disk": 3.0}


def test_a_self_sizing_pool_gets_its_maximum_else_what_the_budget_holds() -> None:
    budget = {"CPU": 24.0, "GPU": 2.0}
    assert self_sizing_slots("Ocr", {"max_replicas": 5}, {"CPU": 1.0}, budget) == 5
    assert self_sizing_slots("Ocr", {}, {"CPU": 4.0}, budget) == 6
    assert self_sizing_slots("Ocr", {}, {"CPU": 1.0, "GPU": 0.5}, budget) == 4
    assert self_sizing_slots("Ocr", {}, {}, budget) == 24  # asks nothing: one per CPU
    # What cannot fit still gets its minimum (the driver then names the Module).
    assert self_sizing_slots("Ocr", {"min_replicas": 2}, {"GPU": 1.0}, {"CPU": 8.0}) == 2
    assert self_sizing_slots("Ocr", {}, {"GPU": 1.0}, {"CPU": 8.0}) == 1


def test_a_self_sizing_pool_takes_one_call_at_a_time_per_actor() -> None:
    with pytest.raises(ro.ExecutionError, match=r"Module<Ocr> has replicas='auto' and max_tasks"):
        self_sizing_slots("Ocr", {"max_tasks_in_flight_per_actor": 2}, {}, {"CPU": 4.0})
    assert self_sizing_slots("Ocr", {"max_tasks_in_flight_per_actor": 1}, {}, {"CPU": 4.0}) == 4


def test_every_ray_actor_option_passes_through_and_a_typo_names_the_closest() -> None:
    """The Module options passed to Ray are Ray's own actor options (those the engine reads,
    and `name`, which names the Call here, aside), so a reference pipeline's options run
    unchanged; a misspelt one is still a CompileError naming the closest option."""
    from ray._common.ray_option_utils import actor_options

    from rayorch_cpp import _core
    from rayorch_cpp._ray_placement import actor_options as pool_actor_options

    engine_reads = {"num_cpus", "num_gpus", "resources", "name"}
    assert set(_core.ray_actor_options()) == set(actor_options) - engine_reads

    class Echo:
        def run(self, xs: list[int]) -> list[int]:
            return xs

    pool = {"cpus": 1.0, "gpus": 0.0, "resources": {}}
    options = {"max_restarts": 0, "max_task_retries": 0, "lifetime": None, "batch_size": 2}
    assert pool_actor_options(pool, options) == {
        "num_cpus": 1.0,
        "num_gpus": 0.0,
        "max_restarts": 0,
        "max_task_retries": 0,
    }

    def pipeline(options: dict[str, Any]) -> Any:
        module = ro.RayModule(Echo).ray_options(**options)
        return lambda x: module(x)

    with ro.Executor(pipeline({"max_restarts": 0, "max_task_retries": 0})) as ex:
        assert ex.run([1, 2, 3], progress=False).outputs == [1, 2, 3]
    with pytest.raises(ro.CompileError, match="unknown option 'max_restart'; did you mean "):
        ro.compile(pipeline({"max_restart": 0}))


class Stage:
    def run(self, xs: list[Any]) -> list[Any]:
        return xs


def ray_options_of(pipeline: Any, cluster_cpus: float) -> tuple[list[float], str | None]:
    """Each pool's num_cpus on a cluster of `cluster_cpus`, and the line that says why."""
    program = ro.compile(pipeline)
    pools = list(program.native.pools())
    modules = program.pool_options()
    options = [actor_options(pool, m) for pool, m in zip(pools, modules, strict=True)]
    said = share_default_cpus(pools, modules, options, cluster_cpus)
    return [o["num_cpus"] for o in options], said


def test_modules_without_num_cpus_share_a_cluster_smaller_than_they_ask_for() -> None:
    a = ro.Module(Stage, name="a", replicas=3)  # asks 3 CPUs by default
    b = ro.Module(Stage, name="b")  # 1
    c = ro.Module(Stage, name="c", num_cpus=0.5)  # explicit: never changed
    auto = ro.Module(Stage, name="auto", replicas="auto", max_replicas=4)  # sizes itself

    def pipeline(x: Any) -> Any:
        return auto(c(b(a(x))))

    # 4.5 CPUs asked by the fixed pools; on 2 CPUs the four default actors share 1.5.
    cpus, said = ray_options_of(pipeline, 2.0)
    assert cpus == [0.375, 0.375, 0.5, 1.0]
    assert said is not None and said.startswith("rayorch: the Ray cluster has 2 CPUs; ")
    assert "(a, b: 4 actors) would ask for 4 beside the 0.5 set explicitly" in said
    assert "each of their actors gets num_cpus=0.375" in said
    # Room enough: nothing changes, nothing is said.
    assert ray_options_of(pipeline, 4.5) == ([1.0, 1.0, 0.5, 1.0], None)
    # Explicit ones that leave no room: the defaults stay as they are (Ray names the wait).
    big = ro.Module(Stage, name="big", num_cpus=8)
    assert ray_options_of(lambda x: big(b(x)), 4.0) == ([1.0, 8.0], None)
    # A third of a CPU each is rounded down to a thousandth.
    three = ro.Module(Stage, name="three", replicas=3)
    assert ray_options_of(lambda x: three(x), 1.0)[0] == [0.333]
