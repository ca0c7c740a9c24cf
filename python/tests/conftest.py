"""Shared UDFs and fixtures of the rayorch_cpp test suite."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import rayorch_cpp as ro


class Ident:
    """Returns its inputs unchanged."""

    def run(self, xs: list[Any]) -> list[Any]:
        return list(xs)


class Children:
    """A list stays a list (for F.expand); an int n becomes [0, .., n-1]."""

    def run(self, xs: list[Any]) -> list[Any]:
        return [list(x) if isinstance(x, list) else list(range(x)) for x in xs]


class Counter:
    """Counts the values that enter it (thread-safe), per Module instance key."""

    lock = threading.Lock()
    seen: dict[str, list[Any]] = {}

    def __init__(self, key: str) -> None:
        self.key = key

    def run(self, xs: list[Any]) -> list[Any]:
        with Counter.lock:
            Counter.seen.setdefault(self.key, []).extend(xs)
        return list(xs)


@pytest.fixture(params=["local", "sync"])
def executor_kind(request: pytest.FixtureRequest) -> str:
    """Runs a test on the local executor and on the synchronous core."""
    return str(request.param)


def make_executor(kind: str, pipeline: Any) -> Any:
    """An executor of the given kind."""
    return ro.Executor(pipeline) if kind == "local" else ro.SyncExecutor(pipeline)


@pytest.fixture(autouse=True)
def _reset_counter() -> None:
    Counter.seen = {}


@pytest.fixture(params=["sync", "local", "process"])
def executor_of_each_kind(request: pytest.FixtureRequest) -> Callable[[Any], Any]:
    """Makes an executor of one kind for a pipeline: the synchronous core, the local executor
    on threads, and the local executor with every Module in worker processes."""
    kind = request.param

    def make(pipeline: Any) -> Any:
        if kind == "sync":
            return ro.SyncExecutor(pipeline)
        return ro.Executor(pipeline, isolation="process" if kind == "process" else None)

    return make
