"""MinerUBench: a folder (or file) of PDFs to Markdown with MinerU2.5 on vLLM, ``num_gpus``
OCR actors of one GPU each, pages batched ``batch_size`` at a time across documents."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..._run_result import RunResult
from .._common import BenchmarkBase, check_fields, pdf_inputs, require_path
from .pipeline import STAGES, MinerUPipeline

DEFAULT_MODEL = os.environ.get("RAYORCH_MINERU_MODEL", "./models/MinerU2.5-2509-1.2B")


def page_metrics(result: Any) -> dict[str, Any]:
    """Pages read and pages per second of the measured run."""
    pages = sum(o["pages"] for o in result.outputs if isinstance(o, dict))
    return {"pages": pages, "pages_per_s": round(pages / max(result.elapsed_s, 1e-9), 4)}


@dataclass(frozen=True, slots=True)
class MinerUBench(BenchmarkBase):
    NAME: ClassVar[str] = "mineru"

    input_path: str | Path
    output_dir: str | Path
    model: str | Path = DEFAULT_MODEL
    input_limit: int | None = 4
    num_gpus: int = 1
    batch_size: int = 64
    input_batch_size: int = 24
    max_active_input_batches: int = 3
    gpu_memory_utilization: float = 0.8
    render_dpi: int = 200
    stage_options: Mapping[str, Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        check_fields(
            self,
            paths=("input_path", "output_dir", "model"),
            positive=("num_gpus", "batch_size", "render_dpi"),
            fractions=("gpu_memory_utilization",),
            limit="input_limit",
            stages=STAGES,
            workload="MinerU",
        )

    def pipeline(self) -> MinerUPipeline:
        return MinerUPipeline(
            model=str(self.model),
            output_dir=str(self.output_dir),
            num_gpus=self.num_gpus,
            batch_size=self.batch_size,
            gpu_memory_utilization=self.gpu_memory_utilization,
            render_dpi=self.render_dpi,
            stage_options=self.stage_options,
        )

    def source_columns(self) -> tuple[Sequence[Any], ...]:
        pdfs = pdf_inputs(str(self.input_path), self.input_limit)
        require_path("MinerU model", str(self.model))
        return (pdfs,)

    def extra_metrics(self, result: RunResult) -> dict[str, Any]:
        return page_metrics(result)
