"""Parquet parts and manifests on pyarrow (rayorch_cpp/io/_parquet.py, docs/IO.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rayorch_cpp as ro
import sink_pipeline as sp
from rayorch_cpp.io import ParquetSink, read_manifest, read_parquet

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

DOCS = list(range(40))
PRESENT = [sp.expected(d) for d in DOCS if sp.expected(d) is not None]


def parquet_rows(directory: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name in read_manifest(directory).parts:
        rows.extend(pq.read_table(directory / name).to_pylist())
    return rows


def test_every_present_root_is_a_row_of_a_committed_parquet_part(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ro.Executor(sp.Documents()) as ex:
        ex.run(
            DOCS,
            sink=ParquetSink(directory=out, rows_per_part=10, row_group_rows=4),
            progress=False,
        )
    manifest = read_manifest(out)
    assert manifest.complete and manifest.total_rows == len(PRESENT)
    assert sorted(parquet_rows(out), key=lambda r: r["doc"]) == PRESENT
    first = pq.ParquetFile(out / manifest.parts[0])
    assert first.metadata.num_rows == 10 and first.metadata.num_row_groups == 3  # 4 + 4 + 2


def test_a_given_schema_types_every_part_and_a_misfit_names_the_root(tmp_path: Path) -> None:
    schema = pa.schema([("doc", pa.int16()), ("text", pa.large_string())])
    out = tmp_path / "out"
    with ro.Executor(sp.Documents()) as ex:
        ex.run(
            DOCS, sink=ParquetSink(directory=out, schema=schema, key_column=None), progress=False
        )
        assert pq.read_schema(out / read_manifest(out).parts[0]) == schema
        bad = pa.schema([("doc", pa.string())])
        with pytest.raises(TypeError, match=r"ParquetSink: the rows from root '\d+' on do not fit"):
            ex.run(DOCS, sink=ParquetSink(directory=tmp_path / "bad", schema=bad), progress=False)


def test_a_parquet_manifest_feeds_a_run_by_column_name(tmp_path: Path) -> None:
    table = pa.table({"doc": list(range(30)), "other": ["x"] * 30})
    pq.write_table(table, tmp_path / "m.parquet", row_group_size=7)
    with ro.Executor(sp.Documents()) as ex:
        got = ex.run(read_parquet(tmp_path / "m.parquet", batch_rows=5), progress=False).outputs
        sharded = ex.run(read_parquet(tmp_path / "m.parquet", shard="1/2"), progress=False)
    assert [o if isinstance(o, dict) else None for o in got] == [sp.expected(d) for d in range(30)]
    assert [o["doc"] for o in sharded.outputs if isinstance(o, dict)] == [
        d for d in range(1, 30, 2) if d % 13 != 7
    ]


def test_a_sink_output_is_read_back_through_its_manifest(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ro.Executor(sp.Documents()) as ex:
        ex.run(DOCS, sink=ParquetSink(directory=out, rows_per_part=7), progress=False)
    (out / "part-00099.parquet.rayorch-tmp-3").write_bytes(b"PAR1 torn")

    with ro.Executor(sp.PerText(len)) as ex:
        got = ex.run(read_parquet(out), progress=False).outputs
    assert sorted(got) == sorted(len(r["text"]) for r in PRESENT)


def test_bad_parquet_manifests_are_named_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "torn.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError, match=r"torn\.parquet: not a readable Parquet file"):
        read_parquet(tmp_path / "torn.parquet")
    pq.write_table(pa.table({"doc": pa.array([], pa.int64())}), tmp_path / "empty.parquet")
    with pytest.raises(ValueError, match=r"empty\.parquet' has no rows"):
        read_parquet(tmp_path / "empty.parquet")
    pq.write_table(pa.table({"id": [1]}), tmp_path / "id.parquet")
    out = tmp_path / "out"
    with ro.Executor(sp.Documents()) as ex:
        with pytest.raises(ValueError, match=r"id\.parquet' has no column 'doc'|columns are"):
            ex.run(read_parquet(tmp_path / "id.parquet", columns={"doc": "nope"}), sink=None)
    pq.write_table(pa.table({"a": [1], "b": [2]}), tmp_path / "ab.parquet")
    with ro.Executor(sp.Documents()) as ex:
        with pytest.raises(ValueError, match=r"has no column 'doc' for forward\(\) parameter"):
            ex.run(read_parquet(tmp_path / "ab.parquet"), sink=ParquetSink(directory=out))
    assert not out.exists()
