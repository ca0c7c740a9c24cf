"""A failing Python UDF keeps its traceback: in the cause text and as the error's __cause__."""

from __future__ import annotations

from typing import Any

import pytest

import rayorch_cpp as ro
from conftest import make_executor


def reciprocal(x: int) -> float:
    return 1 / x


class Parse:
    def run(self, xs: list[int]) -> list[float]:
        return [reciprocal(x) for x in xs]


def pipeline(recovery: ro.RecoveryPolicy | None = None) -> Any:
    parse = ro.RayModule(Parse)
    if recovery is not None:
        parse = parse.ray_options(recovery=recovery)

    def forward(x: ro.Port) -> ro.Port:
        return parse(x)

    return forward


def test_the_execution_error_names_the_udf_frames(executor_kind: str) -> None:
    with make_executor(executor_kind, pipeline()) as ex:
        with pytest.raises(ro.ExecutionError) as caught:
            ex.run([1, 0, 2])
    message = str(caught.value)
    assert "failed on Grains" in message and "ZeroDivisionError: division by zero" in message
    cause = caught.value.__cause__
    assert isinstance(cause, ro.UdfTraceback)
    text = str(cause)
    assert text.startswith("Traceback (most recent call last):")
    assert f'File "{__file__}"' in text
    assert ", in run" in text and ", in reciprocal" in text
    assert text.rstrip().endswith("ZeroDivisionError: division by zero")
    assert cause.traceback == text
    # The traceback is the cause, not repeated in the message.
    assert "Traceback (most recent call last)" not in message


def test_stream_raises_with_the_same_cause() -> None:
    with ro.Executor(pipeline()) as ex:
        with pytest.raises(ro.ExecutionError) as caught:
            list(ex.stream([0]))
    assert isinstance(caught.value.__cause__, ro.UdfTraceback)
    assert ", in reciprocal" in str(caught.value.__cause__)


def test_an_isolated_failure_keeps_the_traceback_after_its_first_line(
    executor_kind: str,
) -> None:
    with make_executor(executor_kind, pipeline(ro.RecoveryPolicy.isolate_tail())) as ex:
        out = ex.run([1, 0]).outputs
    assert out[0] == 1.0
    issue = out[1]
    assert isinstance(issue, ro.OutputIssue) and issue.cause is not None
    first, _, rest = issue.cause.partition("\n")
    assert first == "ZeroDivisionError: division by zero"
    assert rest.startswith("Traceback (most recent call last):")
    assert ", in reciprocal" in rest
