"""Randomized pipelines give the same outputs for every legal schedule (DESIGN 5, Contract):
the local executor with varied replicas, batch sizes, input batches and active-batch limits,
and actors that join their pools in a random order (every constructor waits a random few
milliseconds: eager start), and the synchronous core, fed by a list or by a generator (a
lazy source).

Wider sweeps (seeds up to 150, 30 rows) find one schedule-dependent cause, an engine issue
pinned by test_failures.py::test_group_failure_cause_decides_the_gather_whatever_the_order:
seed 116 has a RecordFailure and a later-ordinal GroupFailure under one parent."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

import rayorch_cpp as ro
from rayorch_cpp import F
from rayorch_cpp.io import JsonlSink, read_manifest


class StartsLate:
    """A UDF whose constructor takes a random few milliseconds, as loading a model would: the
    actors of a pool become ready in a random order, after the run started."""

    def __init__(self) -> None:
        time.sleep(random.random() * 0.005)


class Affine(StartsLate):
    """x -> (a*x + b) mod 101, with typed failures on chosen residues."""

    def __init__(self, a: int, b: int, record_mod: int = 0, group_mod: int = 0) -> None:
        super().__init__()
        self.a, self.b, self.record_mod, self.group_mod = a, b, record_mod, group_mod

    def run(self, xs: list[int]) -> list[Any]:
        out: list[Any] = []
        for x in xs:
            y = (self.a * x + self.b) % 101
            if self.group_mod and y % self.group_mod == 0:
                out.append(ro.GroupFailure(f"group {y}"))
            elif self.record_mod and y % self.record_mod == 0:
                out.append(ro.RecordFailure(f"record {y}"))
            else:
                out.append(y)
        return out


class Fan(StartsLate):
    """x -> a list of x % k derived values (possibly empty)."""

    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = k

    def run(self, xs: list[int]) -> list[list[int]]:
        return [[(x * 7 + i) % 101 for i in range(x % self.k)] for x in xs]


class Keep(StartsLate):
    def __init__(self, m: int) -> None:
        super().__init__()
        self.m = m

    def run(self, xs: list[int]) -> list[bool]:
        return [x % self.m != 0 for x in xs]


class Add(StartsLate):
    def run(self, a: list[int], b: list[int]) -> list[int]:
        return [(x + y) % 101 for x, y in zip(a, b)]


class Fold(StartsLate):
    def run(self, groups: list[list[int]], parent: list[int]) -> list[int]:
        return [(sum(g) * 3 + len(g) + p) % 101 for g, p in zip(groups, parent)]


class FoldNested(StartsLate):
    """Folds a gather of gathers: the groups of its children's groups, in order."""

    def run(self, nested: list[list[list[int]]], parent: list[int]) -> list[int]:
        return [
            (sum((k + 1) * (sum(g) + 2 * len(g)) for k, g in enumerate(groups)) + p) % 101
            for groups, p in zip(nested, parent)
        ]


# The rarer shapes each structure seed drew (the guard test reads them).
SHAPES: dict[int, set[str]] = {}


