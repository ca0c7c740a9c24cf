"""Which inputs a workload command reads, as the C++ commands choose them
(workloads/common/input_selection.h): files, folders and glob patterns, JSON-lines manifests
(or the folder of a JSON-lines sink), then this job's share of the list (``--shard i/n``,
``--row-range a:b``), so a corpus can be split over jobs that each read the same list."""

from __future__ import annotations

import glob as globbing
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..io._manifest import read_manifest


class SelectionError(ValueError):
    """A bad input selection, found before anything runs; the message names the input (and
    the manifest line) and says what is wrong."""


@dataclass(frozen=True)
class InputSelection:
    """What a command was asked to read."""

    paths: Sequence[str] = ()  #: files, folders (searched recursively), glob patterns
    manifests: Sequence[str] = ()  #: JSON-lines files or JSON-lines sink folders
    path_field: str = "path"  #: the manifest field holding a row's path
    shard: tuple[int, int] | None = None  #: (i, n): rows i, i + n, i + 2n, ...
    row_range: tuple[int, int | None] | None = None  #: rows [start, stop)


@dataclass(frozen=True)
class InputRules:
    """How one workload finds its inputs and words its errors."""

    extensions: tuple[str, ...]  #: searched for in folders: lower case, with the dot
    none_given: str
    none_found: str
    duplicate_stem: Callable[[str, str, str], str] = field(
        default=lambda stem, first, second: (
            f"duplicate document name '{stem}': {first} and {second}"
        )
    )


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` as (i, n); SelectionError saying what is expected."""
    index, _, count = text.partition("/")
    if index.isdigit() and count.isdigit() and 0 <= int(index) < int(count):
        return int(index), int(count)
    raise SelectionError(
        f"shard '{text}' must be I/N with 0 <= I < N: job I of N reads inputs I, I+N, I+2N, ..."
    )


def parse_row_range(text: str) -> tuple[int, int | None]:
    """``"start:stop"`` (stop may be empty: to the end) as (start, stop)."""
    start, colon, stop = text.partition(":")
    if colon and start.isdigit() and (not stop or (stop.isdigit() and int(stop) >= int(start))):
        return int(start), int(stop) if stop else None
    raise SelectionError(
        f"row range '{text}' must be START:STOP with START <= STOP (STOP empty: to the end), "
        "counting inputs from 0"
    )


def _is_pattern(text: str) -> bool:
    return any(c in text for c in "*?[")


def _files_of_path(given: str, rules: InputRules) -> list[str]:
    path = Path(given)
    if not path.exists():
        if not _is_pattern(given):
            raise SelectionError(f"input not found: {given}")
        matches = sorted(p for p in globbing.glob(given, recursive=True) if os.path.isfile(p))
        if not matches:
            raise SelectionError(f"no file matches the pattern {given}")
        return matches
    if path.is_dir():
        return [
            str(p) for p in path.rglob("*") if p.suffix.lower() in rules.extensions and p.is_file()
        ]
    if path.is_file():
        return [given]
    raise SelectionError(f"input {given} is neither a file nor a directory")


def _manifest_rows(manifest: str, path_field: str) -> list[tuple[str, str]]:
    """(path, "manifest, line N") per row of a JSON-lines manifest or a sink's folder; a
    relative path is taken from the folder the file that names it is in."""
    if os.path.isdir(manifest):
        try:
            sink = read_manifest(manifest)
        except ValueError as error:
            raise SelectionError(f"manifest {manifest}: {error}") from None
        if not sink.complete:
            raise SelectionError(
                f"manifest {manifest}: the run that wrote this sink did not complete; resume it "
                "first"
            )
        files = [os.path.join(manifest, p) for p in sink.parts if p.endswith(".jsonl")]
    elif os.path.isfile(manifest):
        files = [manifest]
    else:
        raise SelectionError(f"manifest not found: {manifest}")
    rows: list[tuple[str, str]] = []
    for file in files:
        folder = os.path.dirname(file)
        try:
            with open(file, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    where = f"{file}, line {number}"
                    try:
                        row = json.loads(line)
                    except ValueError as error:
                        raise SelectionError(f"{where}: not JSON ({error})") from None
                    if not isinstance(row, dict) or not isinstance(row.get(path_field), str):
                        raise SelectionError(
                            f"{where}: expected an object with the string field '{path_field}'"
                        )
                    rows.append((os.path.join(folder, row[path_field]), where))
        except OSError as error:
            raise SelectionError(f"cannot read manifest {file}: {error.strerror}") from None
    if not rows:
        raise SelectionError(f"manifest {manifest} has no rows")
    return rows


def select_inputs(selection: InputSelection, rules: InputRules) -> list[str]:
    """The input list, then this job's share of it. The list: the files named by ``paths``
    (files as given, folders searched recursively for ``rules.extensions`` in any case, glob
    patterns: every matching file, whatever its extension), sorted by path, followed by the
    rows of each manifest in its order; the same file once, at its first place. The row
    range, then the shard, are applied to that list, so every job given the same inputs
    agrees on it; a share may be empty. SelectionError, before anything runs, for nothing
    named, a missing or unreadable input, a pattern matching nothing, a bad manifest, no
    files at all, or two files with the same stem anywhere in the list."""
    if not selection.paths and not selection.manifests:
        raise SelectionError(rules.none_given)
    named = sorted(f for given in selection.paths for f in _files_of_path(given, rules))
    listed = [(os.path.normpath(f), "") for f in named]
    for manifest in selection.manifests:
        listed += _manifest_rows(manifest, selection.path_field)
    seen: set[str] = set()
    files: list[str] = []
    for path, where in listed:
        prefix = f"{where}: " if where else ""
        if not os.path.exists(path):
            raise SelectionError(f"{prefix}input not found: {path}")
        if not os.path.isfile(path):
            raise SelectionError(f"{prefix}input {path} is not a file")
        if not os.access(path, os.R_OK):
            raise SelectionError(f"{prefix}cannot read input {path}: permission denied")
        identity = os.path.realpath(path)
        if identity not in seen:
            seen.add(identity)
            files.append(path)
    if not files:
        raise SelectionError(rules.none_found)
    stems: dict[str, str] = {}
    for file in files:
        stem = Path(file).stem
        if stem in stems:
            raise SelectionError(rules.duplicate_stem(stem, stems[stem], file))
        stems[stem] = file
    if selection.row_range is not None:
        start, stop = selection.row_range
        files = files[start:stop]
    if selection.shard is not None:
        index, count = selection.shard
        files = files[index::count]
    return files
