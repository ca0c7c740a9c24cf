"""The order and pace of the Ray backend's actor starts (rayorch_cpp._ray_start_pace)."""

from __future__ import annotations

from types import SimpleNamespace

from rayorch_cpp._ray_start_pace import boots_at_once, node_cpus, second_wave_order


def test_the_widest_pool_gets_its_actors_first_and_every_pool_its_second_early() -> None:
    # render 4, OCR 8, assemble 2 (the overhead regime's plan): each start goes to the pool
    # with the smallest share of its actors asked for, ties in pipeline order.
    order = second_wave_order([4, 8, 2], [True, True, True])
    assert order == [
        (1, 1), (0, 1), (1, 2), (1, 3), (0, 2), (1, 4), (2, 1), (1, 5), (0, 3), (1, 6), (1, 7),
    ]  # fmt: skip


def test_the_second_wave_asks_for_every_other_actor_of_a_fixed_pool_once() -> None:
    slots, started = [3, 5, 1, 2, 4], [True, False, True, True, True]
    order = second_wave_order(slots, started)
    expected = {(p, a) for p, n in enumerate(slots) if started[p] for a in range(1, n)}
    assert sorted(order) == sorted(expected) and len(order) == len(expected)
    for p in range(len(slots)):  # each pool's actors in their own order
        mine = [a for q, a in order if q == p]
        assert mine == sorted(mine)


def test_an_equal_plan_goes_round_robin_in_pipeline_order() -> None:
    assert second_wave_order([3, 3], [True, True]) == [(0, 1), (1, 1), (0, 2), (1, 2)]
    assert second_wave_order([1, 0, 1], [True, True, True]) == []


def test_half_of_each_nodes_cpus_boot_at_once_and_never_none() -> None:
    assert boots_at_once([2]) == 1
    assert boots_at_once([1]) == 1
    assert boots_at_once([16]) == 8
    assert boots_at_once([0, 8, 8, 3]) == 9  # a head without CPUs takes no actor
    assert boots_at_once([]) == 1 and boots_at_once([0]) == 1


def test_the_drivers_node_counts_no_more_cpus_than_the_driver_may_run_on() -> None:
    ray = SimpleNamespace(
        get_runtime_context=lambda: SimpleNamespace(get_node_id=lambda: "here"),
        nodes=lambda: [
            {"NodeID": "here", "Alive": True, "Resources": {"CPU": 14.0}},
            {"NodeID": "gone", "Alive": False, "Resources": {"CPU": 64.0}},
            {"NodeID": "other", "Alive": True, "Resources": {"CPU": 32.0}},
            {"NodeID": "head", "Alive": True, "Resources": {}},
        ],
    )
    assert node_cpus(ray, 2) == [2, 32, 0]
    assert boots_at_once(node_cpus(ray, 2)) == 17
