"""SglangVllmBench: the prompts of ``input_path`` drafted by SGLang and refined by vLLM, the
two engines in their own conda environments (``sglang_env``, ``vllm_env``) on one cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..._run_result import RunResult
from .._common import BenchmarkBase, check_fields, lines_of
from ..dual_vllm.benchmark import check_generation, prompt_metrics
from .pipeline import STAGES, SglangVllmPipeline


@dataclass(frozen=True, slots=True)
class SglangVllmBench(BenchmarkBase):
    NAME: ClassVar[str] = "sglang_vllm"

    input_path: str | Path
    output_dir: str | Path
    model: str | Path
    sglang_env: str
    vllm_env: str
    input_limit: int | None = None
    sglang_tensor_parallel_size: int = 1
    vllm_tensor_parallel_size: int = 1
    batch_size: int = 8
    input_batch_size: int = 32
    max_active_input_batches: int = 1
    gpu_memory_utilization: float = 0.9
    max_tokens: int = 128
    temperature: float = 0.0
    stage_options: Mapping[str, Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        for name in ("sglang_env", "vllm_env"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"{name} must name a conda environment")
        check_fields(
            self,
            paths=("input_path", "output_dir", "model"),
            positive=("sglang_tensor_parallel_size", "vllm_tensor_parallel_size", "batch_size"),
            fractions=("gpu_memory_utilization",),
            limit="input_limit",
            stages=STAGES,
            workload="SGLang/vLLM",
        )
        check_generation(self.max_tokens, self.temperature)

    def source_columns(self) -> tuple[Sequence[Any], ...]:
        return (lines_of(str(self.input_path), self.input_limit),)

    def pipeline(self) -> SglangVllmPipeline:
        return SglangVllmPipeline(
            model=str(self.model),
            sglang_env=self.sglang_env,
            vllm_env=self.vllm_env,
            sglang_tensor_parallel_size=self.sglang_tensor_parallel_size,
            vllm_tensor_parallel_size=self.vllm_tensor_parallel_size,
            batch_size=self.batch_size,
            gpu_memory_utilization=self.gpu_memory_utilization,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            stage_options=self.stage_options,
        )

    def extra_metrics(self, result: RunResult) -> dict[str, Any]:
        return prompt_metrics(result)
