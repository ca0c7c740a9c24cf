"""The two-model pipeline's UDFs. vLLM is imported when an actor builds its engine."""

from __future__ import annotations

from typing import Any


class VllmGenerate:
    """Prompts -> completions, one vLLM engine per actor, each call's prompts as one batch."""

    def __init__(
        self,
        model: str,
        *,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        max_tokens: int = 128,
        temperature: float = 0.0,
    ) -> None:
        from vllm import LLM, SamplingParams

        self.llm = LLM(
            model=model,
            tensor_parallel_size=tensor_parallel_size,
            gpu_memory_utilization=gpu_memory_utilization,
        )
        self.sampling = SamplingParams(max_tokens=max_tokens, temperature=temperature)

    def run(self, prompts: list[str]) -> list[str]:
        results = self.llm.generate(prompts, self.sampling)
        return [r.outputs[0].text if r.outputs else "" for r in results]


def refinement_prompt(answer: str) -> str:
    return (
        "Improve the following answer: make it correct, complete and concise.\n\n"
        f"Answer:\n{answer.strip()}\n\nImproved answer:"
    )


class BuildRefinementPrompts:
    """Model A's answers -> the prompts model B refines them with."""

    def run(self, answers: list[str]) -> list[str]:
        return [refinement_prompt(a) for a in answers]


class BuildResults:
    """A prompt and both models' answers -> its record."""

    def run(self, prompts: list[str], first: list[str], refined: list[str]) -> list[dict[str, Any]]:
        return [
            {"prompt": p, "answer_a": a, "answer_b": b}
            for p, a, b in zip(prompts, first, refined, strict=True)
        ]
