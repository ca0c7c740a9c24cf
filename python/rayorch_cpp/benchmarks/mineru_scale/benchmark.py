"""MinerUScaleBench: MinerU over many inputs (PDFs, folders of PDFs, or ``.txt`` lists of PDF
paths), with pools sized for a large cluster: ``render_replicas`` CPU actors, ``ocr_replicas``
vLLM actors of ``gpus_per_ocr_actor`` GPU each, ``assemble_replicas`` writers. Its artifacts
go to ``artifact_dir`` (default ``OUTPUT_DIR/.rayorch-benchmark``; for an ``hdfs://`` output,
``results/mineru-scale`` in the working folder)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..._run_result import RunResult
from .._common import (
    BenchmarkBase,
    check_fields,
    pdf_inputs,
    require_path,
    resolved_path,
)
from ..mineru.benchmark import page_metrics
from .pipeline import STAGES, MinerUPipeline

DEFAULT_MODEL = os.environ.get("RAYORCH_MINERU_MODEL", "./models/MinerU2.5-2509-1.2B")


def _inputs(paths: tuple[str, ...], limit: int | None) -> list[str]:
    found: list[str] = []
    for path in paths:
        if path.endswith(".txt"):
            listed = Path(path).read_text(encoding="utf-8").splitlines()
            found += [line.strip() for line in listed if line.strip()]
        else:
            found += pdf_inputs(path, None)
    if limit is not None:
        found = found[:limit]
    if not found:
        raise ValueError(f"no PDF inputs found under {', '.join(paths)}")
    return found


@dataclass(frozen=True, slots=True)
class MinerUScaleBench(BenchmarkBase):
    NAME: ClassVar[str] = "mineru_scale"

    input_paths: tuple[str | Path, ...]
    output_dir: str | Path
    model: str | Path = DEFAULT_MODEL
    artifact_dir: str | Path | None = None
    input_limit: int | None = None
    render_replicas: int = 256
    ocr_replicas: int = 128
    assemble_replicas: int = 64
    batch_size: int = 64
    input_batch_size: int = 24
    max_active_input_batches: int = 24
    gpu_memory_utilization: float = 0.32
    gpus_per_ocr_actor: float = 0.5
    render_dpi: int = 200
    stage_options: Mapping[str, Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        paths = (
            (self.input_paths,) if isinstance(self.input_paths, str | Path) else self.input_paths
        )
        if not paths:
            raise ValueError("input_paths must name at least one input")
        object.__setattr__(self, "input_paths", tuple(resolved_path(p) for p in paths))
        remote = str(self.output_dir).startswith("hdfs://")
        output = str(self.output_dir) if remote else resolved_path(self.output_dir)
        object.__setattr__(self, "output_dir", output)
        if self.artifact_dir is None:
            default = (
                Path.cwd() / "results" / "mineru-scale"
                if remote
                else Path(output) / ".rayorch-benchmark"
            )
            object.__setattr__(self, "artifact_dir", str(default))
        else:
            object.__setattr__(self, "artifact_dir", resolved_path(self.artifact_dir))
        check_fields(
            self,
            paths=("model",),
            positive=(
                "render_replicas",
                "ocr_replicas",
                "assemble_replicas",
                "batch_size",
                "render_dpi",
            ),
            fractions=("gpu_memory_utilization",),
            limit="input_limit",
            stages=STAGES,
            workload="MinerU",
        )
        if not isinstance(self.gpus_per_ocr_actor, int | float) or self.gpus_per_ocr_actor <= 0:
            raise ValueError("gpus_per_ocr_actor must be positive")

    def artifact_root(self) -> str:
        return str(self.artifact_dir)

    def source_columns(self) -> tuple[Sequence[Any], ...]:
        pdfs = _inputs(tuple(str(p) for p in self.input_paths), self.input_limit)
        require_path("MinerU model", str(self.model))
        return (pdfs,)

    def pipeline(self) -> MinerUPipeline:
        return MinerUPipeline(
            model=str(self.model),
            output_dir=str(self.output_dir),
            batch_size=self.batch_size,
            gpu_memory_utilization=self.gpu_memory_utilization,
            render_dpi=self.render_dpi,
            ocr_replicas=self.ocr_replicas,
            gpus_per_ocr_actor=self.gpus_per_ocr_actor,
            render_replicas=self.render_replicas,
            assemble_replicas=self.assemble_replicas,
            stage_options=self.stage_options,
        )

    def extra_metrics(self, result: RunResult) -> dict[str, Any]:
        return page_metrics(result)
