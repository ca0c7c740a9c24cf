"""A Port of a child Domain returned from forward: the run returns the values below every
root, in source and ordinal order (as the reference does), with an OutputIssue where a child
is not present; ``on_row`` and ``stream`` give each root the list of its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import rayorch_cpp as ro
from rayorch_cpp import F


class Pages:
    """n -> its pages [n*10, n*10 + 1, ...] (n % 4 of them); a negative n fails the row."""

    def run(self, xs: list[int]) -> list[Any]:
        return [
            ro.RecordFailure(f"bad document {x}") if x < 0 else [x * 10 + i for i in range(x % 4)]
            for x in xs
        ]


class Read:
    """A page's text; page 31 fails."""

    def run(self, pages: list[int]) -> list[Any]:
        return [ro.RecordFailure("unreadable page 31") if p == 31 else f"page {p}" for p in pages]


class Even:
    def run(self, pages: list[int]) -> list[bool]:
        return [p % 2 == 0 for p in pages]


class Words:
    def run(self, texts: list[str]) -> list[list[str]]:
        return [t.split() for t in texts]


class Documents(ro.Pipeline):
    def __init__(self) -> None:
        self.pages = ro.RayModule(Pages).ray_options(batch_size=2)
        self.read = ro.RayModule(Read).ray_options(batch_size=3, replicas=2)
        self.even = ro.RayModule(Even)
        self.words = ro.RayModule(Words)

    def forward(self, docs: ro.Port) -> Any:
        pages = F.expand(self.pages(docs))
        texts = self.read(pages)
        words = F.expand(self.words(texts))
        return docs, texts, F.filter(pages, self.even(pages)), words


DOCS = [1, 3, 0, -1, 2, 5]
FAILED = ro.ItemOutcome.FAILED


def expected_texts() -> list[Any]:
    # Document 3's page 31 failed alone; document -1 failed before it had pages; document 0
    # has none.
    return [
        "page 10",
        "page 30",
        ro.OutputIssue(FAILED, "unreadable page 31"),
        "page 32",
        "page 20",
        "page 21",
        "page 50",
    ]


def test_outputs_below_the_root_are_the_rows_of_every_root_in_order(
    executor_of_each_kind: Callable[[Any], Any],
) -> None:
    with executor_of_each_kind(Documents()) as ex:
        result = ex.run(DOCS, input_batch_size=2, max_active_input_batches=2)
    docs, texts, even_pages, words = result.outputs
    assert docs == DOCS
    assert texts == expected_texts()
    dropped = ro.OutputIssue(ro.ItemOutcome.DROPPED)
    assert even_pages == [10, 30, dropped, 32, 20, dropped, 50]
    # Grandchildren: every present page's words; a failed page has none (its list failed).
    assert words == [w for p in (10, 30, 32, 20, 21, 50) for w in ("page", str(p))]


def test_each_root_receives_the_list_of_its_own_rows() -> None:
    rows: dict[int, Any] = {}
    with ro.Executor(Documents()) as ex:
        ex.run(DOCS, on_row=lambda i, out: rows.__setitem__(i, out))
        streamed = dict(ex.stream(DOCS))
    assert rows == streamed
    assert rows[0] == (1, ["page 10"], [10], ["page", "10"])
    assert rows[2] == (0, [], [], [])
    assert rows[3] == (-1, [], [], [])
    assert rows[4][1] == expected_texts()[4:6]


def test_a_run_of_only_outputs_below_the_root() -> None:
    pages = ro.RayModule(Pages)
    result = ro.run(lambda docs: F.expand(pages(docs)), [2, 0, 3], input_batch_size=1)
    assert result.outputs == [20, 21, 30, 31, 32]


def test_a_journal_needs_outputs_of_the_root(tmp_path: Any) -> None:
    with ro.Executor(Documents()) as ex:
        with pytest.raises(ValueError, match="a Port below the root"):
            ex.run(DOCS, journal=str(tmp_path / "run.journal"))
        assert not (tmp_path / "run.journal").exists()
        assert ex.run([1]).outputs[0] == [1]
