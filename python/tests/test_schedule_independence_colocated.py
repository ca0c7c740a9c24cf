"""Co-located pools give the outputs of the synchronous core without co-location (DESIGN
5.12): every Module in one declared pool, and the chains the compiler finds
(auto_colocate), over the random pipelines of test_schedule_independence."""

from __future__ import annotations

import random

import pytest

import rayorch_cpp as ro
from test_schedule_independence import make_pipeline, run_drawn, seed_data, sync_outputs


@pytest.mark.parametrize("seed", range(12))
def test_co_located_pools_give_the_same_outputs(seed: int) -> None:
    """Every Module in one co-located pool (its actors hold one instance of each), on the
    local executor, in worker processes and on the synchronous core, against the synchronous
    core without co-location."""
    expected = sync_outputs(seed)
    draws = random.Random(9000 + seed)
    for variant in range(4):
        replicas = draws.randint(1, 3)
        if variant == 2:
            # Worker processes trace the pickled pipeline again: options from a fixed seed.
            pipeline = make_pipeline(
                seed, None, option_seed=9500 + seed, colocated_replicas=replicas
            )
            executor = ro.Executor(pipeline, isolation="process")
        else:
            pipeline = make_pipeline(seed, draws, colocated_replicas=replicas)
            executor = ro.Executor(pipeline) if variant < 3 else ro.SyncExecutor(pipeline)
        with executor as ex:
            got = run_drawn(ex, seed_data(seed), draws)
        assert got == expected, f"seed {seed} variant {variant}"


FOUND_POOLS: dict[int, int] = {}


@pytest.mark.parametrize("seed", range(12))
def test_pools_the_compiler_co_located_give_the_same_outputs(seed: int) -> None:
    """Every Module with the same pool options and the compiler co-locating the chains it
    finds (auto_colocate), on the local executor, in worker processes and on the
    synchronous core, against the synchronous core without co-location."""
    expected = sync_outputs(seed)
    draws = random.Random(9700 + seed)
    for variant in range(4):
        replicas = draws.randint(1, 3)
        isolation = "process" if variant == 2 else None
        if variant == 2:
            pipeline = make_pipeline(
                seed, None, option_seed=9800 + seed, colocated_replicas=replicas, declared=False
            )
        else:
            pipeline = make_pipeline(seed, draws, colocated_replicas=replicas, declared=False)
        program = ro.compile(pipeline, auto_colocate=True, isolation=isolation)
        FOUND_POOLS[seed] = sum(p["found_by_compiler"] for p in program.native.pools())
        executor = ro.Executor(program) if variant < 3 else ro.SyncExecutor(program)
        with executor as ex:
            got = run_drawn(ex, seed_data(seed), draws)
        assert got == expected, f"seed {seed} variant {variant}"


def test_the_random_pipelines_have_chains_the_compiler_co_locates() -> None:
    """The suite above is about something: a good share of its pipelines have a found pool
    (5 of the 12; a filter, broadcast or reduce between two maps keeps them apart)."""
    for seed in range(12):
        if seed not in FOUND_POOLS:
            program = ro.compile(
                make_pipeline(seed, random.Random(0), colocated_replicas=1, declared=False),
                auto_colocate=True,
            )
            FOUND_POOLS[seed] = sum(p["found_by_compiler"] for p in program.native.pools())
    assert sum(1 for n in FOUND_POOLS.values() if n > 0) >= 4, FOUND_POOLS
