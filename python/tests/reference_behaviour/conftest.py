"""Fixtures of the reference-behaviour tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import rayorch_cpp as ro


@pytest.fixture(params=["sync", "local", "process"])
def make_executor(request: pytest.FixtureRequest) -> Callable[[Any], Any]:
    """Makes an executor of one kind for a pipeline: the synchronous core, the local executor
    on threads, and the local executor with every Module in worker processes."""
    kind = request.param

    def make(pipeline: Any) -> Any:
        if kind == "sync":
            return ro.SyncExecutor(pipeline)
        return ro.Executor(pipeline, isolation="process" if kind == "process" else None)

    return make
