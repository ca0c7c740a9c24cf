"""The manifest a sink writes at the end of every run (``_manifest.json``, docs/IO.md): the
committed parts a reader may read, and whether the run completed (``_SUCCESS``)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SinkManifest:
    """A sink directory's committed parts (oldest first), their row counts, and whether the
    run that wrote them accounted for every root."""

    directory: str
    parts: tuple[str, ...]
    rows: tuple[int, ...]
    complete: bool

    @property
    def total_rows(self) -> int:
        return sum(self.rows)


def read_manifest(directory: str | os.PathLike[str]) -> SinkManifest:
    """Reads a sink's ``_manifest.json``; ValueError when there is none or it is not one."""
    d = os.fspath(directory)
    path = os.path.join(d, "_manifest.json")
    try:
        with open(path, "rb") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise ValueError(
            f"{d!r} has no _manifest.json: it is not a sink's output, or its run has not "
            f"committed anything yet"
        ) from None
    except ValueError as error:
        raise ValueError(f"{path}: not a sink manifest ({error})") from None
    if not isinstance(data, dict) or data.get("format") != "rayorch-sink":
        raise ValueError(f"{path}: not a sink manifest (format is not 'rayorch-sink')")
    parts = data.get("parts", [])
    return SinkManifest(
        directory=d,
        parts=tuple(str(p["name"]) for p in parts),
        rows=tuple(int(p["rows"]) for p in parts),
        complete=bool(data.get("complete")),
    )


def committed_parts(directory: str, suffix: str) -> list[str]:
    """The paths of the committed parts of a sink directory that end with ``suffix``."""
    manifest = read_manifest(directory)
    files = [os.path.join(directory, p) for p in manifest.parts if p.endswith(suffix)]
    if not files:
        raise ValueError(f"sink directory {directory!r} has no committed {suffix} parts")
    return files


def manifest_files(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], suffix: str
) -> list[str]:
    """The files a manifest reader reads: a file, a list of files, or a sink's directory (the
    parts its _manifest.json lists, committed ones only)."""
    if isinstance(path, (str, os.PathLike)):
        p = os.fspath(path)
        if os.path.isdir(p):
            return committed_parts(p, suffix)
        if not os.path.exists(p):
            raise ValueError(f"manifest {p!r} does not exist")
        return [p]
    files = [os.fspath(p) for p in path]
    if not files:
        raise ValueError("no manifest files given")
    for f in files:
        if not os.path.isfile(f):
            raise ValueError(f"manifest {f!r} does not exist")
    return files
