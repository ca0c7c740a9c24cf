"""YoloSamBench: the images of ``input_path`` (a file or a folder, searched recursively)
through YOLO detection and SAM segmentation; an overlay and a JSON record per image in
``output_dir``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..._run_result import RunResult
from .._common import BenchmarkBase, check_fields, require_path
from .pipeline import STAGES, YoloSamPipeline

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")


def image_inputs(input_path: str, limit: int | None) -> list[str]:
    path = Path(input_path)
    if path.is_dir():
        found = sorted(
            str(p) for p in path.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
        )
    elif path.is_file():
        found = [str(path)]
    else:
        raise FileNotFoundError(f"input_path must be an image or a folder of images: {input_path}")
    found = found[:limit] if limit is not None else found
    if not found:
        raise ValueError(f"no images found under {input_path}")
    return found


@dataclass(frozen=True, slots=True)
class YoloSamBench(BenchmarkBase):
    NAME: ClassVar[str] = "yolo_sam"

    input_path: str | Path
    output_dir: str | Path
    yolo_model: str | Path
    sam_checkpoint: str | Path
    input_limit: int | None = None
    device: str = "cuda"
    yolo_replicas: int = 1
    sam_replicas: int = 1
    batch_size: int = 4
    input_batch_size: int = 16
    max_active_input_batches: int = 2
    confidence: float = 0.25
    sam_model_type: str = "vit_b"
    overlay_alpha: float = 0.35
    stage_options: Mapping[str, Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        check_fields(
            self,
            paths=("input_path", "output_dir", "yolo_model", "sam_checkpoint"),
            positive=("yolo_replicas", "sam_replicas", "batch_size"),
            fractions=("confidence", "overlay_alpha"),
            limit="input_limit",
            stages=STAGES,
            workload="YOLO/SAM",
        )

    def source_columns(self) -> tuple[Sequence[Any], ...]:
        images = image_inputs(str(self.input_path), self.input_limit)
        require_path("YOLO model", str(self.yolo_model))
        require_path("SAM checkpoint", str(self.sam_checkpoint))
        return (images,)

    def pipeline(self) -> YoloSamPipeline:
        return YoloSamPipeline(
            output_dir=str(self.output_dir),
            yolo_model=str(self.yolo_model),
            sam_checkpoint=str(self.sam_checkpoint),
            device=self.device,
            yolo_replicas=self.yolo_replicas,
            sam_replicas=self.sam_replicas,
            batch_size=self.batch_size,
            confidence=self.confidence,
            sam_model_type=self.sam_model_type,
            overlay_alpha=self.overlay_alpha,
            stage_options=self.stage_options,
        )

    def extra_metrics(self, result: RunResult) -> dict[str, Any]:
        return {"images": len(result.outputs)}
