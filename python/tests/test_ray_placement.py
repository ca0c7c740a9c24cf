"""Where a replacement for an actor lost with its node may go (rayorch_cpp._ray_placement)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("ray")

from rayorch_cpp._ray_placement import NODE_LABEL, options_avoiding  # noqa: E402


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
