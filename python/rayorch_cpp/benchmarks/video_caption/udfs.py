"""The video captioning topology's UDFs: made-up frames and captions, so the benchmark
measures the engine's fan-out and fan-in, not a model."""

from __future__ import annotations

from typing import Any


class SampleFrames:
    """A video's number -> its frame ids, in order."""

    def __init__(self, frames_per_video: int) -> None:
        self.frames = frames_per_video

    def run(self, videos: list[int]) -> list[list[str]]:
        return [[f"video{v}/frame{f}" for f in range(self.frames)] for v in videos]


class CaptionFrame:
    """A frame -> its caption (batched across videos, as a captioning model would be)."""

    def run(self, frames: list[str]) -> list[str]:
        return [f"a caption of {frame}" for frame in frames]


class SummarizeVideo:
    """A video's captions, in frame order -> its record."""

    def run(self, captions: list[list[str]], videos: list[int]) -> list[dict[str, Any]]:
        return [
            {"video": v, "frames": len(cs), "summary": " | ".join(cs)}
            for cs, v in zip(captions, videos, strict=True)
        ]
