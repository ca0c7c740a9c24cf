"""Sinks: where run(..., sink=...) writes each present root, exactly once also across a crash
and a journal resume (docs/IO.md). The engine runs the commit protocol (a part written under a
temporary name, flushed to disk, renamed, then recorded in the journal with its roots); a
sink only says how a part is named and written."""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._delivery import shape
from ._records import RecordOf, check_part_options, flush_to_disk, record_of


class PartWriter(Protocol):
    """Writes one part's file (opened by Sink.open). Called on the run's thread, one root at
    a time, in delivery order."""

    def write(self, key: str, row: int, output: Any) -> int | None:
        """Appends a root: its journal key, source row and output (as run() returns it).
        May return bytes() (the engine then does not call it)."""

    def bytes(self) -> int:
        """Bytes written so far (``bytes_per_part`` rolls the part over past it)."""

    def finish(self) -> None:
        """Completes the file and flushes it to disk (os.fsync); an exception aborts the
        run and the part is not committed."""


@dataclass(frozen=True, kw_only=True)
class Sink(ABC):
    """What every sink takes: the output ``directory`` (created when missing) and when a
    part is committed: once it holds ``rows_per_part`` roots, or ``bytes_per_part`` bytes, or
    when a root arrives ``max_part_age_s`` after its first (0: no limit), and at the end of
    the run. Subclass it (part_name and open) for a format of your own."""

    directory: str | os.PathLike[str]
    rows_per_part: int = 100_000
    bytes_per_part: int = 128 << 20
    max_part_age_s: float = 0.0

    def __post_init__(self) -> None:
        check_part_options(self.rows_per_part, self.bytes_per_part, self.max_part_age_s, "part")
        if not os.fspath(self.directory):
            raise ValueError("a sink needs a directory")

    @abstractmethod
    def part_name(self, sequence: int, key: str, row: int, output: Any) -> str:
        """The file name of part number ``sequence`` (from 0) whose first root is given: a
        plain name, the same for the same inputs (no time, no random part)."""

    def max_rows(self) -> int:
        """The most roots a part of this format may hold (0: no limit of its own)."""
        return 0

    @abstractmethod
    def open(self, path: str) -> PartWriter:
        """A writer of a part whose bytes go to ``path`` (a temporary name)."""


@dataclass(frozen=True, kw_only=True)
class JsonlSink(Sink):
    """JSON lines, one per present root: ``record(output)`` (default: a dict as it is, a
    dataclass or NamedTuple as its fields, anything else as ``{"value": output}``), with
    the root's journal key as column ``key_column`` when given. Parts are named
    ``<prefix>-<sequence, 5 digits>.jsonl``. ``default`` serialises what json cannot (as
    json.dumps's ``default``; None: a TypeError naming the root)."""

    prefix: str = "part"
    record: RecordOf | None = None
    key_column: str | None = None
    default: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_part_options(
            self.rows_per_part, self.bytes_per_part, self.max_part_age_s, self.prefix
        )

    def part_name(self, sequence: int, key: str, row: int, output: Any) -> str:
        return f"{self.prefix}-{sequence:05d}.jsonl"

    def open(self, path: str) -> PartWriter:
        return _JsonlWriter(self, path)


class _PartFile:
    """A part's file as the sinks of this module write it: bytes appended, counted, and
    flushed to disk when the part is finished."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "wb")
        self._bytes = 0

    def _append(self, data: bytes) -> int:
        self._file.write(data)
        self._bytes += len(data)
        return self._bytes

    def bytes(self) -> int:
        return self._bytes

    def finish(self) -> None:
        try:
            flush_to_disk(self._file)
        finally:
            self._file.close()


class _JsonlWriter(_PartFile):
    def __init__(self, sink: JsonlSink, path: str) -> None:
        super().__init__(path)
        self._sink = sink
        # One encoder for the part: json.dumps with options builds one per call.
        self._encode = json.JSONEncoder(ensure_ascii=False, default=sink.default).encode

    def write(self, key: str, row: int, output: Any) -> int:
        record = record_of(output, key, self._sink.record, self._sink.key_column)
        try:
            line = self._encode(record)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"JsonlSink: root {key!r} (row {row}) cannot be written as JSON ({error}); "
                f"pass record= to convert its output, or default= for the values json "
                f"cannot write"
            ) from error
        return self._append(line.encode() + b"\n")


def _default_contents(output: Any) -> bytes:
    if isinstance(output, bytes):
        return output
    if isinstance(output, str):
        return output.encode()
    return json.dumps(output, ensure_ascii=False).encode() + b"\n"


@dataclass(frozen=True, kw_only=True)
class FileSink(Sink):
    """One file per present root, as ``rayorch pdf2md`` writes its Markdown: named
    ``name(key, row, output)`` (a plain file name, unique per root: a run that would commit a
    name twice stops with ExecutionError), holding ``contents(output)`` (bytes, or str
    written as UTF-8; default: bytes and str as they are, anything else as JSON)."""

    name: Callable[[str, int, Any], str]
    contents: Callable[[Any], bytes | str] = field(default=_default_contents)
    rows_per_part: int = 1

    def part_name(self, sequence: int, key: str, row: int, output: Any) -> str:
        return self.name(key, row, output)

    def max_rows(self) -> int:
        return 1

    def open(self, path: str) -> PartWriter:
        return _FileWriter(self, path)


class _FileWriter(_PartFile):
    def __init__(self, sink: FileSink, path: str) -> None:
        super().__init__(path)
        self._sink = sink

    def write(self, key: str, row: int, output: Any) -> int:
        data = self._sink.contents(output)
        if isinstance(data, str):
            data = data.encode()
        if not isinstance(data, bytes):
            raise TypeError(
                f"FileSink: contents(output) must return bytes or str; root {key!r} (row "
                f"{row}) gave {type(data).__name__}"
            )
        return self._append(data)


class EngineFormat:
    """A Sink as the engine calls it (python/src/python_sink.h): the root's flat output
    tuple shaped as run() returns it (``tree``: CompiledProgram.output_tree)."""

    def __init__(self, sink: Sink, tree: Any) -> None:
        self._sink = sink
        self._tree = tree

    def max_rows(self) -> int:
        return self._sink.max_rows()

    def part_name(self, sequence: int, key: str, row: int, outputs: tuple[Any, ...]) -> str:
        return self._sink.part_name(sequence, key, row, shape(self._tree, outputs))

    def open(self, path: str) -> _ShapedWriter:
        return _ShapedWriter(self._sink.open(path), self._tree)


class _ShapedWriter:
    def __init__(self, writer: PartWriter, tree: Any) -> None:
        self._writer = writer
        self._tree = tree
        self.bytes = writer.bytes
        self.finish = writer.finish

    def write(self, key: str, row: int, outputs: tuple[Any, ...]) -> int | None:
        return self._writer.write(key, row, shape(self._tree, outputs))
