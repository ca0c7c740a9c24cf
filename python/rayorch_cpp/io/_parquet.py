"""Parquet on pyarrow (the ``parquet`` extra): a sink whose parts are Parquet files written a
row group at a time, and a reader that streams record batches of the columns a pipeline
reads."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from ._manifest import manifest_files
from ._readers import Reader
from ._records import RecordOf, check_part_options, flush_to_disk, record_of
from ._sinks import PartWriter, Sink


def _pyarrow() -> Any:
    try:
        pyarrow = importlib.import_module("pyarrow")
        importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise ImportError(
            "Parquet needs pyarrow: pip install 'rayorch-cpp[parquet]' (pyarrow==26.0.1)"
        ) from None
    return pyarrow


@dataclass(frozen=True, kw_only=True)
class ParquetSink(Sink):
    """Parquet parts named ``<prefix>-<sequence, 5 digits>.parquet``, one row per present
    root: ``record(output)`` as JsonlSink's (a dict, a dataclass's fields, ...), with the
    journal key as ``key_column`` when given. ``schema`` (a pyarrow.Schema) fixes the
    columns and their types; without one, the first row group's inferred schema is every
    part's. Rows are written ``row_group_rows`` at a time (what a part holds in memory),
    compressed with ``compression``."""

    prefix: str = "part"
    record: RecordOf | None = None
    key_column: str | None = None
    schema: Any = None
    row_group_rows: int = 10_000
    compression: str = "zstd"
    # The schema every part of this output uses once the first row group fixed it.
    _part_schema: list[Any] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_part_options(
            self.rows_per_part, self.bytes_per_part, self.max_part_age_s, self.prefix
        )
        if type(self.row_group_rows) is not int or self.row_group_rows < 1:
            raise ValueError(
                f"row_group_rows must be a positive integer, not {self.row_group_rows!r}"
            )
        pa = _pyarrow()
        if self.schema is not None and not isinstance(self.schema, pa.Schema):
            raise TypeError(f"schema must be a pyarrow.Schema, not {type(self.schema).__name__}")
        self._part_schema.append(self.schema)

    def part_schema(self) -> Any:
        """The schema of this sink's parts: ``schema``, else the first row group's."""
        return self._part_schema[0]

    def fix_schema(self, schema: Any) -> None:
        """Keeps the first row group's schema for every later part (no ``schema`` given)."""
        if self._part_schema[0] is None:
            self._part_schema[0] = schema

    def part_name(self, sequence: int, key: str, row: int, output: Any) -> str:
        return f"{self.prefix}-{sequence:05d}.parquet"

    def open(self, path: str) -> PartWriter:
        return _ParquetWriter(self, path)


class _ParquetWriter:
    def __init__(self, sink: ParquetSink, path: str) -> None:
        self._sink = sink
        self._pa = _pyarrow()
        self._file: IO[bytes] = open(path, "wb")
        self._writer: Any = None
        self._records: list[Any] = []
        self._first_key = ""
        self._bytes = 0
        self._estimate = 0

    def write(self, key: str, row: int, output: Any) -> int:
        if not self._records:
            self._first_key = key
        record = record_of(output, key, self._sink.record, self._sink.key_column)
        self._records.append(record)
        self._estimate += 16 * len(record)
        if len(self._records) >= self._sink.row_group_rows:
            self._flush_rows()
        return self._bytes + self._estimate

    def _flush_rows(self) -> None:
        pa = self._pa
        try:
            table = pa.Table.from_pylist(self._records, schema=self._sink.part_schema())
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as error:
            schema = self._sink.part_schema()
            raise TypeError(
                f"ParquetSink: the rows from root {self._first_key!r} on do not fit "
                + (f"the schema {schema}" if schema is not None else "one table")
                + f" ({error}); pass schema= or record= to give every row the same columns"
            ) from error
        self._sink.fix_schema(table.schema)
        if self._writer is None:
            self._writer = pa.parquet.ParquetWriter(
                self._file, table.schema, compression=self._sink.compression
            )
        self._writer.write_table(table)
        self._records = []
        self._estimate = 0
        self._bytes = self._file.tell()

    def bytes(self) -> int:
        return self._bytes + self._estimate

    def finish(self) -> None:
        try:
            if self._records or self._writer is None:
                self._flush_rows()
            self._writer.close()
            flush_to_disk(self._file)
        finally:
            self._file.close()


class ParquetReader(Reader):
    """Rows of one or more Parquet files, ``batch_rows`` at a time, only the columns the
    pipeline reads. A file that is not Parquet is a ValueError naming it before anything
    runs."""

    def __init__(
        self,
        path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        batch_rows: int = 1024,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self._pa = _pyarrow()
        self._files = manifest_files(path, ".parquet")
        self._batch_rows = batch_rows
        self._names: list[str] = []
        rows = 0
        for f in self._files:
            try:
                meta = self._pa.parquet.ParquetFile(f)
            except (self._pa.ArrowInvalid, OSError) as error:
                raise ValueError(f"{f}: not a readable Parquet file ({error})") from None
            names = list(meta.schema_arrow.names)
            if not self._names:
                self._names = names
            elif names != self._names:
                raise ValueError(
                    f"{f}: its columns {names} differ from {self._files[0]}'s {self._names}"
                )
            rows += meta.metadata.num_rows
        if rows == 0:
            raise ValueError(f"{self.describe()} has no rows")

    def describe(self) -> str:
        return f"Parquet manifest {self._files[0]!r}" + (
            f" (and {len(self._files) - 1} more files)" if len(self._files) > 1 else ""
        )

    def names(self) -> Sequence[str]:
        return self._names

    def rows(self, names: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        for f in self._files:
            try:
                batches = self._pa.parquet.ParquetFile(f).iter_batches(
                    batch_size=self._batch_rows, columns=list(names)
                )
                for batch in batches:
                    columns = [batch.column(n).to_pylist() for n in names]
                    yield from zip(*columns, strict=True)
            except (self._pa.ArrowInvalid, OSError) as error:
                raise ValueError(f"{f}: cannot be read ({error})") from None


def read_parquet(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], **options: Any
) -> ParquetReader:
    """A Parquet manifest (a file, a list of files, or a ParquetSink's directory) as a run's
    source: ``run(read_parquet("docs.parquet"))``. Options as Reader's (``columns``,
    ``shard``, ``row_range``) and ``batch_rows``."""
    return ParquetReader(path, **options)
