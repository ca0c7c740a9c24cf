"""DualVllmBench: the prompts of ``input_path`` (one per line) answered by ``model_a`` and
refined by ``model_b``, two vLLM engines in one pipeline, batched ``batch_size`` prompts at
a time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..._run_result import RunResult
from .._common import BenchmarkBase, check_fields, check_positive_int, lines_of
from .pipeline import STAGES, DualVllmPipeline


def check_generation(max_tokens: object, temperature: object) -> None:
    check_positive_int("max_tokens", max_tokens)
    if not isinstance(temperature, int | float) or isinstance(temperature, bool) or temperature < 0:
        raise ValueError("temperature must be a number >= 0")


def prompt_metrics(result: Any) -> dict[str, Any]:
    prompts = len(result.outputs)
    return {"prompts": prompts, "prompts_per_s": round(prompts / max(result.elapsed_s, 1e-9), 4)}


@dataclass(frozen=True, slots=True)
class DualVllmBench(BenchmarkBase):
    NAME: ClassVar[str] = "dual_vllm"

    input_path: str | Path
    output_dir: str | Path
    model_a: str | Path
    model_b: str | Path
    input_limit: int | None = None
    tensor_parallel_size: int = 1
    batch_size: int = 8
    input_batch_size: int = 32
    max_active_input_batches: int = 1
    gpu_memory_utilization: float = 0.9
    max_tokens: int = 128
    temperature: float = 0.0
    stage_options: Mapping[str, Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        check_fields(
            self,
            paths=("input_path", "output_dir", "model_a", "model_b"),
            positive=("tensor_parallel_size", "batch_size"),
            fractions=("gpu_memory_utilization",),
            limit="input_limit",
            stages=STAGES,
            workload="dual vLLM",
        )
        check_generation(self.max_tokens, self.temperature)

    def source_columns(self) -> tuple[Sequence[Any], ...]:
        return (lines_of(str(self.input_path), self.input_limit),)

    def pipeline(self) -> DualVllmPipeline:
        return DualVllmPipeline(
            model_a=str(self.model_a),
            model_b=str(self.model_b),
            tensor_parallel_size=self.tensor_parallel_size,
            batch_size=self.batch_size,
            gpu_memory_utilization=self.gpu_memory_utilization,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            stage_options=self.stage_options,
        )

    def extra_metrics(self, result: RunResult) -> dict[str, Any]:
        return prompt_metrics(result)
