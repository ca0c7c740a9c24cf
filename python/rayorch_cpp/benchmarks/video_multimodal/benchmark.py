"""VideoMultimodalTopologyBench: ``video_count`` videos, each one's ``frames_per_video``
frames captioned and its ``audio_chunks_per_video`` audio chunks transcribed, joined per
video, with no model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..._run_result import RunResult
from .._common import BenchmarkBase, check_fields
from .pipeline import VideoMultimodalTopology


@dataclass(frozen=True, slots=True)
class VideoMultimodalTopologyBench(BenchmarkBase):
    NAME: ClassVar[str] = "video_multimodal_topology"

    output_dir: str | Path = "."
    video_count: int = 2
    frames_per_video: int = 4
    audio_chunks_per_video: int = 3
    workers: int = 2
    batch_size: int = 4
    input_batch_size: int = 1
    max_active_input_batches: int = 2

    def __post_init__(self) -> None:
        positive = ("video_count", "frames_per_video", "audio_chunks_per_video", "workers")
        check_fields(self, paths=("output_dir",), positive=(*positive, "batch_size"))

    def source_columns(self) -> tuple[Sequence[Any], ...]:
        return (list(range(self.video_count)),)

    def pipeline(self) -> VideoMultimodalTopology:
        return VideoMultimodalTopology(
            self.frames_per_video, self.audio_chunks_per_video, self.workers, self.batch_size
        )

    def extra_metrics(self, result: RunResult) -> dict[str, Any]:
        return {
            "frames": sum(o["frames"] for o in result.outputs),
            "audio_chunks": sum(o["audio_chunks"] for o in result.outputs),
        }
