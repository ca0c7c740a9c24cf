"""A UDF cannot change what another Call or the caller sees: numpy arrays arrive read-only
views (as on Ray), without a copy."""

from __future__ import annotations

from typing import Any

import pytest

import rayorch_cpp as ro
from conftest import make_executor

np = pytest.importorskip("numpy")


class Writable:
    def run(self, xs: list[Any]) -> list[bool]:
        return [bool(x.flags.writeable) for x in xs]


class Same:
    def run(self, xs: list[Any]) -> list[Any]:
        return list(xs)


class Scale:
    def run(self, xs: list[Any]) -> list[Any]:
        for x in xs:
            x /= 255
        return list(xs)


class Total:
    def run(self, xs: list[Any]) -> list[float]:
        return [float(x.sum()) for x in xs]


class Ones:
    def run(self, xs: list[int]) -> list[Any]:
        return [np.ones(n) for n in xs]


def test_a_source_array_arrives_as_a_read_only_view(executor_kind: str) -> None:
    writable, same = ro.RayModule(Writable), ro.RayModule(Same)

    def forward(x: ro.Port) -> tuple[ro.Port, ro.Port]:
        return writable(x), same(x)

    source = np.arange(4.0)
    with make_executor(executor_kind, forward) as ex:
        (flags,), (view,) = ex.run([source]).outputs
    assert flags is False
    assert np.shares_memory(view, source)  # no copy
    assert source.flags.writeable  # the caller's own array is untouched


def test_another_calls_output_arrives_read_only(executor_kind: str) -> None:
    ones, writable = ro.RayModule(Ones), ro.RayModule(Writable)

    def forward(n: ro.Port) -> ro.Port:
        return writable(ones(n))

    with make_executor(executor_kind, forward) as ex:
        assert ex.run([3]).outputs == [False]


def test_an_in_place_update_fails_as_on_ray_and_changes_nothing(executor_kind: str) -> None:
    scale = ro.RayModule(Scale).ray_options(recovery=ro.RecoveryPolicy.isolate_tail())
    total = ro.RayModule(Total)

    def forward(x: ro.Port) -> tuple[ro.Port, ro.Port]:
        return scale(x), total(x)

    source = np.full(3, 255.0)
    with make_executor(executor_kind, forward) as ex:
        (scaled,), (summed,) = ex.run([source]).outputs
    assert isinstance(scaled, ro.OutputIssue) and scaled.cause is not None
    assert scaled.cause.startswith("ValueError: output array is read-only")
    assert summed == 765.0
    assert source.tolist() == [255.0, 255.0, 255.0]