def make_pipeline(
    structure_seed: int,
    options: random.Random | None,
    queued_calls: bool = False,
    option_seed: int | None = None,
    auto_pools: bool = False,
    colocated_replicas: int = 0,
    declared: bool = True,
) -> Any:
    """A random pipeline; `options` draws each Module's replicas and batch size, and with
    `queued_calls` its calls in flight per Ray actor. With `option_seed`, they are drawn
    from a generator seeded anew by each trace instead. With `auto_pools`, most Modules
    size themselves (``replicas="auto"``) up to the drawn replicas. With
    `colocated_replicas`, every Module shares one co-located pool of that many actors
    (DESIGN 5.12), each Call with its own drawn batch size; without `declared`, no Module
    names the group and every Module has those replicas, for the compiler to find the chains
    (auto_colocate)."""
    per_trace: list[random.Random] = []

    def opts() -> dict[str, Any]:
        if option_seed is not None:
            options = per_trace[-1]
        else:
            options = outer_options
        if options is None:
            return {}
        if colocated_replicas:
            shared = {"replicas": colocated_replicas, "batch_size": options.randint(1, 5)}
            return {**shared, "colocate": "all"} if declared else shared
        drawn: dict[str, Any] = {
            "replicas": options.randint(1, 3),
            "batch_size": options.randint(1, 5),
        }
        if auto_pools and options.random() < 0.8:
            drawn["max_replicas"] = drawn["replicas"]
            drawn["min_replicas"] = options.randint(0, 1)
            drawn["replicas"] = "auto"
        if queued_calls:
            drawn["max_tasks_in_flight_per_actor"] = options.randint(1, 3)
        return drawn

    outer_options = options

    def forward(x: ro.Port) -> Any:
        if option_seed is not None:
            per_trace.append(random.Random(option_seed))
        rng = random.Random(structure_seed)
        shared: dict[str, ro.RayModule] = {}

        def module(kind: str, udf: Any, *init: Any) -> ro.RayModule:
            key = f"{kind}{init}"
            if key in shared and rng.random() < 0.5:
                return shared[key]  # a second Call on the same pool
            m = ro.RayModule(udf).pre_init(*init).ray_options(**opts())
            shared[key] = m
            return m

        # Shapes drawn from a stream of their own, so the other steps stay as they were.
        shapes = random.Random(structure_seed * 7919 + 1)
        drawn = SHAPES.setdefault(structure_seed, set())
        if shapes.random() < 0.1:
            # No Call at all: the outputs follow from the source alone.
            drawn.add("no call")
            return (x, x) if shapes.random() < 0.5 else x
        extra_outputs: list[Any] = []
        stack = [x]

        def gather_of_gathers() -> None:
            """A gather of gathers over two expand levels: folded in the grandparent Domain,
            and now and then an output of the root as it is."""
            inner = F.reduce(stack.pop())
            stack[-1] = module("fold", Fold)(inner, stack[-1])
            nested = F.reduce(inner)
            drawn.add("gather of gathers")
            if len(stack) == 2 and shapes.random() < 0.5:
                drawn.add("gather of gathers as output")
                extra_outputs.append(nested)
            stack[-2] = module("fold2", FoldNested)(nested, stack[-2])

        for _ in range(rng.randint(3, 9)):
            step = rng.choice(["map", "map", "expand", "expand", "filter", "broadcast", "reduce"])
            if step == "reduce" and len(stack) > 2 and shapes.random() < 0.5:
                step = "gather2"
            cur = stack[-1]
            if step == "map":
                fail = rng.random() < 0.4
                stack[-1] = module(
                    "affine",
                    Affine,
                    rng.randint(1, 9),
                    rng.randint(0, 9),
                    13 if fail else 0,
                    17 if fail and rng.random() < 0.5 else 0,
                )(cur)
            elif step == "expand" and len(stack) < 4:
                stack.append(F.expand(module("fan", Fan, rng.randint(2, 5))(cur)))
            elif step == "filter":
                stack[-1] = F.filter(cur, module("keep", Keep, rng.randint(2, 5))(cur))
            elif step == "broadcast" and len(stack) > 1:
                ancestor = stack[rng.randrange(len(stack) - 1)]
                stack[-1] = module("add", Add)(cur, F.broadcast(ancestor, like=cur))
            elif step == "reduce" and len(stack) > 1:
                group = F.reduce(stack.pop())
                stack[-1] = module("fold", Fold)(group, stack[-1])
            elif step == "gather2":
                gather_of_gathers()
        if len(stack) > 1 and random.Random(structure_seed * 104729 + 3).random() < 0.4:
            # An output below the root: the values of every root's descendants, in order.
            drawn.add(f"output below the root at depth {len(stack) - 1}")
            extra_outputs.append(stack[-1])
        while len(stack) > 1:
            if len(stack) > 2 and shapes.random() < 0.5:
                gather_of_gathers()
                continue
            group = F.reduce(stack.pop())
            stack[-1] = module("fold", Fold)(group, stack[-1])
        if extra_outputs:
            return (stack[0], *extra_outputs)
        return (stack[0], x) if structure_seed % 3 == 0 else stack[0]

    return forward


