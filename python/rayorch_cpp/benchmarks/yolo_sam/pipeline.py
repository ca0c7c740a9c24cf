"""The YOLO-then-SAM Pipeline: load, yolo, sam, render, save, metadata."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import Pipeline, Port, RayModule
from .._common import normalize_stage_options, stage
from .udfs import DetectObjects, LoadImage, RenderMasks, SaveImage, SaveMetadata, SegmentObjects

STAGES = ("load", "yolo", "sam", "render", "save", "metadata")


class YoloSamPipeline(Pipeline):
    def __init__(
        self,
        *,
        output_dir: str,
        yolo_model: str,
        sam_checkpoint: str,
        device: str = "cuda",
        yolo_replicas: int = 1,
        sam_replicas: int = 1,
        batch_size: int = 4,
        confidence: float = 0.25,
        sam_model_type: str = "vit_b",
        overlay_alpha: float = 0.35,
        stage_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        options = normalize_stage_options(stage_options, STAGES, "YOLO/SAM")
        gpu = 1 if device.startswith("cuda") else 0
        cpu = {"replicas": 1, "batch_size": batch_size, "num_cpus": 1}
        self.load = RayModule(LoadImage).returns(2).ray_options(**stage(options, "load", cpu))
        yolo = {"replicas": yolo_replicas, "batch_size": batch_size, "num_gpus": gpu}
        self.yolo = (
            RayModule(DetectObjects)
            .pre_init(yolo_model, device=device, confidence=confidence)
            .ray_options(**stage(options, "yolo", yolo))
        )
        sam = {"replicas": sam_replicas, "batch_size": batch_size, "num_gpus": gpu}
        self.sam = (
            RayModule(SegmentObjects)
            .pre_init(sam_checkpoint, model_type=sam_model_type, device=device)
            .ray_options(**stage(options, "sam", sam))
        )
        self.render = (
            RayModule(RenderMasks)
            .pre_init(alpha=overlay_alpha)
            .ray_options(**stage(options, "render", cpu))
        )
        self.save = (
            RayModule(SaveImage).pre_init(output_dir).ray_options(**stage(options, "save", cpu))
        )
        self.metadata = (
            RayModule(SaveMetadata)
            .pre_init(output_dir)
            .ray_options(**stage(options, "metadata", cpu))
        )

    def forward(self, path: Port) -> Port:
        image, info = self.load(path)
        detections = self.yolo(image)
        overlay = self.render(image, self.sam(image, detections))
        out: Port = self.metadata(info, detections, self.save(overlay, info))
        return out
