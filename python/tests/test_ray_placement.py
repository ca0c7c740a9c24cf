"""Where a replacement for an actor lost with its node may go, and how many actor slots a
self-sizing pool gets within its budget (rayorch_cpp._ray_placement)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("ray")

import rayorch_cpp as ro  # noqa: E402
from rayorch_cpp._ray_placement import (  # noqa: E402
    NODE_LABEL,
    cluster_budget,
    options_avoiding,
    self_sizing_slots,
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
