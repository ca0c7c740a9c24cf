"""The multimodal video topology's UDFs: made-up frames, audio chunks, captions and
transcripts, so the benchmark measures two fan-outs joined per parent, not a model."""

from __future__ import annotations

from typing import Any


class SampleFrames:
    def __init__(self, frames_per_video: int) -> None:
        self.frames = frames_per_video

    def run(self, videos: list[int]) -> list[list[str]]:
        return [[f"video{v}/frame{f}" for f in range(self.frames)] for v in videos]


class SplitAudio:
    def __init__(self, chunks_per_video: int) -> None:
        self.chunks = chunks_per_video

    def run(self, videos: list[int]) -> list[list[str]]:
        return [[f"video{v}/audio{a}" for a in range(self.chunks)] for v in videos]


class CaptionFrame:
    def run(self, frames: list[str]) -> list[str]:
        return [f"a caption of {frame}" for frame in frames]


class TranscribeAudio:
    def run(self, chunks: list[str]) -> list[str]:
        return [f"words of {chunk}" for chunk in chunks]


class JoinVideo:
    """A video's captions and transcripts, each in order -> its record."""

    def run(
        self, captions: list[list[str]], transcripts: list[list[str]], videos: list[int]
    ) -> list[dict[str, Any]]:
        return [
            {
                "video": v,
                "frames": len(cs),
                "audio_chunks": len(ts),
                "captions": cs,
                "transcript": ts,
            }
            for cs, ts, v in zip(captions, transcripts, videos, strict=True)
        ]
