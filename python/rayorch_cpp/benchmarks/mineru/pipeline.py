"""MinerU's Pipeline: render (CPU), read (GPU, batched across documents), gather each
document's pages with their contents in order, assemble its Markdown."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import F, Pipeline, Port, RayModule
from .._common import normalize_stage_options, stage
from .udfs import AssembleMarkdown, PdfStem, ReadPage, RenderPdfPages

STAGES = ("render", "ocr", "metadata", "assemble")


class MinerUPipeline(Pipeline):
    def __init__(
        self,
        *,
        model: str,
        output_dir: str,
        num_gpus: int = 1,
        batch_size: int = 64,
        gpu_memory_utilization: float = 0.8,
        render_dpi: int = 200,
        ocr_replicas: int | None = None,
        gpus_per_ocr_actor: float = 1.0,
        render_replicas: int | None = None,
        assemble_replicas: int | None = None,
        stage_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        options = normalize_stage_options(stage_options, STAGES, "MinerU")
        render = {"replicas": render_replicas or num_gpus, "batch_size": 1, "num_cpus": 1}
        ocr = {
            "replicas": ocr_replicas or num_gpus,
            "batch_size": batch_size,
            "num_gpus": gpus_per_ocr_actor,
            "num_cpus": 1,
        }
        metadata = {"replicas": 1, "batch_size": 32, "num_cpus": 1}
        assemble = {"replicas": assemble_replicas or num_gpus, "batch_size": 4, "num_cpus": 1}
        self.render = (
            RayModule(RenderPdfPages)
            .pre_init(dpi=render_dpi)
            .ray_options(**stage(options, "render", render))
        )
        self.ocr = (
            RayModule(ReadPage)
            .pre_init(model, gpu_memory_utilization)
            .ray_options(**stage(options, "ocr", ocr))
        )
        self.metadata = RayModule(PdfStem).ray_options(**stage(options, "metadata", metadata))
        self.assemble = (
            RayModule(AssembleMarkdown)
            .pre_init(output_dir)
            .ray_options(**stage(options, "assemble", assemble))
        )

    def forward(self, pdf: Port) -> Port:
        page = F.expand(self.render(pdf))
        content = self.ocr(page)
        contents, pages = F.reduce_aligned(content, page, members=content)
        out: Port = self.assemble(contents, pages, self.metadata(pdf))
        return out
