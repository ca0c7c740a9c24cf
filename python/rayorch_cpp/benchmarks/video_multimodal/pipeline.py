"""The multimodal video topology's Pipeline: two expansions of one video, each processed
and gathered, joined per video."""

from __future__ import annotations

from ... import F, Pipeline, Port, RayModule
from .udfs import CaptionFrame, JoinVideo, SampleFrames, SplitAudio, TranscribeAudio


class VideoMultimodalTopology(Pipeline):
    def __init__(
        self, frames_per_video: int, audio_chunks_per_video: int, workers: int, batch_size: int
    ) -> None:
        options = {"replicas": workers, "batch_size": batch_size, "num_cpus": 0.25}
        self.frames = RayModule(SampleFrames).pre_init(frames_per_video).ray_options(**options)
        self.audio = RayModule(SplitAudio).pre_init(audio_chunks_per_video).ray_options(**options)
        self.caption = RayModule(CaptionFrame).ray_options(**options)
        self.transcribe = RayModule(TranscribeAudio).ray_options(**options)
        self.join = RayModule(JoinVideo).ray_options(**options)

    def forward(self, video: Port) -> Port:
        captions = F.reduce(self.caption(F.expand(self.frames(video))))
        transcripts = F.reduce(self.transcribe(F.expand(self.audio(video))))
        out: Port = self.join(captions, transcripts, video)
        return out
