"""What the built-in benchmarks share: checking and normalising their configuration fields
(as ``__post_init__`` of a frozen dataclass, so a configuration read back from JSON compares
equal), stage options laid over a stage's defaults, and the run and submit glue."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from .._pipeline import Pipeline
from .._run_result import RunResult
from ..benchmark.execution import benchmark_config, run_benchmark
from ..benchmark.report import BenchmarkReport
from ..benchmark.submission import BenchmarkRun, LocalSource, submit_benchmark


def resolved_path(value: str | os.PathLike[str]) -> str:
    """A path as configurations keep it: expanded and absolute, as text."""
    return str(Path(value).expanduser().resolve())


def check_positive_int(name: str, value: object) -> None:
    if type(value) is not int or value <= 0:
        raise ValueError(f"{name} must be a positive integer")


def check_optional_limit(name: str, value: object) -> None:
    if value is not None and (type(value) is not int or value <= 0):
        raise ValueError(f"{name} must be a positive integer or None")


def check_fraction(name: str, value: object) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value <= 1:
        raise ValueError(f"{name} must be in (0, 1]")


def normalize_stage_options(
    value: Mapping[str, Mapping[str, Any]] | None, stages: Sequence[str], workload: str
) -> dict[str, dict[str, Any]]:
    """``stage_options`` as ``{stage: {option: value}}`` (a shallow copy per stage): None is
    empty; an unknown stage, a stage given no mapping, or ``num_outputs`` is an error."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError("stage_options must be a mapping")
    unknown = sorted(set(value) - set(stages))
    if unknown:
        raise ValueError(
            f"unknown {workload} stage {unknown[0]!r}; expected one of {', '.join(stages)}"
        )
    out: dict[str, dict[str, Any]] = {}
    for stage, overrides in value.items():
        if not isinstance(overrides, Mapping):
            raise TypeError(f"stage_options[{stage!r}] must be a mapping")
        if "num_outputs" in overrides:
            raise ValueError("stage_options cannot override num_outputs")
        out[stage] = dict(overrides)
    return out


def check_fields(
    config: Any,
    *,
    paths: Sequence[str] = (),
    positive: Sequence[str] = (),
    fractions: Sequence[str] = (),
    limit: str | None = None,
    stages: Sequence[str] = (),
    workload: str = "",
) -> None:
    """Checks and normalises a built-in benchmark's configuration in place (a frozen
    dataclass, from its ``__post_init__``): ``paths`` resolved (resolved_path); ``positive``
    and the input batching every benchmark has (``input_batch_size``,
    ``max_active_input_batches``) positive integers; ``fractions`` in (0, 1]; ``limit``, when
    named, a positive integer or None; with ``stages``, ``stage_options`` normalised for them
    (``workload`` names the benchmark in its errors). Raises ValueError naming the field."""
    for name in paths:
        object.__setattr__(config, name, resolved_path(getattr(config, name)))
    for name in (*positive, "input_batch_size", "max_active_input_batches"):
        check_positive_int(name, getattr(config, name))
    if limit is not None:
        check_optional_limit(limit, getattr(config, limit))
    for name in fractions:
        check_fraction(name, getattr(config, name))
    if stages:
        options = normalize_stage_options(config.stage_options, stages, workload)
        object.__setattr__(config, "stage_options", options)


def stage(
    stage_options: Mapping[str, Mapping[str, Any]], name: str, defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """A stage's Module options: its defaults with the configuration's overrides on top."""
    return {**defaults, **stage_options.get(name, {})}


def pdf_inputs(input_path: str, limit: int | None) -> list[str]:
    """The PDFs of a file or folder (sorted, searched recursively), the first ``limit``."""
    path = Path(input_path)
    if path.is_dir():
        found = sorted(
            str(p) for p in path.rglob("*") if p.is_file() and p.suffix.lower() == ".pdf"
        )
    elif path.is_file() and path.suffix.lower() == ".pdf":
        found = [str(path)]
    else:
        raise FileNotFoundError(f"input_path must be a PDF or directory of PDFs: {input_path}")
    if limit is not None:
        found = found[:limit]
    if not found:
        raise ValueError(f"no PDF inputs found under {input_path}")
    stems: dict[str, str] = {}
    for pdf in found:
        stem = Path(pdf).stem
        if stem in stems:
            raise ValueError(f"two PDFs share the stem {stem!r}: {stems[stem]} and {pdf}")
        stems[stem] = pdf
    return found


def lines_of(path: str, limit: int | None) -> list[str]:
    """The non-empty lines of a prompt file, the first ``limit``."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"input_path does not exist: {path}")
    lines = [line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    if limit is not None:
        lines = lines[:limit]
    if not lines:
        raise ValueError(f"no prompts in {path}")
    return lines


def require_path(what: str, path: str) -> None:
    if not Path(path).exists():
        raise FileNotFoundError(f"{what} does not exist: {path}")


class BenchmarkBase:
    """``run()`` and ``submit()`` of a built-in benchmark. A subclass is a frozen dataclass
    with ``output_dir``, ``input_batch_size`` and ``max_active_input_batches`` fields; it names
    itself (``NAME``, its registry key) and says what a run reads (``source_columns``, which
    checks the inputs), builds (``pipeline``) and counts (``extra_metrics``)."""

    __slots__ = ()
    NAME: ClassVar[str]
    output_dir: str | Path
    input_batch_size: int
    max_active_input_batches: int

    def artifact_root(self) -> str:
        """Where its run folders go: ``OUTPUT_DIR/.rayorch-benchmark``."""
        return str(Path(self.output_dir) / ".rayorch-benchmark")

    def source_columns(self) -> tuple[Sequence[Any], ...]:
        raise NotImplementedError

    def pipeline(self) -> Pipeline:
        raise NotImplementedError

    def extra_metrics(self, result: RunResult) -> dict[str, Any]:
        return {}

    def run(
        self,
        *,
        ray_address: str | None = None,
        ray_init_kwargs: Mapping[str, Any] | None = None,
        profile: bool = True,
        profile_interval_s: float = 1.0,
        run_id: str | None = None,
    ) -> BenchmarkReport:
        """Runs the benchmark once (on the local backend, or on the Ray cluster at
        ``ray_address``) and writes its artifacts; returns its report."""
        columns = self.source_columns()
        return run_benchmark(
            name=self.NAME,
            pipeline=self.pipeline(),
            source_columns=columns,
            config=benchmark_config(self),
            artifact_root=self.artifact_root(),
            input_batch_size=self.input_batch_size,
            max_active_input_batches=self.max_active_input_batches,
            ray_address=ray_address,
            ray_init_kwargs=ray_init_kwargs,
            profile=profile,
            profile_interval_s=profile_interval_s,
            run_id=run_id,
            extra_metrics=self.extra_metrics,
        )

    def submit(
        self,
        target: str,
        *,
        source: LocalSource | None = None,
        profile: bool = True,
        profile_interval_s: float = 1.0,
        run_id: str | None = None,
    ) -> BenchmarkRun:
        """Submits the benchmark to the job server ``target`` as a Ray job running ``run()``
        on the cluster; its report goes where ``run()``'s would."""
        return submit_benchmark(
            benchmark=self.NAME,
            config=benchmark_config(self),
            artifact_root=self.artifact_root(),
            target=target,
            source=source,
            profile=profile,
            profile_interval_s=profile_interval_s,
            run_id=run_id,
        )
