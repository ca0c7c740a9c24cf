"""Running a benchmark: its configuration as JSON, its pipeline run once with its metrics,
resource profile and artifacts (``ARTIFACT_ROOT/RUN_ID/{config.json, summary.json,
gpu_samples.jsonl}``), as the reference's benchmark runs write them.

Where the reference always runs on Ray, ``ray_address=None`` runs on the embedded local
backend here (no Ray needed); ``"auto"`` or ``"HOST:PORT"`` runs on that Ray cluster."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import platform
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._executor import Executor
from .._pipeline import Pipeline
from .._run_result import RunResult
from ._sampler import ResourceSampler
from .report import BenchmarkReport


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def benchmark_config(value: object) -> dict[str, Any]:
    """A benchmark's configuration (a dataclass instance) as JSON-safe values: paths as
    text, tuples as lists. TypeError for anything but a dataclass instance."""
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        raise TypeError("Benchmark configuration must be a dataclass instance")
    out: dict[str, Any] = _plain(dataclasses.asdict(value))
    return out


def new_run_id() -> str:
    """``YYYYmmdd-HHMMSS-xxxxxxxx`` (UTC, then 8 random hex digits)."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:8]


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def run_benchmark(
    *,
    name: str,
    pipeline: Pipeline,
    source_columns: tuple[Sequence[Any], ...],
    config: Mapping[str, Any],
    artifact_root: str | Path,
    input_batch_size: int | None = None,
    max_active_input_batches: int = 1,
    ray_address: str | None = None,
    ray_init_kwargs: Mapping[str, Any] | None = None,
    profile: bool = True,
    profile_interval_s: float = 1.0,
    run_id: str | None = None,
    extra_metrics: Callable[[RunResult], Mapping[str, Any]] | None = None,
) -> BenchmarkReport:
    """Runs ``pipeline`` once on ``source_columns`` and writes its artifacts under
    ``artifact_root/RUN_ID``; returns the report (its profile with the samples). Nothing is
    written when the run raises."""
    run_id = run_id or new_run_id()
    sampler = ResourceSampler(enabled=profile, interval_s=profile_interval_s)
    sampler.start()
    started = time.perf_counter()
    executor: Executor | None = None
    try:
        init_kwargs = dict(ray_init_kwargs or {})
        if ray_address is not None:
            init_kwargs.setdefault("include_dashboard", False)
        executor = Executor(
            pipeline,
            backend="local" if ray_address is None else "ray",
            address=ray_address,
            ray_init_kwargs=init_kwargs,
        )
        startup_s = time.perf_counter() - started
        result = executor.run(
            *source_columns,
            input_batch_size=input_batch_size,
            max_active_input_batches=max_active_input_batches,
            progress=False,
        )
        end_to_end_s = time.perf_counter() - started
    finally:
        if executor is not None:
            executor.close()
        sampled = sampler.stop()
    try:
        output_rows: int | None = len(result.outputs)
    except TypeError:
        output_rows = None
    metrics: dict[str, Any] = {
        "environment": {
            "python": platform.python_version(),
            "ray": _version("ray"),
            "rayorch_cpp": _version("rayorch-cpp"),
        },
        "backend": "local" if ray_address is None else "ray",
        "input_rows": len(source_columns[0]) if source_columns else 0,
        "output_rows": output_rows,
        "startup_s": round(startup_s, 3),
        "measured_wall_s": round(result.elapsed_s, 3),
        "end_to_end_wall_s": round(end_to_end_s, 3),
        "rpc_count": result.rpc_count,
        "actor_count": result.actor_count,
        "peak_active_input_batches": result.peak_active_input_batches,
        "released_values": result.released_values,
        "calls": [
            {
                "call_index": c.call_index,
                "udf_name": c.udf_name,
                "actor_instances": c.actor_instances,
                "rpcs": c.rpcs,
                "grain_dispatches": c.grain_dispatches,
                "grain_requeues": c.grain_requeues,
                "batch_sizes": list(c.batch_sizes),
            }
            for c in result.calls
        ],
    }
    if extra_metrics is not None:
        metrics.update(extra_metrics(result))
    run_dir = Path(artifact_root).resolve() / run_id
    artifacts = {
        "run_dir": str(run_dir),
        "config": str(run_dir / "config.json"),
        "summary": str(run_dir / "summary.json"),
        "gpu_samples": str(run_dir / "gpu_samples.jsonl"),
    }
    report = BenchmarkReport(
        benchmark=name,
        run_id=run_id,
        config=dict(config),
        metrics=metrics,
        profile=sampled,
        artifacts=artifacts,
        outputs=result.outputs,
    )
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(
        json.dumps(dict(config), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    with (run_dir / "gpu_samples.jsonl").open("w", encoding="utf-8") as f:
        for sample in sampled.get("samples", ()):
            f.write(json.dumps(sample, separators=(",", ":")) + "\n")
    report.write_json(run_dir / "summary.json", include_outputs=True, include_samples=False)
    return report
