"""The Panda-70M captioning Pipeline: expand, decode, teacher, select, summarize."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import F, Pipeline, Port, RayModule
from .._common import normalize_stage_options, stage
from .udfs import DecodeFrames, ExpandClips, SelectCaption, SummarizeSource, TeacherCaption

STAGES = ("expand", "decode", "teacher", "select", "summarize")


class Panda70MPipeline(Pipeline):
    def __init__(
        self,
        *,
        model: str,
        output_dir: str,
        teacher_batch_size: int = 8,
        teacher_replicas: int = 1,
        decode_replicas: int = 2,
        decode_backend: str = "opencv",
        long_edge: int = 448,
        gpu_memory_utilization: float = 0.9,
        stage_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        options = normalize_stage_options(stage_options, STAGES, "Panda-70M")
        light = {"replicas": 1, "batch_size": 8, "num_cpus": 0.25}
        decode = {"replicas": decode_replicas, "batch_size": 2, "num_cpus": 1}
        teacher = {"replicas": teacher_replicas, "batch_size": teacher_batch_size, "num_gpus": 1}
        self.expand = RayModule(ExpandClips).ray_options(**stage(options, "expand", light))
        self.decode = (
            RayModule(DecodeFrames)
            .pre_init(long_edge=long_edge, backend=decode_backend)
            .ray_options(**stage(options, "decode", decode))
        )
        self.teacher = (
            RayModule(TeacherCaption)
            .pre_init(model, gpu_memory_utilization=gpu_memory_utilization)
            .ray_options(**stage(options, "teacher", teacher))
        )
        self.select = RayModule(SelectCaption).ray_options(**stage(options, "select", light))
        self.summarize = (
            RayModule(SummarizeSource)
            .pre_init(output_dir=output_dir)
            .ray_options(**stage(options, "summarize", light))
        )

    def forward(self, source: Port) -> Port:
        clip = F.expand(self.expand(source))
        caption = self.select(clip, self.teacher(self.decode(clip)))
        out: Port = self.summarize(F.reduce(caption), source)
        return out
