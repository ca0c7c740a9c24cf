"""Sinks through the Python API (rayorch_cpp/io/_sinks.py, docs/IO.md): what a run writes,
how parts roll over, that names are deterministic, and that a resume writes each root once."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rayorch_cpp as ro
import sink_pipeline as sp
from rayorch_cpp.io import FileSink, JsonlSink, Sink, read_jsonl, read_manifest

DOCS = list(range(30))
PRESENT = [sp.expected(d) for d in DOCS if sp.expected(d) is not None]


def jsonl_rows(directory: Path) -> list[dict[str, Any]]:
    """Every row of the committed parts the manifest lists, in its order."""
    rows = []
    for name in read_manifest(directory).parts:
        with open(directory / name, encoding="utf-8") as f:
            rows.extend(json.loads(line) for line in f)
    return rows


def by_doc(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["doc"])


def test_every_present_root_is_one_line_of_a_committed_part(
    executor_of_each_kind: Callable[[Any], Any], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with executor_of_each_kind(sp.Documents()) as ex:
        result = ex.run(
            DOCS,
            sink=JsonlSink(directory=out, rows_per_part=4),
            dead_letters=tmp_path / "dead.jsonl",
            progress=False,
        )
    assert result.outputs is None  # the outputs are in the sink, not in memory
    assert by_doc(jsonl_rows(out)) == PRESENT
    manifest = read_manifest(out)
    assert manifest.complete and manifest.total_rows == len(PRESENT)
    assert all(rows <= 4 for rows in manifest.rows)
    assert sorted(os.listdir(out)) == sorted([*manifest.parts, "_SUCCESS", "_manifest.json"])
    dead = [json.loads(line) for line in (tmp_path / "dead.jsonl").read_text().splitlines()]
    assert sorted(d["row"] for d in dead) == [d for d in DOCS if d % 13 == 7]


def test_part_names_are_the_same_for_the_same_inputs(tmp_path: Path) -> None:
    names = []
    for attempt in range(2):
        out = tmp_path / f"out{attempt}"
        with ro.Executor(sp.Documents()) as ex:
            ex.run(DOCS, sink=JsonlSink(directory=out, rows_per_part=5), progress=False)
        names.append(read_manifest(out).parts)
    assert names[0] == names[1]
    assert names[0][0] == "part-00000.jsonl"


def test_a_part_rolls_over_at_bytes_per_part(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ro.Executor(sp.Documents()) as ex:
        ex.run(DOCS, sink=JsonlSink(directory=out, bytes_per_part=200), progress=False)
    manifest = read_manifest(out)
    assert len(manifest.parts) > 1
    for name in manifest.parts[:-1]:
        lines = (out / name).read_bytes().splitlines(keepends=True)
        # A part is committed once it reached the limit: without its last line it was below.
        assert sum(map(len, lines[:-1])) < 200 <= sum(map(len, lines))


def test_a_rerun_with_its_journal_writes_no_root_twice(tmp_path: Path) -> None:
    """The new user's case: a run stopped part-way (here by on_row raising), then resumed
    with its journal: each document is in the output once."""
    out, journal = tmp_path / "out", tmp_path / "run.journal"
    seen: list[int] = []

    def stop_after_ten(row: int, output: Any) -> None:
        seen.append(row)
        if len(seen) == 10:
            raise KeyError("stop")

    with ro.Executor(sp.Documents()) as ex:
        with pytest.raises(KeyError):
            ex.run(
                DOCS,
                input_batch_size=3,
                sink=JsonlSink(directory=out, rows_per_part=2),
                journal=journal,
                on_row=stop_after_ten,
                progress=False,
            )
        assert not read_manifest(out).complete and not (out / "_SUCCESS").exists()
        first = len(jsonl_rows(out))
        assert first > 0
        resumed = ex.run(
            DOCS, sink=JsonlSink(directory=out, rows_per_part=2), journal=journal, progress=False
        )
    assert resumed.roots_restored >= first
    assert by_doc(jsonl_rows(out)) == PRESENT
    assert read_manifest(out).complete


def test_a_missing_committed_part_is_written_again_from_the_journal(tmp_path: Path) -> None:
    out, journal = tmp_path / "out", tmp_path / "run.journal"
    with ro.Executor(sp.Documents()) as ex:
        ex.run(
            DOCS, sink=JsonlSink(directory=out, rows_per_part=4), journal=journal, progress=False
        )
        (out / read_manifest(out).parts[1]).unlink()
        again = ex.run(
            DOCS, sink=JsonlSink(directory=out, rows_per_part=4), journal=journal, progress=False
        )
    assert again.roots_restored == len(DOCS) - len([d for d in DOCS if d % 13 == 7])
    assert by_doc(jsonl_rows(out)) == PRESENT


def test_a_file_per_root_and_the_key_column(tmp_path: Path) -> None:
    out = tmp_path / "md"
    with ro.Executor(sp.Documents()) as ex:
        ex.run(
            DOCS,
            sink=FileSink(
                directory=out,
                name=lambda key, row, output: f"doc-{output['doc']:03d}.md",
                contents=lambda output: output["text"],
            ),
            progress=False,
        )
    assert read_manifest(out).parts == tuple(
        sorted(read_manifest(out).parts, key=lambda n: read_manifest(out).parts.index(n))
    )
    for r in PRESENT:
        assert (out / f"doc-{r['doc']:03d}.md").read_text() == r["text"]
    keyed = tmp_path / "keyed"
    with ro.Executor(sp.Documents()) as ex:
        ex.run(DOCS, sink=JsonlSink(directory=keyed, key_column="_key"), progress=False)
    assert all(row["_key"] == str(row["doc"]) for row in jsonl_rows(keyed))


def test_a_name_given_twice_stops_the_run(tmp_path: Path) -> None:
    with ro.Executor(sp.Documents()) as ex:
        with pytest.raises(ro.ExecutionError, match="same.txt"):
            ex.run(
                DOCS,
                sink=FileSink(directory=tmp_path / "o", name=lambda k, r, o: "same.txt"),
                progress=False,
            )


def test_a_writer_that_raises_stops_the_run_and_commits_nothing_of_its_part(
    tmp_path: Path,
) -> None:
    calls = {"n": 0}

    def record(output: Any) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] == 7:
            raise RuntimeError("cannot convert")
        return dict(output)

    out = tmp_path / "out"
    with ro.Executor(sp.Documents()) as ex:
        with pytest.raises(RuntimeError, match="cannot convert"):
            ex.run(DOCS, sink=JsonlSink(directory=out, rows_per_part=4, record=record))
        # The executor stays usable.
        ex.run(DOCS[:2], progress=False)
    # The first part (4 rows) was committed before; the one being written was not.
    assert len(jsonl_rows(out)) == 4
    assert [n for n in os.listdir(out) if ".rayorch-tmp-" in n] == []


def test_values_json_cannot_write_name_the_root(tmp_path: Path) -> None:
    with ro.Executor(sp.Documents()) as ex:
        with pytest.raises(TypeError, match=r"root '0' \(row 0\) cannot be written as JSON"):
            ex.run(
                DOCS[:1],
                sink=JsonlSink(directory=tmp_path / "o", record=lambda o: {"x": object()}),
                progress=False,
            )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"rows_per_part": 0}, "rows_per_part must be a positive integer"),
        ({"bytes_per_part": -1}, "bytes_per_part must be a positive integer"),
        ({"max_part_age_s": -1.0}, "max_part_age_s must be >= 0"),
        ({"prefix": "a/b"}, "prefix 'a/b' must be a plain file name start"),
        ({"directory": ""}, "a sink needs a directory"),
    ],
)
def test_bad_sink_options_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        JsonlSink(**{"directory": "out", **options})


def test_misuse_is_refused_before_anything_runs(tmp_path: Path) -> None:
    with ro.Executor(sp.Documents()) as ex:
        with pytest.raises(TypeError, match="sink must be a rayorch_cpp.io Sink"):
            ex.run(DOCS, sink=str(tmp_path))  # type: ignore[arg-type]
        (tmp_path / "m.jsonl").write_text('{"doc": 1}\n')
        with pytest.raises(ValueError, match="a Reader is the whole source"):
            ex.run(read_jsonl(tmp_path / "m.jsonl"), DOCS)
    assert not (tmp_path / "_manifest.json").exists()


def test_on_row_still_gets_every_row_with_a_sink(tmp_path: Path) -> None:
    got: dict[int, Any] = {}
    with ro.Executor(sp.Documents()) as ex:
        ex.run(
            DOCS,
            sink=JsonlSink(directory=tmp_path / "o"),
            on_row=lambda row, output: got.__setitem__(row, output),
            progress=False,
        )
    assert sorted(got) == DOCS
    assert by_doc(jsonl_rows(tmp_path / "o")) == PRESENT


def test_a_sink_of_your_own_names_and_writes_its_parts(tmp_path: Path) -> None:
    """A Sink subclass: its part names, its writer (whose write() returns nothing, so the
    engine asks bytes() for the roll-over), and the commit protocol around them."""
    from dataclasses import dataclass

    @dataclass(frozen=True, kw_only=True)
    class Tsv(Sink):
        def part_name(self, sequence: int, key: str, row: int, output: Any) -> str:
            return f"docs-from-{output['doc']:03d}.tsv"

        def open(self, path: str) -> Any:
            return TsvWriter(path)

    class TsvWriter:
        def __init__(self, path: str) -> None:
            self.file = open(path, "w", encoding="utf-8")
            self.size = 0

        def write(self, key: str, row: int, output: Any) -> None:
            self.size += self.file.write(f"{output['doc']}\t{output['text']}\n")

        def bytes(self) -> int:
            return self.size

        def finish(self) -> None:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()

    out = tmp_path / "tsv"
    with ro.Executor(sp.Documents()) as ex:
        ex.run(DOCS, sink=Tsv(directory=out, bytes_per_part=100), progress=False)
    parts = read_manifest(out).parts
    assert len(parts) > 2 and all(p.startswith("docs-from-") for p in parts)
    rows = [line.split("\t") for p in parts for line in (out / p).read_text().splitlines()]
    assert sorted(int(doc) for doc, _ in rows) == [r["doc"] for r in PRESENT]
