"""How a root's output becomes a record (a dict of columns) in a JSON-lines or Parquet part,
and how a part is flushed to disk before the engine renames it."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import IO, Any

RecordOf = Callable[[Any], Mapping[str, Any]]


def default_record(output: Any) -> Mapping[str, Any]:
    """A dict as it is, a dataclass as its fields, a NamedTuple as its fields, anything else
    as ``{"value": output}``."""
    if type(output) is dict or isinstance(output, Mapping):
        return output
    if dataclasses.is_dataclass(output) and not isinstance(output, type):
        return {f.name: getattr(output, f.name) for f in dataclasses.fields(output)}
    as_dict = getattr(output, "_asdict", None)
    if isinstance(output, tuple) and callable(as_dict):
        record = as_dict()
        if isinstance(record, Mapping):
            return record
    return {"value": output}


def record_of(
    output: Any, key: str, record: RecordOf | None, key_column: str | None
) -> Mapping[str, Any]:
    """The record a sink writes for a root: ``record(output)`` (default_record without one),
    with the root's journal key under ``key_column`` when given."""
    r = (record or default_record)(output)
    if not isinstance(r, Mapping):
        raise TypeError(
            f"a sink's record(output) must return a dict of columns; root {key!r} gave "
            f"{type(r).__name__}"
        )
    if key_column is None:
        return r
    if key_column in r:
        raise ValueError(
            f"key_column {key_column!r} is also a column of root {key!r}'s record; choose "
            f"another name"
        )
    return {key_column: key, **r}


def flush_to_disk(file: IO[bytes]) -> None:
    """Flushes a part's file and its bytes to disk (the engine renames it afterwards)."""
    file.flush()
    os.fsync(file.fileno())


def check_part_options(
    rows_per_part: int, bytes_per_part: int, max_part_age_s: float, prefix: str
) -> None:
    """Raises ValueError naming the bad option."""
    if type(rows_per_part) is not int or rows_per_part < 1:
        raise ValueError(f"rows_per_part must be a positive integer, not {rows_per_part!r}")
    if type(bytes_per_part) is not int or bytes_per_part < 1:
        raise ValueError(f"bytes_per_part must be a positive integer, not {bytes_per_part!r}")
    if not isinstance(max_part_age_s, (int, float)) or max_part_age_s < 0:
        raise ValueError(
            f"max_part_age_s must be >= 0 seconds (0: no limit), not {max_part_age_s!r}"
        )
    if not prefix or "/" in prefix or prefix.startswith((".", "_")):
        raise ValueError(
            f"prefix {prefix!r} must be a plain file name start (no '/', not starting with "
            f"'.' or '_', which readers skip)"
        )
