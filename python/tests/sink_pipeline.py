"""The three-level pipeline the sink tests run (python/tests/io): documents expand into
pages, pages into lines; each line is recognised and kept unless its number ends in 0 (a
filter); the kept lines are joined per page and the pages per document (two reduces). A
document whose number is 7 mod 13 fails (a line raises RecordFailure), so it becomes a dead
letter, never a row of a sink. Importable by name from child processes and process workers
(python/tests on their sys.path)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import rayorch_cpp as ro
from rayorch_cpp import F

# Seconds each Recognise batch sleeps (the crash test sets it so that a run lasts a while).
SLEEP_S = float(os.environ.get("SINK_PIPELINE_SLEEP_S", "0"))


class Pages:
    """Document d -> pages d*10 .. d*10 + d % 4."""

    def __call__(self, docs: list[int]) -> list[list[int]]:
        return [[d * 10 + k for k in range(d % 4 + 1)] for d in docs]


class Lines:
    """Page p -> lines p*10 .. p*10 + p % 3."""

    def __call__(self, pages: list[int]) -> list[list[int]]:
        return [[p * 10 + j for j in range(p % 3 + 1)] for p in pages]


class Recognise:
    def __call__(self, lines: list[int]) -> list[Any]:
        if SLEEP_S:
            time.sleep(SLEEP_S)
        return [
            ro.RecordFailure(f"line {n} of document {n // 100} is unreadable")
            if (n // 100) % 13 == 7
            else f"l{n}"
            for n in lines
        ]


class Keep:
    def __call__(self, lines: list[int]) -> list[bool]:
        return [n % 10 != 0 for n in lines]


class Join:
    def __call__(self, groups: list[list[str]]) -> list[str]:
        return [" ".join(g) for g in groups]


class Record:
    def __call__(self, texts: list[str], docs: list[int]) -> list[dict[str, Any]]:
        return [{"doc": d, "text": t} for t, d in zip(texts, docs)]


class Documents(ro.Pipeline):
    def __init__(self) -> None:
        self.pages = ro.Module(Pages, batch_size=4)
        self.lines = ro.Module(Lines, batch_size=4)
        self.recognise = ro.Module(Recognise, batch_size=8, replicas=2)
        self.keep = ro.Module(Keep, batch_size=8)
        self.join_lines = ro.Module(Join, batch_size=4)
        self.record = ro.Module(Record, batch_size=4)

    def forward(self, doc: ro.Port) -> Any:
        pages = F.expand(self.pages(doc))
        lines = F.expand(self.lines(pages))
        kept = F.filter(self.recognise(lines), self.keep(lines))
        page_texts = self.join_lines(F.reduce(kept))
        return self.record(self.join_lines(F.reduce(page_texts)), doc)


class Apply:
    """Each value -> fn(value)."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __call__(self, values: list[Any]) -> list[Any]:
        return [self.fn(v) for v in values]


class PerText(ro.Pipeline):
    """One Module applying ``fn`` to each row's ``text`` (a reader's column of that name, or
    its only column)."""

    def __init__(self, fn: Any) -> None:
        self.apply = ro.Module(Apply).pre_init(fn)

    def forward(self, text: ro.Port) -> Any:
        return self.apply(text)


def expected(doc: int) -> dict[str, Any] | None:
    """Document ``doc``'s record, computed directly; None for a failing document."""
    if doc % 13 == 7:
        return None
    pages = []
    for p in (doc * 10 + k for k in range(doc % 4 + 1)):
        lines = (p * 10 + j for j in range(p % 3 + 1))
        pages.append(" ".join(f"l{n}" for n in lines if n % 10 != 0))
    return {"doc": doc, "text": " ".join(pages)}


def main() -> None:
    """A child process's run: ``python sink_pipeline.py OUT JOURNAL ROWS ISOLATION``, a
    journaled run into a JsonlSink of three rows per part; prints RUNNING once it starts."""
    from rayorch_cpp.io import JsonlSink, read_jsonl

    out, journal, manifest, isolation = sys.argv[1:5]
    with ro.Executor(Documents(), isolation=isolation or None) as ex:
        print("RUNNING", flush=True)
        ex.run(
            read_jsonl(manifest),
            input_batch_size=4,
            max_active_input_batches=2,
            sink=JsonlSink(directory=out, rows_per_part=3),
            journal=journal,
            dead_letters=out + ".dead.jsonl",
            progress=False,
        )
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
