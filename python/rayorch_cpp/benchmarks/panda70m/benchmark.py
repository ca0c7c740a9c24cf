"""VideoPanda70MBench: a Panda-70M style manifest (JSON lines ``{"video", "clips": [[start_s,
end_s], ...]}``) captioned clip by clip by a vision-language teacher on vLLM;
``sample_multiplier`` repeats the manifest to scale a run up."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..._run_result import RunResult
from .._common import BenchmarkBase, check_fields, require_path
from .pipeline import STAGES, Panda70MPipeline

DEFAULT_MODEL = os.environ.get("RAYORCH_PANDA70M_MODEL", "./models/Qwen2.5-VL-3B-Instruct")


def sources(manifest: str, limit: int | None, multiplier: int) -> list[dict[str, Any]]:
    path = Path(manifest)
    if not path.is_file():
        raise FileNotFoundError(f"manifest does not exist: {manifest}")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row, dict) or "video" not in row:
            raise ValueError(f"{manifest}, line {number}: a source needs a 'video' path")
        video = Path(row["video"])
        if not video.is_absolute():
            row["video"] = str((path.parent / video).resolve())
        rows.append(row)
    rows = rows[:limit] if limit is not None else rows
    if not rows:
        raise ValueError(f"no sources in {manifest}")
    return rows * multiplier


@dataclass(frozen=True, slots=True)
class VideoPanda70MBench(BenchmarkBase):
    NAME: ClassVar[str] = "video_panda70m"

    manifest: str | Path
    output_dir: str | Path
    model: str | Path = DEFAULT_MODEL
    input_limit: int | None = None
    sample_multiplier: int = 1
    teacher_batch_size: int = 8
    teacher_replicas: int = 1
    decode_replicas: int = 2
    decode_backend: str = "opencv"
    long_edge: int = 448
    input_batch_size: int = 2
    max_active_input_batches: int = 2
    gpu_memory_utilization: float = 0.9
    stage_options: Mapping[str, Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        check_fields(
            self,
            paths=("manifest", "output_dir", "model"),
            positive=(
                "sample_multiplier",
                "teacher_batch_size",
                "teacher_replicas",
                "decode_replicas",
                "long_edge",
            ),
            fractions=("gpu_memory_utilization",),
            limit="input_limit",
            stages=STAGES,
            workload="Panda-70M",
        )
        if self.decode_backend != "opencv":
            raise ValueError("decode_backend must be 'opencv'")

    def source_columns(self) -> tuple[Sequence[Any], ...]:
        rows = sources(str(self.manifest), self.input_limit, self.sample_multiplier)
        require_path("teacher model", str(self.model))
        return (rows,)

    def pipeline(self) -> Panda70MPipeline:
        return Panda70MPipeline(
            model=str(self.model),
            output_dir=str(self.output_dir),
            teacher_batch_size=self.teacher_batch_size,
            teacher_replicas=self.teacher_replicas,
            decode_replicas=self.decode_replicas,
            decode_backend=self.decode_backend,
            long_edge=self.long_edge,
            gpu_memory_utilization=self.gpu_memory_utilization,
            stage_options=self.stage_options,
        )

    def extra_metrics(self, result: RunResult) -> dict[str, Any]:
        clips = sum(o["clips"] for o in result.outputs if isinstance(o, dict))
        return {"clips": clips, "clips_per_s": round(clips / max(result.elapsed_s, 1e-9), 4)}
