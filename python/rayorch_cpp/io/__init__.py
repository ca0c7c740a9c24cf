"""Data in and out of a run (docs/IO.md).

Readers stream a run's source rows: ``run(read_jsonl("docs.jsonl"))``, ``read_parquet``,
``read_files("pdfs/**/*.pdf")``; columns map to forward()'s parameters by name, ``shard="i/n"``
splits a manifest over jobs. Sinks write each present root exactly once, also across a crash
and a journal resume: ``run(..., sink=JsonlSink("out/"), journal="out.journal")``,
``ParquetSink``, ``FileSink``; ``read_manifest`` lists a sink's committed parts.
"""

from ._manifest import SinkManifest, read_manifest
from ._parquet import ParquetReader, ParquetSink, read_parquet
from ._readers import FilesReader, JsonlReader, Reader, parse_shard, read_files, read_jsonl
from ._records import default_record
from ._sinks import FileSink, JsonlSink, PartWriter, Sink

__all__ = [
    "FileSink",
    "FilesReader",
    "JsonlReader",
    "JsonlSink",
    "ParquetReader",
    "ParquetSink",
    "PartWriter",
    "Reader",
    "Sink",
    "SinkManifest",
    "default_record",
    "parse_shard",
    "read_files",
    "read_jsonl",
    "read_manifest",
    "read_parquet",
]
