"""The SGLang-then-vLLM Pipeline: sglang, handoff, vllm, result; each engine's stage in its
own conda environment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import Pipeline, Port, RayModule
from .._common import normalize_stage_options, stage
from .udfs import BuildResults, HandOff, SglangGenerate, VllmGenerate

STAGES = ("sglang", "handoff", "vllm", "result")


class SglangVllmPipeline(Pipeline):
    def __init__(
        self,
        *,
        model: str,
        sglang_env: str,
        vllm_env: str,
        sglang_tensor_parallel_size: int = 1,
        vllm_tensor_parallel_size: int = 1,
        batch_size: int = 8,
        gpu_memory_utilization: float = 0.9,
        max_tokens: int = 128,
        temperature: float = 0.0,
        stage_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        options = normalize_stage_options(stage_options, STAGES, "SGLang/vLLM")
        generation = {
            "gpu_memory_utilization": gpu_memory_utilization,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        light = {"replicas": 1, "batch_size": batch_size, "num_cpus": 0.25}

        def engine(udf: type, name: str, tensor_parallel_size: int, env: str) -> RayModule:
            """A generation stage: one engine per actor on its GPUs, in its own environment."""
            defaults = {
                "replicas": 1,
                "batch_size": batch_size,
                "num_gpus": tensor_parallel_size,
                "runtime_env": {"conda": env},
            }
            return (
                RayModule(udf)
                .pre_init(model, tensor_parallel_size=tensor_parallel_size, **generation)
                .ray_options(**stage(options, name, defaults))
            )

        self.sglang = engine(SglangGenerate, "sglang", sglang_tensor_parallel_size, sglang_env)
        self.handoff = RayModule(HandOff).ray_options(**stage(options, "handoff", light))
        self.vllm = engine(VllmGenerate, "vllm", vllm_tensor_parallel_size, vllm_env)
        self.result = RayModule(BuildResults).ray_options(**stage(options, "result", light))

    def forward(self, prompt: Port) -> Port:
        draft = self.sglang(prompt)
        refined = self.vllm(self.handoff(draft))
        out: Port = self.result(prompt, draft, refined)
        return out
