"""Co-located Modules from Python (the ``colocate`` option, DESIGN 5.12): they share one
pool, keep their own batch sizes and metrics, and a disagreement on an option of the pool
is a CompileError naming both Modules and the option. With ``auto_colocate=True`` the
compiler finds the chains itself, and never joins Modules that disagree, Ray's actor options
included."""

from __future__ import annotations

from typing import Any

import pytest

import rayorch_cpp as ro
from rayorch_cpp import F


class Split:
    def run(self, xs: list[int]) -> list[list[int]]:
        return [list(range(x % 5)) for x in xs]


class Square:
    def run(self, xs: list[int]) -> list[int]:
        return [x * x for x in xs]


class Inc:
    def run(self, xs: list[int]) -> list[int]:
        return [x + 1 for x in xs]


class Total:
    def run(self, groups: list[list[int]]) -> list[int]:
        return [sum(g) for g in groups]


def pipeline(square: dict[str, Any], inc: dict[str, Any]) -> Any:
    split = ro.Module(Split)
    sq = ro.Module(Square, **square)
    plus = ro.Module(Inc, **inc)
    total = ro.Module(Total)

    def forward(x: ro.Port) -> Any:
        return total(F.reduce(plus(sq(F.expand(split(x))))))

    return forward


ROWS = list(range(30))
WANT = [sum(i * i + 1 for i in range(x % 5)) for x in ROWS]


def test_co_located_modules_share_a_pool_and_keep_their_batch_sizes() -> None:
    forward = pipeline(
        {"replicas": 2, "batch_size": 3, "colocate": "pages"},
        {"replicas": 2, "batch_size": 7, "colocate": "pages"},
    )
    program = ro.compile(forward)
    assert [p["name"] for p in program.native.pools()] == ["Split", "Square+Inc", "Total"]
    assert program.call_pools == (0, 1, 1, 2)
    with ro.Executor(forward) as ex:
        result = ex.run(ROWS, progress=False)
    assert result.outputs == WANT
    square, inc = result.calls[1], result.calls[2]
    assert (square.call, square.batch_size) == ("Square#1", 3)
    assert (inc.call, inc.batch_size) == ("Inc#2", 7)
    assert max(square.batch_sizes) <= 3 and max(inc.batch_sizes) <= 7
    # One pool of two actors, counted once: Split, Square+Inc (2), Total.
    assert result.actor_count == 4


@pytest.mark.parametrize(
    ("square", "inc", "message"),
    [
        ({"replicas": 2}, {"replicas": 3}, "differ in replicas (2 and 3)"),
        ({"num_cpus": 1}, {"num_cpus": 2}, "differ in cpus (1 and 2)"),
        ({"timeout": 5}, {}, "differ in timeout (5000 ms and 0 ms)"),
        (
            {"runtime_env": {"env_vars": {"A": "1"}}},
            {},
            "differ in runtime_env ({'env_vars': {'A': '1'}} and None)",
        ),
        (
            {"max_tasks_in_flight_per_actor": 2},
            {},
            "differ in max_tasks_in_flight_per_actor (2 and None)",
        ),
    ],
)
def test_co_located_modules_that_disagree_on_a_pool_option_do_not_compile(
    square: dict[str, Any], inc: dict[str, Any], message: str
) -> None:
    forward = pipeline({**square, "colocate": "g"}, {**inc, "colocate": "g"})
    with pytest.raises(ro.CompileError) as error:
        ro.compile(forward)
    text = str(error.value)
    assert "Module<Square> and Module<Inc> are co-located" in text
    assert message in text
    assert "drop colocate from one of them" in text


def test_a_group_name_that_is_not_a_string_is_a_compile_error() -> None:
    with pytest.raises(ro.CompileError, match="option colocate must be a group name"):
        ro.compile(pipeline({"colocate": 3}, {}))


def test_the_compiler_finds_a_chain_when_asked_and_the_run_is_the_same() -> None:
    forward = pipeline({"replicas": 2, "batch_size": 3}, {"replicas": 2, "batch_size": 7})
    apart = ro.compile(forward)
    assert [p["name"] for p in apart.native.pools()] == ["Split", "Square", "Inc", "Total"]
    found = ro.compile(forward, auto_colocate=True)
    assert found.auto_colocate
    assert [p["name"] for p in found.native.pools()] == ["Split", "Square+Inc", "Total"]
    assert [p["found_by_compiler"] for p in found.native.pools()] == [False, True, False]
    assert "co-located pool Square+Inc: Square#1, Inc#2 (found by the compiler)" in (
        found.explain()
    )
    for isolation in ("threads", "process"):
        with ro.Executor(ro.compile(forward, auto_colocate=True, isolation=isolation)) as ex:
            result = ex.run(ROWS, progress=False)
        assert result.outputs == WANT, isolation
        square, inc = result.calls[1], result.calls[2]
        assert max(square.batch_sizes) <= 3 and max(inc.batch_sizes) <= 7
        assert result.actor_count == 4, isolation  # Split, Square+Inc (2), Total


@pytest.mark.parametrize(
    ("square", "inc"),
    [
        ({"replicas": 2}, {"replicas": 3}),
        ({"num_cpus": 1}, {"num_cpus": 2}),
        ({"runtime_env": {"env_vars": {"A": "1"}}}, {}),
        ({"max_tasks_in_flight_per_actor": 2}, {}),
        ({"colocate": "declared"}, {}),
    ],
)
def test_the_compiler_does_not_join_modules_that_disagree(
    square: dict[str, Any], inc: dict[str, Any]
) -> None:
    found = ro.compile(pipeline(square, inc), auto_colocate=True)
    assert not any(p["found_by_compiler"] for p in found.native.pools())
    assert len(found.native.pools()) == 4


def test_equal_ray_options_do_not_keep_a_chain_apart() -> None:
    env = {"runtime_env": {"env_vars": {"A": "1"}}, "max_concurrency": 1}
    found = ro.compile(pipeline(dict(env), dict(env)), auto_colocate=True)
    assert [p["name"] for p in found.native.pools()] == ["Split", "Square+Inc", "Total"]


def test_auto_colocate_must_match_a_program_compiled_already() -> None:
    program = ro.compile(pipeline({}, {}), auto_colocate=True)
    assert ro.compile(program) is program
    assert ro.compile(program, auto_colocate=True) is program
    with pytest.raises(ValueError, match="compiled with auto_colocate=True"):
        ro.compile(program, auto_colocate=False)
    with pytest.raises(ValueError, match="auto_colocate must be True or False"):
        ro.compile(pipeline({}, {}), auto_colocate="yes")  # type: ignore[arg-type]
