"""The causes of OutputIssues as the reference gives them, and OutputIssue reserved for the
results of a run."""

from __future__ import annotations

from typing import Any

import pytest

import rayorch_cpp as ro


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text")


class FailWith:
    def __init__(self, cause: Any) -> None:
        self.cause = cause

    def run(self, xs: list[Any]) -> list[Any]:
        return [ro.RecordFailure(self.cause) for _ in xs]


class Passes:
    def run(self, xs: list[Any]) -> list[Any]:
        return list(xs)


def failing(cause: Any) -> Any:
    module = ro.RayModule(FailWith).pre_init(cause)
    return lambda values: module(values)


@pytest.mark.parametrize(
    ("cause", "text"),
    [(None, None), ("bad row", "bad row"), (42, "42"), (Unprintable(), "Unprintable")],
)
def test_a_record_failure_cause_is_its_text_none_or_its_type_name(cause: Any, text: Any) -> None:
    with ro.SyncExecutor(failing(cause)) as ex:
        (issue,) = ex.run([1]).outputs
    assert issue == ro.OutputIssue(ro.ItemOutcome.FAILED, text)
    assert issue.cause == text


def test_an_output_issue_given_as_a_value_is_an_error() -> None:
    issue = ro.OutputIssue(ro.ItemOutcome.FAILED, "user value")
    passes = ro.RayModule(Passes)
    for pipeline in (lambda values: values, lambda values: passes(values)):
        with ro.SyncExecutor(pipeline) as ex:
            with pytest.raises(ro.ExecutionError, match="OutputIssue is reserved"):
                ex.run([issue])
            assert ex.run([1]).outputs == [1]  # the executor stays usable
