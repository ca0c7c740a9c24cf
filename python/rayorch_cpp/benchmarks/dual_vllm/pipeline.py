"""The two-model Pipeline: model_a, prompt, model_b, result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import Pipeline, Port, RayModule
from .._common import normalize_stage_options, stage
from .udfs import BuildRefinementPrompts, BuildResults, VllmGenerate

STAGES = ("model_a", "prompt", "model_b", "result")


class DualVllmPipeline(Pipeline):
    def __init__(
        self,
        *,
        model_a: str,
        model_b: str,
        tensor_parallel_size: int = 1,
        batch_size: int = 8,
        gpu_memory_utilization: float = 0.9,
        max_tokens: int = 128,
        temperature: float = 0.0,
        stage_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        options = normalize_stage_options(stage_options, STAGES, "dual vLLM")
        engine = {
            "tensor_parallel_size": tensor_parallel_size,
            "gpu_memory_utilization": gpu_memory_utilization,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        model = {"replicas": 1, "batch_size": batch_size, "num_gpus": tensor_parallel_size}
        light = {"replicas": 1, "batch_size": batch_size, "num_cpus": 0.25}
        self.model_a = (
            RayModule(VllmGenerate)
            .pre_init(model_a, **engine)
            .ray_options(**stage(options, "model_a", model))
        )
        self.prompt = RayModule(BuildRefinementPrompts).ray_options(
            **stage(options, "prompt", light)
        )
        self.model_b = (
            RayModule(VllmGenerate)
            .pre_init(model_b, **engine)
            .ray_options(**stage(options, "model_b", model))
        )
        self.result = RayModule(BuildResults).ray_options(**stage(options, "result", light))

    def forward(self, prompt: Port) -> Port:
        first = self.model_a(prompt)
        refined = self.model_b(self.prompt(first))
        out: Port = self.result(prompt, first, refined)
        return out