def seed_data(seed: int) -> list[int]:
    """The source rows of seed `seed`."""
    return [random.Random(seed * 31 + i).randrange(101) for i in range(24)]


def sync_outputs(seed: int) -> Any:
    """What the synchronous core gives for seed `seed`: the expected outputs."""
    with ro.SyncExecutor(make_pipeline(seed, None)) as ex:
        return ex.run(seed_data(seed)).outputs


def run_drawn(ex: Any, source: Any, draws: random.Random) -> Any:
    """Runs `source` on `ex` with an input batch size and an active-batch limit from
    `draws`."""
    return ex.run(
        source,
        input_batch_size=draws.choice([None, 1, 3, 7]),
        max_active_input_batches=draws.randint(1, 3),
        progress=False,
    ).outputs


@pytest.mark.parametrize("seed", range(12))
def test_random_pipelines_are_schedule_independent(seed: int) -> None:
    expected = sync_outputs(seed)
    draws = random.Random(1000 + seed)
    for variant in range(4):
        pipeline = make_pipeline(seed, draws)
        executor = ro.Executor(pipeline) if variant < 3 else ro.SyncExecutor(pipeline)
        with executor as ex:
            got = run_drawn(ex, seed_data(seed), draws)
        assert got == expected, f"seed {seed} variant {variant}"


@pytest.mark.parametrize("seed", range(12))
def test_self_sizing_pools_resized_at_random_give_the_same_outputs(seed: int) -> None:
    """Self-sizing pools whose actors join and retire at random times (the random resize
    hook), and the same pools under the sizing policy, against the synchronous core."""
    expected = sync_outputs(seed)
    draws = random.Random(4000 + seed)
    for variant in range(3):
        pipeline = make_pipeline(seed, draws, auto_pools=True)
        resize_seed = 0 if variant == 2 else 5000 + 10 * seed + variant
        with ro.Executor(pipeline, budget={"CPU": 32}, _random_resize_seed=resize_seed) as ex:
            got = run_drawn(ex, seed_data(seed), draws)
        assert got == expected, f"seed {seed} variant {variant}"


@pytest.mark.parametrize("seed", range(4))
def test_self_sizing_pools_in_worker_processes_resized_at_random(seed: int) -> None:
    """Worker processes started and retired at random give the synchronous core's
    outputs."""
    expected = sync_outputs(seed)
    pipeline = make_pipeline(seed, None, option_seed=6000 + seed, auto_pools=True)
    with ro.Executor(
        pipeline, isolation="process", budget={"CPU": 32}, _random_resize_seed=7000 + seed
    ) as ex:
        got = run_drawn(ex, seed_data(seed), random.Random(8000 + seed))
    assert got == expected, f"seed {seed}"


@pytest.mark.parametrize("seed", range(12))
def test_random_pipelines_give_the_same_outputs_in_worker_processes(seed: int) -> None:
    """Every Module in worker processes (pickled Python values, replicas in processes of
    their own) against the synchronous core. The options are drawn inside forward() from a
    fixed seed, so the worker server, which traces the pickled pipeline again, draws the
    same ones."""
    expected = sync_outputs(seed)
    pipeline = make_pipeline(seed, None, option_seed=2000 + seed)
    with ro.Executor(pipeline, isolation="process") as ex:
        got = run_drawn(ex, seed_data(seed), random.Random(3000 + seed))
    assert got == expected, f"seed {seed}"


@pytest.mark.parametrize("seed", range(12))
def test_a_generator_source_gives_the_outputs_of_the_same_list(seed: int) -> None:
    """A lazy source (pulled as input batches are admitted) changes when rows arrive, never
    what they become: the same rows in a generator give the list's outputs, issues
    included."""
    expected = sync_outputs(seed)
    draws = random.Random(2000 + seed)
    for variant in range(3):
        with ro.Executor(make_pipeline(seed, draws)) as ex:
            got = run_drawn(ex, (v for v in seed_data(seed)), draws)
        assert got == expected, f"seed {seed} variant {variant}"


