"""Readers through the Python API (rayorch_cpp/io/_readers.py, docs/IO.md): rows streamed
from JSON lines and globs, columns by forward()'s parameter names, shards, and a clear error
for each bad input, before anything runs where it can be known then."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

import rayorch_cpp as ro
import sink_pipeline as sp
from rayorch_cpp.io import JsonlSink, read_files, read_jsonl, read_manifest


class Pair:
    def __call__(self, docs: list[int], names: list[str]) -> list[str]:
        return [f"{n}:{d}" for d, n in zip(docs, names)]


class Two(ro.Pipeline):
    def __init__(self) -> None:
        self.pair = ro.Module(Pair, batch_size=4)

    def forward(self, doc: ro.Port, name: ro.Port) -> Any:
        return self.pair(doc, name)


def manifest(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_columns_go_to_the_parameters_of_the_same_name(tmp_path: Path) -> None:
    m = manifest(tmp_path / "m.jsonl", [{"name": f"n{i}", "doc": i, "x": 0} for i in range(50)])
    with ro.Executor(Two()) as ex:
        got = ex.run(read_jsonl(m), progress=False).outputs
        renamed = manifest(tmp_path / "r.jsonl", [{"id": i, "name": "a"} for i in range(3)])
        again = ex.run(read_jsonl(renamed, columns={"doc": "id"}), progress=False).outputs
    assert got == [f"n{i}:{i}" for i in range(50)]
    assert again == ["a:0", "a:1", "a:2"]


def test_a_one_parameter_pipeline_takes_a_one_column_manifest_whatever_its_name(
    tmp_path: Path,
) -> None:
    m = manifest(tmp_path / "m.jsonl", [{"number": d} for d in range(10)])
    with ro.Executor(sp.Documents()) as ex:
        got = ex.run(read_jsonl(m), progress=False).outputs
    assert [o if isinstance(o, dict) else None for o in got] == [sp.expected(d) for d in range(10)]


def test_shards_split_a_manifest_over_jobs_and_row_ranges_select_rows(tmp_path: Path) -> None:
    m = manifest(tmp_path / "m.jsonl", [{"doc": d} for d in range(23)])
    seen: list[int] = []
    with ro.Executor(sp.Documents()) as ex:
        for i in range(3):
            out = ex.run(read_jsonl(m, shard=f"{i}/3"), progress=False).outputs
            seen.extend(o["doc"] for o in out if isinstance(o, dict))
            assert all(o["doc"] % 3 == i for o in out if isinstance(o, dict))
        ranged = ex.run(read_jsonl(m, row_range=(5, 8)), progress=False).outputs
    assert sorted(seen) == [d for d in range(23) if d % 13 != 7]
    assert [o["doc"] if isinstance(o, dict) else None for o in ranged] == [5, 6, None]


def test_a_glob_is_one_sorted_row_per_file(tmp_path: Path) -> None:
    for name in ("b.txt", "a.txt", "sub/c.txt", "skip.bin"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(name)

    with ro.Executor(sp.PerText(lambda path: Path(path).read_text())) as ex:
        got = ex.run(read_files(str(tmp_path / "**" / "*.txt")), progress=False).outputs
    assert got == ["a.txt", "b.txt", "sub/c.txt"]
    with pytest.raises(ValueError, match=r"no file matches '.*\*\.pdf'"):
        read_files(str(tmp_path / "*.pdf"))


def test_a_sink_directory_is_read_through_its_manifest_only(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ro.Executor(sp.Documents()) as ex:
        ex.run(list(range(20)), sink=JsonlSink(directory=out, rows_per_part=3), progress=False)
    (out / "part-99999.jsonl.rayorch-tmp-1").write_text('{"doc": -1, "text": ""}\n')
    (out / "stray.jsonl").write_text('{"doc": -2, "text": ""}\n')

    with ro.Executor(sp.PerText(len)) as ex:
        got = ex.run(read_jsonl(out), progress=False).outputs
    assert len(got) == read_manifest(out).total_rows == 19  # document 7 failed


def test_a_missing_column_is_an_error_naming_it_before_anything_runs(tmp_path: Path) -> None:
    m = manifest(tmp_path / "m.jsonl", [{"doc": 1, "title": "x"}])
    out = tmp_path / "out"
    with ro.Executor(Two()) as ex:
        with pytest.raises(ValueError, match=r"m\.jsonl' has no column 'name' for forward\(\)"):
            ex.run(read_jsonl(m), sink=JsonlSink(directory=out))
        with pytest.raises(ValueError, match=r"columns= maps \['nope'\]"):
            ex.run(read_jsonl(m, columns={"nope": "doc"}), sink=JsonlSink(directory=out))
    assert not out.exists()  # nothing written


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"m\.jsonl' has no rows"),
        ("\n\n", r"m\.jsonl' has no rows"),
        ('{"doc": 1}\n{"doc": 2\n', r"m\.jsonl, line 2: not valid JSON"),
        ('{"doc": 1}\n[1, 2]\n', r"m\.jsonl, line 2: a manifest row must be a JSON object"),
        ('{"doc": 1}\n\n{"id": 3}\n', r"m\.jsonl, line 3: no column 'doc'"),
    ],
)
def test_a_bad_manifest_names_the_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "m.jsonl").write_text(text)
    with ro.Executor(sp.Documents()) as ex:
        with pytest.raises(ValueError, match=message):
            ex.run(read_jsonl(tmp_path / "m.jsonl"), progress=False)
        ex.run([1], progress=False)  # the executor stays usable


def test_a_malformed_line_reached_mid_run_keeps_what_was_committed(tmp_path: Path) -> None:
    """Rows are streamed, so a bad line deep in a manifest is found when it is reached: the
    run stops there, the parts committed before stay listed (the output marked incomplete),
    and the run resumes from its journal once the line is fixed."""
    rows = [json.dumps({"doc": d}) for d in range(40)]
    rows[30] = '{"doc": '
    m = tmp_path / "m.jsonl"
    m.write_text("\n".join(rows) + "\n")
    out, journal = tmp_path / "out", tmp_path / "run.journal"
    with ro.Executor(sp.Documents()) as ex:
        with pytest.raises(ValueError, match=r"m\.jsonl, line 31: not valid JSON"):
            ex.run(
                read_jsonl(m),
                input_batch_size=4,
                sink=JsonlSink(directory=out, rows_per_part=2),
                journal=journal,
                progress=False,
            )
        assert not read_manifest(out).complete
        rows[30] = json.dumps({"doc": 30})
        m.write_text("\n".join(rows) + "\n")
        resumed = ex.run(
            read_jsonl(m),
            input_batch_size=4,
            sink=JsonlSink(directory=out, rows_per_part=2),
            journal=journal,
            progress=False,
        )
    assert resumed.roots_restored > 0
    docs = [json.loads(line)["doc"] for p in read_manifest(out).parts for line in open(out / p)]
    assert sorted(docs) == [d for d in range(40) if d % 13 != 7]


@pytest.mark.parametrize("shard", ["3/3", "1", "a/b", (-1, 2), (0, 0)])
def test_bad_shards_are_refused(tmp_path: Path, shard: Any) -> None:
    m = manifest(tmp_path / "m.jsonl", [{"doc": 1}])
    with pytest.raises(ValueError, match="shard .* must be 'i/n' or \\(i, n\\) with 0 <= i < n"):
        read_jsonl(m, shard=shard)


def test_missing_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"manifest '.*nope\.jsonl' does not exist"):
        read_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(ValueError, match="has no _manifest.json"):
        read_jsonl(tmp_path)


def test_a_large_manifest_streams_with_memory_flat(tmp_path: Path) -> None:
    """Python memory while reading 100,000 rows stays within what a few input batches take
    (the figure for 10 million rows is in BENCHMARKS.md)."""
    m = tmp_path / "big.jsonl"
    with open(m, "w") as f:
        for d in range(100_000):
            f.write(f'{{"doc": {d}, "pad": "{"x" * 40}"}}\n')

    class Same:
        def __call__(self, xs: list[int]) -> list[int]:
            return xs

    class Identity(ro.Pipeline):
        def __init__(self) -> None:
            self.same = ro.Module(Same, batch_size=256)

        def forward(self, doc: ro.Port) -> Any:
            return self.same(doc)

    count = {"n": 0}
    held: list[int] = []

    def on_row(row: int, output: Any) -> None:
        count["n"] += 1
        if count["n"] % 10_000 == 0:  # what the run holds while it streams
            held.append(tracemalloc.get_traced_memory()[0])

    tracemalloc.start()
    with ro.Executor(Identity()) as ex:
        ex.run(read_jsonl(m), input_batch_size=1024, on_row=on_row, progress=False)
    tracemalloc.stop()
    assert count["n"] == 100_000
    # Flat: as much after 100,000 rows as after 10,000, and far less than the manifest.
    assert max(held) < held[0] + 1_000_000 and max(held) < os.path.getsize(m) / 10, held
