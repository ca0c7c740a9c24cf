"""Structural operators through the Python API: expand, reduce, filter, broadcast."""

from __future__ import annotations

from typing import Any

import pytest

import rayorch_cpp as ro
from conftest import Children, Ident, make_executor
from rayorch_cpp import F


class IsEven:
    def run(self, xs: list[int]) -> list[bool]:
        return [x % 2 == 0 for x in xs]


class Pair:
    def run(self, leaf: list[Any], meta: list[Any]) -> list[Any]:
        return [f"{m}:{v}" for v, m in zip(leaf, meta)]


class NestedIdentity(ro.Pipeline):
    """Expands twice, touches every leaf, reduces twice: the output is the input."""

    def __init__(self, batch_size: int = 1, replicas: int = 1) -> None:
        self.split = ro.RayModule(Children)
        self.leaf = ro.RayModule(Ident).ray_options(batch_size=batch_size, replicas=replicas)

    def forward(self, doc: ro.Port) -> ro.Port:
        pages = F.expand(self.split(doc))
        words = F.expand(self.split(pages))
        return F.reduce(F.reduce(self.leaf(words)))


@pytest.mark.parametrize("batch_size", [1, 3])
def test_nested_empty_groups_round_trip(executor_kind: str, batch_size: int) -> None:
    data = [[[], [10, 11]], [], [[1], [], [2, 3, 4]]]
    with make_executor(executor_kind, NestedIdentity(batch_size, 2)) as ex:
        result = ex.run(data)
    assert result.outputs == data


def test_nested_empty_groups_leaves_reach_the_udf() -> None:
    ex = ro.SyncExecutor(NestedIdentity(batch_size=8))
    column = [[[], [10, 11]], []]  # row 0: two pages (empty, two words); row 1: no pages
    assert ex.run(column).outputs == column
    leaf_rpcs = [r for r in ex.rpc_records() if r["call"].startswith("Ident")]
    assert [g for r in leaf_rpcs for g in r["grains"]] == ["0/1/0", "0/1/1"]


class FilterInGroups(ro.Pipeline):
    def __init__(self) -> None:
        self.split = ro.RayModule(Children)
        self.even = ro.RayModule(IsEven).ray_options(batch_size=4)
        self.ident = ro.RayModule(Ident).ray_options(batch_size=2)

    def forward(self, n: ro.Port) -> ro.Port:
        child = F.expand(self.split(n))
        kept = F.filter(child, self.even(child))
        return F.reduce(self.ident(kept))


def test_filter_inside_groups(executor_kind: str) -> None:
    with make_executor(executor_kind, FilterInGroups()) as ex:
        assert ex.run([5, 0, 1, 4]).outputs == [[0, 2, 4], [], [0], [0, 2]]


def test_filter_at_the_root_drops_rows(executor_kind: str) -> None:
    even = ro.RayModule(IsEven)

    def forward(x: ro.Port) -> ro.Port:
        return F.filter(x, even(x))

    with make_executor(executor_kind, forward) as ex:
        out = ex.run([1, 2, 3, 4]).outputs
    assert out[1] == 2 and out[3] == 4
    assert out[0] == ro.OutputIssue(ro.ItemOutcome.DROPPED)
    assert isinstance(out[2], ro.OutputIssue) and out[2].outcome is ro.ItemOutcome.DROPPED


def test_filter_by_a_source_mask(executor_kind: str) -> None:
    ident = ro.RayModule(Ident)
    with make_executor(executor_kind, lambda x, keep: ident(F.filter(x, keep))) as ex:
        out = ex.run(["a", "b", "c"], [True, False, True]).outputs
    assert out[0] == "a" and out[2] == "c" and out[1].outcome is ro.ItemOutcome.DROPPED
    with pytest.raises(ValueError, match="row 1 is int"):
        ex2 = make_executor(executor_kind, lambda x, keep: ident(F.filter(x, keep)))
        ex2.run(["a", "b"], [True, 0])


class DeepBroadcast(ro.Pipeline):
    """Document metadata broadcast into the third Domain level."""

    def __init__(self) -> None:
        self.split = ro.RayModule(Children)
        self.pair = ro.RayModule(Pair).ray_options(batch_size=3, replicas=2)

    def forward(self, doc: ro.Port, meta: ro.Port) -> ro.Port:
        pages = F.expand(self.split(doc))
        words = F.expand(self.split(pages))
        letters = F.expand(self.split(words))
        paired = self.pair(letters, F.broadcast(meta, like=letters))
        return F.reduce(F.reduce(F.reduce(paired)))


