"""A job's reader and sink, chosen from its ``[input]`` and ``[output]`` sections: the readers
and sinks of rayorch_cpp.io (docs/IO.md), so a job's outputs are exactly once as a run's are."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..io import JsonlSink, ParquetSink, Reader, Sink, read_files, read_jsonl, read_parquet
from ..io._manifest import read_manifest
from ._config import InputSection, OutputSection
from ._typed import ConfigError

GLOB_CHARS = set("*?[")


def _format_of(path: str) -> str:
    """What ``format = "auto"`` reads at ``path``."""
    p = Path(path)
    if p.is_dir():
        if (p / "_manifest.json").is_file():
            try:
                parts = read_manifest(p).parts
            except ValueError as error:
                raise ConfigError("input.paths", str(error)) from None
            suffixes = {Path(name).suffix for name in parts}
            if suffixes <= {".jsonl"}:
                return "jsonl"
            if suffixes == {".parquet"}:
                return "parquet"
            raise ConfigError("input.paths", f"{path}: a sink's output of parts {sorted(suffixes)}")
        return "files"
    if p.suffix == ".jsonl":
        return "jsonl"
    if p.suffix == ".parquet":
        return "parquet"
    return "files"


def _files_pattern(path: str, glob: str) -> str:
    """A folder's files matching ``glob`` (default: all, recursively); a file or a glob
    pattern as given."""
    return os.path.join(path, glob) if Path(path).is_dir() else path


def make_reader(section: InputSection) -> Reader:
    """The reader of the job's inputs; every path is checked before anything runs."""
    if not section.paths:
        raise ConfigError("input.paths", "no input given: --input PATH (a file, folder or pattern)")
    for path in section.paths:
        if not GLOB_CHARS & set(path) and not os.path.exists(path):
            raise ConfigError("input.paths", f"{path}: no such file or folder")
    formats = (
        {section.format} if section.format != "auto" else {_format_of(p) for p in section.paths}
    )
    if len(formats) != 1:
        raise ConfigError(
            "input.format",
            f"the inputs are of several formats ({', '.join(sorted(formats))}); "
            "give one kind, or set input.format",
        )
    kind = formats.pop()
    options: dict[str, Any] = {"columns": section.columns or None, "shard": section.shard}
    try:
        if kind == "jsonl":
            return read_jsonl(section.paths, **options)
        if kind == "parquet":
            return read_parquet(section.paths, **options)
        return read_files([_files_pattern(p, section.glob) for p in section.paths], **options)
    except (ValueError, OSError) as error:
        raise ConfigError("input", str(error)) from None


def make_sink(section: OutputSection, pipeline: Any, directory: str) -> Sink:
    """The job's sink into ``directory``: the pipeline's own (a ``job_sink(directory)``
    method returning a rayorch_cpp.io Sink), else JSON lines or Parquet parts."""
    own = getattr(pipeline, "job_sink", None)
    if callable(own):
        sink = own(directory)
        if not isinstance(sink, Sink):
            raise ConfigError(
                "output",
                f"{type(pipeline).__name__}.job_sink() returned a "
                f"{type(sink).__name__}, not a rayorch_cpp.io Sink",
            )
        return sink
    try:
        if section.format == "parquet":
            return ParquetSink(directory=directory, rows_per_part=section.rows_per_part)
        return JsonlSink(directory=directory, rows_per_part=section.rows_per_part)
    except (ValueError, TypeError, RuntimeError) as error:
        raise ConfigError("output", str(error)) from None
