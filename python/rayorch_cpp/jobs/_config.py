"""A job's configuration (docs/JOBS.md): which pipeline, its parameters, each stage's options,
the run's options, the inputs, the outputs and the backend; read from a TOML or JSON file,
overridden by ``--set KEY=VALUE`` and the command's own flags, and checked whole before the
pipeline runs."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from ._parameters import dataclass_parameters
from ._typed import ConfigError, check_value, closest, parse_text

SECTIONS = ("pipeline", "parameters", "stages", "run", "input", "output", "backend")


@dataclass
class RunSection:
    """``[run]``: how the run admits and stops (Executor.run's options of the same names)."""

    input_batch_size: int | None = None  # rows per input batch; None: 1024
    max_active_input_batches: int = 2
    backpressure: int = 4
    queue_order: Literal["fifo", "lifo"] = "fifo"
    max_failed_roots: int | None = None
    max_failed_fraction: float = 1.0
    min_roots_for_failed_fraction: int = 20
    isolation: Literal["threads", "process"] | None = None  # every Module, local backend
    trace: bool = False  # a Chrome trace in the run folder
    live: str | None = None  # a live page: "PORT" or "HOST:PORT"
    progress_log_interval_s: float = 30.0  # a progress line this often when stderr is no terminal


@dataclass
class InputSection:
    """``[input]``: where the source rows come from (rayorch_cpp.io's readers)."""

    paths: list[str] = field(default_factory=list)
    # auto: .jsonl -> jsonl, .parquet -> parquet, a sink's folder -> its parts, else files
    format: Literal["auto", "jsonl", "parquet", "files"] = "auto"
    glob: str = "**/*"  # the files of a folder input, for format files ("*.pdf": its PDFs)
    columns: dict[str, str] = field(default_factory=dict)  # forward() parameter -> column
    shard: str | None = None  # "i/n": this job reads rows i, i + n, ...


@dataclass
class OutputSection:
    """``[output]``: where the results go (a sink into the output folder)."""

    directory: str = ""
    format: Literal["jsonl", "parquet"] = "jsonl"  # unless the pipeline's job_sink() says
    rows_per_part: int = 100_000


@dataclass
class BackendSection:
    """``[backend]``: where the stages run."""

    name: Literal["local", "ray"] = "local"
    address: str | None = None  # a Ray cluster's address; None: RAY_ADDRESS, else a new one


def section(cls: type, table: Any, prefix: str) -> Any:
    """A section dataclass from a file's table, every key and value checked."""
    if not isinstance(table, dict):
        raise ConfigError(prefix, "must be a table of key = value")
    known = dataclass_parameters(cls)
    for key in table:
        if key not in known:
            raise ConfigError(f"{prefix}.{key}", f"no such option; {closest(key, known)}")
    values = {k: check_value(f"{prefix}.{k}", v, known[k].annotation) for k, v in table.items()}
    return cls(**values)


def section_text(cls: type, option: str, text: str, key: str) -> Any:
    """``--set SECTION.OPTION=TEXT``'s value, parsed by the option's type."""
    known = dataclass_parameters(cls)
    if option not in known:
        raise ConfigError(key, f"no such option; {closest(option, known)}")
    return parse_text(key, text, known[option].annotation)


SECTION_TYPES: dict[str, type] = {
    "run": RunSection,
    "input": InputSection,
    "output": OutputSection,
    "backend": BackendSection,
}


def read_config_file(path: str) -> dict[str, Any]:
    """A configuration file: TOML (``.toml``) or JSON (``.json``), a table at the top."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError("--config", f"{path}: no such file")
    text = p.read_bytes()
    try:
        if p.suffix == ".toml":
            document: Any = tomllib.loads(text.decode())
        elif p.suffix == ".json":
            document = json.loads(text)
        else:
            raise ConfigError("--config", f"{path}: name a .toml or .json file")
    except (tomllib.TOMLDecodeError, ValueError, UnicodeDecodeError) as error:
        if isinstance(error, ConfigError):
            raise
        raise ConfigError(
            "--config", f"{path}: not valid {p.suffix[1:].upper()}: {error}"
        ) from None
    if not isinstance(document, dict):
        raise ConfigError("--config", f"{path}: the top level must be a table")
    for key in document:
        if key not in SECTIONS:
            raise ConfigError(key, f"no such section in {path}; {closest(key, SECTIONS)}")
    return document


def split_assignment(assignment: str) -> tuple[list[str], str]:
    """``KEY=VALUE`` as the key's dotted path and the value's text."""
    key, sep, text = assignment.partition("=")
    path = key.strip().split(".")
    if not sep or not key.strip() or any(not part for part in path):
        raise ConfigError(
            assignment,
            "--set takes KEY=VALUE with a dotted KEY (STAGE.OPTION, PARAMETER, run.OPTION)",
        )
    return path, text


@dataclass
class Sections:
    """The run, input, output and backend sections as resolved."""

    run: RunSection = field(default_factory=RunSection)
    input: InputSection = field(default_factory=InputSection)
    output: OutputSection = field(default_factory=OutputSection)
    backend: BackendSection = field(default_factory=BackendSection)

    def as_dict(self) -> dict[str, Any]:
        return {name: asdict(getattr(self, name)) for name in SECTION_TYPES}


def sections_from(
    document: dict[str, Any], assignments: Sequence[tuple[list[str], str]]
) -> Sections:
    """The sections from the file's tables, then ``--set SECTION.OPTION=VALUE``."""
    tables = {name: dict(document.get(name, {}) or {}) for name in SECTION_TYPES}
    for path, text in assignments:
        name = path[0]
        if len(path) != 2:
            raise ConfigError(".".join(path), f"{name} options are {name}.OPTION")
        tables[name][path[1]] = section_text(SECTION_TYPES[name], path[1], text, ".".join(path))
    return Sections(
        **{name: section(cls, tables[name], name) for name, cls in SECTION_TYPES.items()}
    )
