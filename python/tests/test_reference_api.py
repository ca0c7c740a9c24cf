"""The reference's documented API shapes (README, first-pipeline, fan-out-and-reduce,
results-and-failures guides), written for this package: only the import differs."""

from __future__ import annotations

from typing import Any

import rayorch_cpp as ro


class Increment:
    def run(self, values: list[int]) -> list[int]:
        return [v + 1 for v in values]


class PlusTwo(ro.Pipeline):
    def __init__(self) -> None:
        self.a = ro.RayModule(Increment).ray_options(replicas=1, batch_size=8, num_cpus=1)
        self.b = ro.RayModule(Increment).ray_options(replicas=2, batch_size=8, num_cpus=1)

    def forward(self, values: ro.Port) -> ro.Port:
        return self.b(self.a(values))


def test_first_pipeline_shapes() -> None:
    assert PlusTwo().run([1, 2, 3]).outputs == [3, 4, 5]
    result = PlusTwo().run(list(range(100)), input_batch_size=20, max_active_input_batches=2)
    assert result.outputs == [v + 2 for v in range(100)]
    assert len(result.input_batches) == 5
    assert result.elapsed_s > 0 and result.rpc_count >= 2 * 100 // 8
    with ro.Executor(PlusTwo()) as executor:
        assert executor.run([1, 2]).outputs == [3, 4]
        assert executor.run([10, 20]).outputs == [12, 22]
    assert ro.run(PlusTwo(), [5]).outputs == [7]


class Split:
    def run(self, docs: list[dict[str, Any]]) -> list[list[str]]:
        return [[f"{d['title']}#{p}" for p in range(d["n"])] for d in docs]


class Shout:
    def run(self, pages: list[str]) -> list[str]:
        return [p.upper() for p in pages]


class Glue:
    def run(self, groups: list[list[str]]) -> list[str]:
        return [" + ".join(g) for g in groups]


class Documents(ro.Pipeline):
    def __init__(self) -> None:
        self.split = ro.RayModule(Split).ray_options(replicas=1, batch_size=2, num_cpus=1)
        self.shout = ro.RayModule(Shout).ray_options(replicas=2, batch_size=3, num_cpus=1)
        self.glue = ro.RayModule(Glue).ray_options(replicas=1, batch_size=2, num_cpus=1)

    def forward(self, docs: ro.Port) -> ro.Port:
        pages = ro.F.expand(self.split(docs))
        return self.glue(ro.F.reduce(self.shout(pages)))


def test_fan_out_and_reduce_shapes() -> None:
    out = Documents().run([{"title": "a", "n": 2}, {"title": "b", "n": 3}]).outputs
    assert out == ["A#0 + A#1", "B#0 + B#1 + B#2"]


class Parse:
    def run(self, rows: list[str]) -> list[Any]:
        return [ro.RecordFailure("invalid input") if not r.isdigit() else int(r) for r in rows]


class Flaky:
    calls = 0

    def run(self, rows: list[int]) -> list[int]:
        Flaky.calls += 1
        if Flaky.calls == 1:
            raise OSError("transient")
        return rows


class Checked(ro.Pipeline):
    def __init__(self) -> None:
        self.parse = ro.RayModule(Parse)
        self.stage = ro.RayModule(Flaky).ray_options(
            replicas=1,
            batch_size=16,
            recovery=ro.RecoveryPolicy.retry_batch(max_retries=2),
            runtime_env={"env_vars": {"UNUSED": "1"}},  # a Ray option: recorded, unused here
        )

    def forward(self, rows: ro.Port) -> ro.Port:
        return self.stage(self.parse(rows))


def test_results_and_failures_shapes() -> None:
    Flaky.calls = 0
    result = Checked().run(["1", "x", "3"])
    values, issues = [], []
    for output in result.outputs:
        if isinstance(output, ro.OutputIssue):
            issues.append((output.outcome.name, output.cause))
        else:
            values.append(output)
    assert values == [1, 3]
    assert issues == [("SUPPRESSED", "invalid input")]
    assert result.calls[1].failed_rpcs == 1 and result.calls[1].grain_requeues >= 1


class Stack:
    def __init__(self, offset: int, *, scale: int = 1) -> None:
        self.offset, self.scale = offset, scale

    def run(self, values: list[int], *, stage: str) -> list[int]:
        if stage == "layout":
            return [v * self.scale for v in values]
        if stage == "recognize":
            return [v + self.offset for v in values]
        raise ValueError(stage)


def test_one_module_two_stages_and_returns() -> None:
    model = ro.RayModule(Stack).pre_init(100, scale=3).ray_options(replicas=2, num_gpus=0)
    pair = ro.RayModule(lambda xs: ([x for x in xs], [-x for x in xs])).returns(2)

    def forward(pages: ro.Port) -> tuple[ro.Port, ro.Port]:
        laid = model(pages, stage="layout")
        plus, minus = pair(model(laid, stage="recognize"))
        return plus, minus

    plus, minus = ro.run(forward, [1, 2]).outputs
    assert plus == [103, 106] and minus == [-103, -106]
    assert ro.function(num_outputs=2)(lambda xs: (xs, xs)).num_outputs == 2


def test_ray_connection_arguments_are_accepted() -> None:
    assert PlusTwo().run([1], address=None, ray_init_kwargs={"num_cpus": 2}).outputs == [3]
    with ro.Executor(PlusTwo(), address="auto", ray_init_kwargs={}) as ex:
        assert ex.run([2]).outputs == [4]
        assert ex.address == "auto"
