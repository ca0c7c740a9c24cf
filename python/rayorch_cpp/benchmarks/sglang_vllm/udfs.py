"""SGLang and vLLM stages. Each engine is imported when its actor is built, inside that
stage's own environment (runtime_env conda), so the two never share a process."""

from __future__ import annotations

from typing import Any

from ..dual_vllm.udfs import BuildResults, VllmGenerate, refinement_prompt


class SglangGenerate:
    """Prompts -> completions, one SGLang engine per actor."""

    def __init__(
        self,
        model: str,
        *,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        max_tokens: int = 128,
        temperature: float = 0.0,
    ) -> None:
        import sglang

        self.engine = sglang.Engine(
            model_path=model,
            tp_size=tensor_parallel_size,
            mem_fraction_static=gpu_memory_utilization,
        )
        self.sampling = {"max_new_tokens": max_tokens, "temperature": temperature}

    def run(self, prompts: list[str]) -> list[str]:
        results: list[dict[str, Any]] = self.engine.generate(prompts, self.sampling)
        return [str(r.get("text", "")) for r in results]


class HandOff:
    """SGLang's drafts -> the prompts vLLM refines them with."""

    def run(self, drafts: list[str]) -> list[str]:
        return [refinement_prompt(d) for d in drafts]


__all__ = ["BuildResults", "HandOff", "SglangGenerate", "VllmGenerate"]
