"""Readers: a run's source rows streamed from a manifest (JSON lines, Parquet) or a glob of
files, never loaded whole: run(reader) pulls them as input batches are admitted, as it pulls
a generator. Columns map to the pipeline's forward() parameters by name."""

from __future__ import annotations

import collections
import glob as globbing
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ._manifest import manifest_files

Shard = tuple[int, int]


def parse_shard(shard: Shard | str | None) -> Shard | None:
    """``(i, n)`` or ``"i/n"``: this job reads rows ``i, i + n, i + 2n, ...`` of the
    manifest (0 <= i < n), so n jobs with i = 0..n-1 read every row once."""
    if shard is None:
        return None
    if isinstance(shard, str):
        parts = shard.split("/")
        try:
            i, n = (int(p) for p in parts) if len(parts) == 2 else (-1, 0)
        except ValueError:
            i, n = -1, 0
    else:
        i, n = shard
    if type(i) is not int or type(n) is not int or n < 1 or not 0 <= i < n:
        raise ValueError(f"shard {shard!r} must be 'i/n' or (i, n) with 0 <= i < n")
    return (i, n)


class Reader(ABC):
    """A streamed source: rows of named columns. ``columns`` maps forward() parameters to
    the reader's column names where they differ; ``shard`` (``"i/n"``) and ``row_range``
    (``(start, stop)``, manifest rows) select the rows this job reads."""

    def __init__(
        self,
        *,
        columns: Mapping[str, str] | None = None,
        shard: Shard | str | None = None,
        row_range: tuple[int, int | None] | None = None,
    ) -> None:
        self._rename = dict(columns or {})
        self._shard = parse_shard(shard)
        if row_range is not None:
            start, stop = row_range
            if (
                type(start) is not int
                or start < 0
                or (stop is not None and (type(stop) is not int or stop < start))
            ):
                raise ValueError(
                    f"row_range {row_range!r} must be (start, stop) with 0 <= start <= stop "
                    f"(stop None: to the end)"
                )
        self._range = row_range

    @abstractmethod
    def describe(self) -> str:
        """What it reads, for errors: a file, a pattern, a folder."""

    @abstractmethod
    def names(self) -> Sequence[str]:
        """Its column names, known before the run (read from the file's start or schema).
        Raises ValueError (the file is empty, unreadable, malformed) naming the file."""

    @abstractmethod
    def rows(self, names: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        """Every manifest row's values of ``names``, in order; a malformed row raises
        ValueError naming the file and the row as soon as it is reached."""

    def selected(self, names: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        """rows() with the shard and row range applied."""
        start, stop = self._range if self._range is not None else (0, None)
        i, n = self._shard if self._shard is not None else (0, 1)
        for index, row in enumerate(self.rows(names)):
            if stop is not None and index >= stop:
                return
            if index >= start and index % n == i:
                yield row

    def source_columns(self, sources: Sequence[str]) -> list[Iterator[Any]]:
        """One lazy column per forward() parameter, row-aligned. Raises ValueError before
        anything runs when a parameter has no column, naming both and the columns there
        are."""
        available = list(self.names())
        wanted = [self._rename.get(s, s) for s in sources]
        unknown = sorted(set(self._rename) - set(sources))
        if unknown:
            raise ValueError(
                f"{self.describe()}: columns= maps {unknown} but forward() has no such "
                f"parameter (it has {list(sources)})"
            )
        if len(sources) == 1 and len(available) == 1 and sources[0] not in self._rename:
            wanted = available
        for source, column in zip(sources, wanted, strict=True):
            if column not in available:
                raise ValueError(
                    f"{self.describe()} has no column {column!r} for forward() parameter "
                    f"{source!r}; its columns are {available} (map one with "
                    f"columns={{{source!r}: ...}})"
                )
        return _split(self.selected(wanted), len(wanted))


def _split(rows: Iterator[tuple[Any, ...]], width: int) -> list[Iterator[Any]]:
    """``width`` iterators over the columns of ``rows``, pulled in step (the engine pulls
    every column of a row before the next row, so each queue holds at most a row or two)."""
    queues: list[collections.deque[Any]] = [collections.deque() for _ in range(width)]

    def column(c: int) -> Iterator[Any]:
        while True:
            if not queues[c]:
                row = next(rows, None)
                if row is None:
                    return
                for q, value in zip(queues, row, strict=True):
                    q.append(value)
            yield queues[c].popleft()

    return [column(c) for c in range(width)]


class JsonlReader(Reader):
    """Rows of one or more JSON-lines files (one object per line; blank lines skipped)."""

    def __init__(
        self,
        path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self._files = manifest_files(path, ".jsonl")
        self._names: list[str] | None = None

    def describe(self) -> str:
        return f"JSON-lines manifest {self._files[0]!r}" + (
            f" (and {len(self._files) - 1} more files)" if len(self._files) > 1 else ""
        )

    def names(self) -> Sequence[str]:
        if self._names is None:
            first = next(self._objects(), None)
            if first is None:
                raise ValueError(f"{self.describe()} has no rows")
            self._names = list(first[2])
        return self._names

    def _objects(self) -> Iterator[tuple[str, int, dict[str, Any]]]:
        decode = json.JSONDecoder().decode
        for f in self._files:
            with open(f, encoding="utf-8") as lines:
                for number, line in enumerate(lines, start=1):
                    if not line.strip():
                        continue
                    try:
                        value = decode(line)
                    except ValueError as error:
                        raise ValueError(f"{f}, line {number}: not valid JSON ({error})") from None
                    if not isinstance(value, dict):
                        raise ValueError(
                            f"{f}, line {number}: a manifest row must be a JSON object, not "
                            f"{type(value).__name__}"
                        )
                    yield f, number, value

    def rows(self, names: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        for f, number, value in self._objects():
            try:
                yield tuple(value[n] for n in names)
            except KeyError as missing:
                raise ValueError(
                    f"{f}, line {number}: no column {missing.args[0]!r} (the manifest's first "
                    f"row has it)"
                ) from None


class FilesReader(Reader):
    """One row per file matching a glob pattern (or several), sorted by path: column
    ``path``. A pattern that matches nothing is a ValueError before anything runs."""

    def __init__(
        self, pattern: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], **options: Any
    ) -> None:
        super().__init__(**options)
        patterns = (
            [os.fspath(pattern)]
            if isinstance(pattern, (str, os.PathLike))
            else [os.fspath(p) for p in pattern]
        )
        found: set[str] = set()
        for p in patterns:
            found.update(f for f in globbing.glob(p, recursive=True) if os.path.isfile(f))
        if not found:
            raise ValueError(f"no file matches {patterns if len(patterns) > 1 else patterns[0]!r}")
        self._patterns = patterns
        self._files = sorted(found)

    @property
    def paths(self) -> list[str]:
        """The files, sorted: manifest row i is ``paths[i]``."""
        return list(self._files)

    def describe(self) -> str:
        return f"files matching {self._patterns[0]!r}"

    def names(self) -> Sequence[str]:
        return ["path"]

    def rows(self, names: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        for f in self._files:
            yield (f,)


def read_jsonl(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], **options: Any
) -> JsonlReader:
    """A JSON-lines manifest (a file, a list of files, or a JsonlSink's directory) as a
    run's source: ``run(read_jsonl("docs.jsonl"))``. Options as Reader's (``columns``,
    ``shard``, ``row_range``)."""
    return JsonlReader(path, **options)


def read_files(
    pattern: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], **options: Any
) -> FilesReader:
    """The files matching a glob pattern (``**`` recursive), one row per path, sorted."""
    return FilesReader(pattern, **options)