def test_broadcast_into_a_deep_chain(executor_kind: str) -> None:
    docs = [[[2], [0, 1]], [], [[3]]]
    with make_executor(executor_kind, DeepBroadcast()) as ex:
        out = ex.run(docs, ["A", "B", "C"]).outputs
    assert out == [
        [[["A:0", "A:1"]], [[], ["A:0"]]],
        [],
        [[["C:0", "C:1", "C:2"]]],
    ]


class TwoLists:
    def run(self, xs: list[int]) -> tuple[list[list[int]], list[list[str]]]:
        return [list(range(x)) for x in xs], [[f"#{i}" for i in range(x)] for x in xs]


def test_aligned_expand_reduce_and_members(executor_kind: str) -> None:
    lists = ro.RayModule(TwoLists, num_outputs=2)
    even = ro.RayModule(IsEven)

    def forward(n: ro.Port) -> tuple[ro.Port, ro.Port]:
        nums, names = F.expand_aligned(*lists(n))
        keep = F.filter(nums, even(nums))
        return F.reduce_aligned(nums, names, members=keep)

    with make_executor(executor_kind, forward) as ex:
        nums, names = ex.run([3, 0, 2]).outputs
    assert nums == [[0, 2], [], [0]]
    assert names == [["#0", "#2"], [], ["#0"]]


class AddOne:
    def run(self, values: list[int]) -> list[int]:
        return [value + 1 for value in values]


class ReadmePipeline(ro.Pipeline):
    """The reference's README pipeline, unchanged but for the import line."""

    def __init__(self) -> None:
        self.first = ro.RayModule(AddOne).ray_options(replicas=2, batch_size=8)
        self.second = ro.RayModule(AddOne).ray_options(replicas=2, batch_size=8)

    def forward(self, values: ro.Port) -> ro.Port:
        return self.second(self.first(values))


def test_reference_readme_pipeline() -> None:
    pipeline = ReadmePipeline()
    result = pipeline.run([1, 2, 3], input_batch_size=2, max_active_input_batches=2)
    assert result.outputs == [3, 4, 5]
    assert ro.run(pipeline, [1, 2, 3]).outputs == [3, 4, 5]
    with ro.Executor(ReadmePipeline()) as executor:
        assert executor.run([1, 2, 3]).outputs == [3, 4, 5]
        assert executor.run([4, 5, 6]).outputs == [6, 7, 8]
    assert executor.closed


class Stage:
    def run(self, values: list[str], *, stage: str) -> list[str]:
        return [f"{stage}({v})" for v in values]


def test_static_keyword_arguments_and_keyword_ports(executor_kind: str) -> None:
    model = ro.RayModule(Stage)

    def forward(pages: ro.Port) -> ro.Port:
        return model(model(pages, stage="layout"), stage="recognize")

    class Join:
        def run(self, a: list[str], *, b: list[str]) -> list[str]:
            return [x + b_ for x, b_ in zip(a, b)]

    join = ro.RayModule(Join)
    with make_executor(executor_kind, forward) as ex:
        assert ex.run(["p"]).outputs == ["recognize(layout(p))"]
    with make_executor(executor_kind, lambda x, y: join(x, b=y)) as ex:
        assert ex.run(["a", "c"], ["b", "d"]).outputs == ["ab", "cd"]


def test_several_outputs_keep_forward_structure(executor_kind: str) -> None:
    ident = ro.RayModule(Ident)
    with make_executor(executor_kind, lambda x: (ident(x), (x, ident(x)))) as ex:
        assert ex.run([1, 2]).outputs == ([1, 2], ([1, 2], [1, 2]))


def test_a_port_has_no_truth_value() -> None:
    ident = ro.RayModule(Ident)

    def forward(x: ro.Port) -> ro.Port:
        y = ident(x)
        if y:
            return x
        return y

    with pytest.raises(TypeError, match="no truth value"):
        ro.compile(forward)


def test_explain_text_names_every_port() -> None:
    text = ro.compile(NestedIdentity()).explain_text()
    assert "p0 source d0 <- [] => source-admission" in text
    assert "expand" in text and "reduce-effect" in text
    assert text == ro.compile(NestedIdentity()).explain()


def test_function_modules() -> None:
    @ro.function
    def double(xs: list[int]) -> list[int]:
        return [2 * x for x in xs]

    assert ro.run(lambda x: double(x), [1, 2]).outputs == [2, 4]