class StopRun(Exception):
    pass


def row_values(outputs: Any, row: int) -> Any:
    """Row `row` of a run's outputs (a tuple of columns for several outputs)."""
    return tuple(c[row] for c in outputs) if isinstance(outputs, tuple) else outputs[row]


def is_present(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(is_present(v) for v in value)
    return not isinstance(value, ro.OutputIssue)


@pytest.mark.parametrize("seed", range(12))
def test_a_sink_holds_each_present_root_once_across_a_stop_and_a_resume(
    seed: int, tmp_path: Path
) -> None:
    """A run into a JsonlSink with a journal, stopped after a random number of rows (its
    row callback raises) and resumed, whatever the batching and part sizes drawn: each root
    whose outputs are all present is in exactly one committed part with the synchronous
    core's values, and no other root is."""
    if ro.compile(make_pipeline(seed, None)).outputs_below_root:
        SINK_SEEDS_SKIPPED.add(seed)  # a sink takes one value per output and root
        return
    expected = sync_outputs(seed)
    rows = seed_data(seed)
    want = {
        str(r): json.loads(json.dumps(row_values(expected, r)))
        for r in range(len(rows))
        if is_present(row_values(expected, r))
    }
    draws = random.Random(9000 + seed)
    for variant in range(2):
        out, journal = tmp_path / f"out{variant}", tmp_path / f"run{variant}.journal"
        stop_after = draws.randint(1, len(rows))
        lazy = draws.random() < 0.5  # a journal is of a list or of a generator, not both
        delivered: list[int] = []

        def stop(
            row: int, output: Any, delivered: list[int] = delivered, stop_after: int = stop_after
        ) -> None:
            delivered.append(row)
            if len(delivered) == stop_after:
                raise StopRun()

        sink = JsonlSink(
            directory=out,
            rows_per_part=draws.randint(1, 5),
            key_column="row",
            record=lambda output: {"value": output},
        )
        with ro.Executor(make_pipeline(seed, draws)) as ex:
            for attempt in range(2):
                try:
                    ex.run(
                        (v for v in rows) if lazy else rows,
                        input_batch_size=draws.choice([None, 1, 3, 7]),
                        max_active_input_batches=draws.randint(1, 3),
                        sink=sink,
                        journal=ro.Journal(str(journal), key=str),
                        on_row=stop if attempt == 0 else None,
                        progress=False,
                    )
                except StopRun:
                    pass
        got: dict[str, Any] = {}
        for name in read_manifest(out).parts:
            for line in (out / name).read_text().splitlines():
                record = json.loads(line)
                assert record["row"] not in got, f"seed {seed}: row {record['row']} twice"
                got[record["row"]] = record["value"]
        assert got == want, f"seed {seed} variant {variant}"
        assert read_manifest(out).complete


SINK_SEEDS_SKIPPED: set[int] = set()


def test_the_randomized_pipelines_exercise_every_outcome() -> None:
    """Guards the generator: across the seeds, outputs include values and each issue kind."""
    outcomes: set[Any] = set()
    for seed in range(12):
        out = sync_outputs(seed)
        column = out[0] if isinstance(out, tuple) else out
        outcomes |= {v.outcome if isinstance(v, ro.OutputIssue) else "value" for v in column}
    assert outcomes >= {"value", ro.ItemOutcome.DROPPED}
    assert outcomes & {ro.ItemOutcome.FAILED, ro.ItemOutcome.SUPPRESSED}
    shapes = set().union(*(SHAPES[seed] for seed in range(12)))
    assert shapes >= {"no call", "gather of gathers", "gather of gathers as output"}
    assert any(s.startswith("output below the root") for s in shapes)
    # The sink test ran on most seeds (it skips those with an output below the root).
    for seed in range(12):
        if ro.compile(make_pipeline(seed, None)).outputs_below_root:
            SINK_SEEDS_SKIPPED.add(seed)
    assert len(SINK_SEEDS_SKIPPED) <= 4, SINK_SEEDS_SKIPPED
