"""VideoCaptionTopologyBench: ``video_count`` videos of ``frames_per_video`` frames, each
frame captioned and the captions gathered per video, with no model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..._run_result import RunResult
from .._common import BenchmarkBase, check_fields
from .pipeline import VideoCaptionTopology


@dataclass(frozen=True, slots=True)
class VideoCaptionTopologyBench(BenchmarkBase):
    NAME: ClassVar[str] = "video_caption_topology"

    output_dir: str | Path = "."
    video_count: int = 3
    frames_per_video: int = 4
    workers: int = 2
    batch_size: int = 4
    input_batch_size: int = 1
    max_active_input_batches: int = 3

    def __post_init__(self) -> None:
        check_fields(
            self,
            paths=("output_dir",),
            positive=("video_count", "frames_per_video", "workers", "batch_size"),
        )

    def source_columns(self) -> tuple[Sequence[Any], ...]:
        return (list(range(self.video_count)),)

    def pipeline(self) -> VideoCaptionTopology:
        return VideoCaptionTopology(self.frames_per_video, self.workers, self.batch_size)

    def extra_metrics(self, result: RunResult) -> dict[str, Any]:
        return {"frames": sum(o["frames"] for o in result.outputs)}
